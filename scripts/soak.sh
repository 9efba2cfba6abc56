#!/usr/bin/env bash
# Long stress runs: the pool's stress tests at 10x the CI iterations, and the
# RSS check after a load spike.
set -euo pipefail
cd "$(dirname "$0")/.."
FALCONET_STRESS_ITERS="${FALCONET_STRESS_ITERS:-10000000}" \
  cargo test -p falconet-pool --test stress --release -- --nocapture
cargo run --release -p falconet-benches --bin pool_rss
