#!/usr/bin/env bash
# The loom models of every crate, in release mode with the crate's own cfg.
# Bound 3 by default (the long run); scripts/test.sh and CI use 2, with
# LOOM_QUICK=1: the crates' own `loom` tests, not the server's unit models.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/crates.sh
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
for entry in "${LOOM_CRATES[@]}"; do
  crate="${entry%%:*}" cfg="${entry#*:}"
  # One target dir per cfg: a cfg change rebuilds every dependency.
  RUSTFLAGS="--cfg $cfg" CARGO_TARGET_DIR="target/loom-$cfg" \
    cargo test -p "$crate" --test loom --release
done
[[ "${LOOM_QUICK:-0}" == 1 ]] && exit 0
for entry in "${LOOM_LIB_CRATES[@]}"; do
  crate="${entry%%:*}" cfg="${entry#*:}"
  RUSTFLAGS="--cfg $cfg" CARGO_TARGET_DIR="target/loom-$cfg" \
    cargo test -p "$crate" --lib --release loom_models
done
