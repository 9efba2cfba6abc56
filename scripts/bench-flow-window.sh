#!/usr/bin/env bash
# The connection window's share of server time, CAS against parking_lot
# (issue 14): the falconet binary built twice, once as it is (falconet-flow's
# CAS InputWindow as every connection's receive window) and once with
# `--cfg falconet_server_flow_locked` (its parking_lot twin), each serving
# h2load's 1 MiB uploads (POST /echo, -c16 -m32 -w16 -W16) with 4
# application threads reading the bodies and releasing the windows.
# Alternating builds, ROUNDS rounds of SECONDS each, in two placements:
# `pinned` (server on core 0, h2load on core 1, as bench-server.sh --h2) and
# `spread` (server free on both cores, h2load on core 1: the application
# threads and the worker really share the window's cache line). Per run:
# uploads per server CPU-second, and from `perf record -e cpu-clock` the
# share of the server's samples in the window code (falconet-flow's input
# windows, StreamInput, and parking_lot for the twin).
#
#   scripts/bench-flow-window.sh [seconds, default 6] [rounds, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-6}
ROUNDS=${2:-3}

source scripts/h2load-env.sh
need_nghttp2
make_upload
if ! command -v perf >/dev/null 2>&1; then
  echo "perf is needed" >&2
  exit 1
fi
cargo build --release -q -p falconet-server --bin falconet
RUSTFLAGS="--cfg falconet_server_flow_locked" CARGO_TARGET_DIR=target/flow-locked \
  cargo build --release -q -p falconet-server --bin falconet
declare -A BIN=([cas]=target/release/falconet [parking_lot]=target/flow-locked/release/falconet)
PERF=$(mktemp -d)
trap 'rm -rf "$PERF"' EXIT

echo "# bench-flow-window: $ROUNDS rounds x $SECONDS_PER_RUN s, 4 application threads, $(lscpu | sed -n 's/^Model name: *//p')"
echo "| round | placement | window | uploads/s | uploads per server CPU-s | window code, % of server samples |"
echo "|---:|---|---|---:|---:|---:|"
port=19800
for round in $(seq "$ROUNDS"); do
  for placement in pinned spread; do
    for window in cas parking_lot; do
      port=$((port + 1))
      cores=0
      [ "$placement" = spread ] && cores=0,1
      taskset -c "$cores" "${BIN[$window]}" --addr "127.0.0.1:$port" --workers 1 --app-threads 4 >/dev/null 2>&1 &
      pid=$!
      sleep 0.5
      taskset -c 1 h2load -t1 -D 1 -c16 -m32 -w16 -W16 -d "$UPLOAD" "http://127.0.0.1:$port/echo" >/dev/null
      ticks0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
      perf record -q -e cpu-clock -p "$pid" -o "$PERF/$window.data" -- sleep "$SECONDS_PER_RUN" >/dev/null 2>&1 &
      perf_pid=$!
      out=$(taskset -c 1 h2load -t1 -D "$SECONDS_PER_RUN" -c16 -m32 -w16 -W16 -d "$UPLOAD" "http://127.0.0.1:$port/echo")
      ticks1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
      wait "$perf_pid" || true
      kill "$pid"
      wait "$pid" 2>/dev/null || true
      done_n=$(echo "$out" | sed -n 's/.* \([0-9]*\) succeeded.*/\1/p')
      if [ -z "$done_n" ] || [ "$done_n" = 0 ]; then
        echo "  !! h2load: $(echo "$out" | grep -E 'requests:|finished|error' | tr '\n' ' ')"
      fi
      share=$(perf report -i "$PERF/$window.data" --no-children --sort sym --stdio 2>/dev/null |
        grep -E '^ +[0-9]' |
        grep -E 'falconet_flow|InputWindow|StreamInput|BodyFlow|parking_lot|lock_slow|unlock_slow' |
        awk '{s += $1} END {printf "%.2f", s}')
      hz=$(getconf CLK_TCK)
      awk -v r="$round" -v p="$placement" -v w="$window" -v n="$done_n" -v s="$SECONDS_PER_RUN" \
        -v t="$((ticks1 - ticks0))" -v hz="$hz" -v sh="$share" \
        'BEGIN {printf "| %d | %s | %s | %.0f | %.0f | %s |\n", r, p, w, n / s, n / (t / hz), sh}'
    done
  done
done
