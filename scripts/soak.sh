#!/usr/bin/env bash
# Long stress runs: the pool's stress tests at 10x the CI iterations, the
# pipe's two-thread transfer at 5x the CI bytes (50 GiB), and the RSS check
# after a load spike.
set -euo pipefail
cd "$(dirname "$0")/.."
FALCONET_STRESS_ITERS="${FALCONET_STRESS_ITERS:-10000000}" \
  cargo test -p falconet-pool --test stress --release -- --nocapture
FALCONET_PIPE_STRESS_BYTES="${FALCONET_PIPE_STRESS_BYTES:-53687091200}" \
  cargo test -p falconet-pipe --test stress --release -- --nocapture
cargo run --release -p falconet-benches --bin pool_rss
