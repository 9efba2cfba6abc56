#!/usr/bin/env bash
# The loom models of every crate, in release mode with the crate's own cfg.
# Bound 3 by default (the long run); scripts/test.sh and CI use 2.
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
RUSTFLAGS="--cfg falconet_pool_loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p falconet-pool --test loom --release
