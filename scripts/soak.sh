#!/usr/bin/env bash
# Long stress runs: the pool's stress tests at 10x the CI iterations, the
# pipe's two-thread transfer at 5x the CI bytes (50 GiB), and the RSS check
# after a load spike; the registry's four-thread churn with a sweep at 12x
# the CI operations, and its RSS after a spike of a million connections;
# the server's six-client stress at 50x the CI rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
FALCONET_STRESS_ITERS="${FALCONET_STRESS_ITERS:-10000000}" \
  cargo test -p falconet-pool --test stress --release -- --nocapture
FALCONET_PIPE_STRESS_BYTES="${FALCONET_PIPE_STRESS_BYTES:-53687091200}" \
  cargo test -p falconet-pipe --test stress --release -- --nocapture
cargo run --release -p falconet-benches --bin pool_rss
FALCONET_REGISTRY_STRESS_OPS="${FALCONET_REGISTRY_STRESS_OPS:-50000000}" \
  cargo test -p falconet-registry --test stress --release -- --nocapture
cargo run --release -p falconet-benches --bin registry_rss
FALCONET_SERVER_STRESS_ROUNDS="${FALCONET_SERVER_STRESS_ROUNDS:-100000}" \
  cargo test -p falconet-server --test stress --release -- --nocapture
