#!/usr/bin/env bash
# The benchmark report: runs the criterion comparisons (falconet, its
# lock-based twins and published peers, in one run), prints the tables and
# renders the plots (docs/img/*.svg).
#   scripts/bench.sh            all benches
#   scripts/bench.sh pool       one bench target (pool, block_layout, pipe, flow, registry)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- pool block_layout pipe flow registry
for target in "$@"; do
  cargo bench -p falconet-benches --bench "$target"
done
cargo run --release -q -p falconet-benches --bin pool_rss
cargo run --release -q -p falconet-benches --bin pool_interleaved
cargo run --release -q -p falconet-benches --bin pipe_interleaved
cargo run --release -q -p falconet-benches --bin pipe_read_space
cargo run --release -q -p falconet-benches --bin flow_harness
cargo run --release -q -p falconet-benches --bin registry_mix
cargo run --release -q -p falconet-benches --bin registry_sweep
cargo run --release -q -p falconet-benches --bin registry_rss
python3 scripts/bench_report.py target/criterion
# SVG plots of the same results into docs/img/ (criterion groups, the flow
# harness's percentiles, and the server runs if bench-server.sh ran).
cargo run --release -q -p falconet-benches --bin plots
