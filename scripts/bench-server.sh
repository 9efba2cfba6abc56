#!/usr/bin/env bash
# The HTTP server benchmark: falconet against a minimal hyper 1.x server,
# may_minihttp and the floor (an epoll loop that parses nothing and answers
# canned bytes; bins in benches/), the server pinned to core 0 and wrk to
# core 1, servers alternating within each round. Reports requests/s and
# requests per second of server CPU (utime+stime), medians over the rounds,
# with the ratios against each peer.
#
#   scripts/bench-server.sh [seconds per run, default 10] [rounds, default 3]
#   scripts/bench-server.sh --soak [minutes, default 10]
#       falconet's RSS sampled every 30 s under full load.
#   scripts/bench-server.sh --accept [seconds, default 5]
#       Accept::ReusePort against Accept::Shared, two workers.
#   scripts/bench-server.sh --app [seconds, default 10] [rounds, default 3]
#       The application side: the native binary against the same binary
#       built from FALCONET_BEFORE (default f451e88, before the application
#       side), axum on falconet (examples/axum_hello) against the same
#       Router on hyper (axum::serve), POST /echo of 1 MiB bodies, and the
#       RSS of 10,000 pending /delay requests.
#   scripts/bench-server.sh --h2 [seconds, default 10] [rounds, default 3]
#       HTTP/2 (h2c): falconet against hyper's http2 server (bin
#       hyper_h2_server) and nghttpd, with h2load: plaintext at -c16 -m32,
#       and 1 MiB uploads echoed back with the windows binding (-w16 -W16),
#       by the native binary (an application thread reads each body) and by
#       the axum example (the worker polls the echoed body).
#       With FALCONET_BEFORE=COMMIT set, the binary built from COMMIT runs
#       beside today's in every HTTP/2 load (a regression check).
#   python3 scripts/bench_server.py --h2 SECONDS ROUNDS "1 MiB responses"
#       Only the HTTP/2 loads whose name contains the last argument (after
#       --h2 built the servers; FALCONET_BEFORE set adds the binary it
#       built).
#   python3 scripts/bench_server.py --h2-soak [minutes, default 10]
#       falconet's RSS under h2load, sampled every 30 s (after --h2 built
#       the servers).
#   python3 scripts/bench_server.py --echo [seconds, default 5] [rounds]
#       Only the 1 MiB echo, once --app has built the servers.
#   python3 scripts/bench_server.py --frames [seconds, default 3] [rounds]
#       Bodies of small frames (1 B to 16 KiB): axum on falconet against
#       axum on hyper over HTTP/1.1 and hyper's HTTP/2 server over HTTP/2,
#       once --app and --h2 have built the servers (and installed h2load).
# The default run and --app also render SVG plots into docs/img/.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v wrk >/dev/null 2>&1; then
  sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get install -y wrk || { sudo_if_needed apt-get update && sudo_if_needed apt-get install -y wrk; }
fi
cargo build --release -q -p falconet-server --bin falconet
# The binary as at commit $1, into target/before/release/falconet.
build_before() {
  local worktree="target/before-src"
  rm -rf "$worktree"
  git worktree prune
  git worktree add --detach -f "$worktree" "$1" >/dev/null
  # Its own target dir (see docs/conventions.md: two trees must not share one).
  (cd "$worktree" && CARGO_TARGET_DIR=../before cargo build --release -q -p falconet-server --bin falconet)
  git worktree remove --force "$worktree"
}
if [ "${1:-}" = --h2 ]; then
  source scripts/h2load-env.sh
  need_nghttp2
  cargo build --release -q -p falconet-benches --bin hyper_h2_server
  cargo build --release -q -p falconet-server --features tower --example axum_hello
  if [ -n "${FALCONET_BEFORE:-}" ]; then
    build_before "$FALCONET_BEFORE"
  fi
  exec python3 scripts/bench_server.py "$@"
fi
cargo build --release -q -p falconet-benches --bin hyper_server --bin may_minihttp_server --bin floor_server
if [ "${1:-}" = --app ]; then
  cargo build --release -q -p falconet-server --features tower --example axum_hello
  cargo build --release -q -p falconet-benches --bin axum_server
  build_before "${FALCONET_BEFORE:-f451e88}"
fi
python3 scripts/bench_server.py "$@"
# The plots: docs/img/server.svg (the default run), docs/img/server-app.svg (--app).
cargo run --release -q -p falconet-benches --bin plots
