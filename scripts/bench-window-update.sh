#!/usr/bin/env bash
# When should a receive window send WINDOW_UPDATE? (issue 14) The falconet
# binary built with each share of its 1 MiB windows consumed that triggers
# an update: 1/2 (h2's rule, the default), 1/4, 1/16 and 1/256 (4 KiB, Go's
# old fixed threshold), via `--cfg falconet_server_update_divisor="N"`.
# Each serves h2load's 1 MiB uploads, counted on the worker (POST /upload)
# and echoed by an application thread (POST /echo), -c16 -m32; server on
# core 0, h2load on core 1, variants alternating within each round.
# Reports uploads per second and per server CPU-second.
#
#   scripts/bench-window-update.sh [seconds, default 5] [rounds, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-5}
ROUNDS=${2:-3}

source scripts/h2load-env.sh
need_nghttp2
make_upload
declare -A BIN
for divisor in 2 4 16 256; do
  if [ "$divisor" = 2 ]; then
    cargo build --release -q -p falconet-server --bin falconet
    BIN[$divisor]=target/release/falconet
  else
    RUSTFLAGS="--cfg falconet_server_update_divisor=\"$divisor\"" CARGO_TARGET_DIR="target/update-$divisor" \
      cargo build --release -q -p falconet-server --bin falconet
    BIN[$divisor]=target/update-$divisor/release/falconet
  fi
done

echo "# bench-window-update: $ROUNDS rounds x $SECONDS_PER_RUN s, $(lscpu | sed -n 's/^Model name: *//p')"
echo "| round | load | update after | uploads/s | uploads per server CPU-s |"
echo "|---:|---|---|---:|---:|"
port=19850
hz=$(getconf CLK_TCK)
for round in $(seq "$ROUNDS"); do
  for path in /upload /echo; do
    for divisor in 2 4 16 256; do
      port=$((port + 1))
      taskset -c 0 "${BIN[$divisor]}" --addr "127.0.0.1:$port" --workers 1 >/dev/null 2>&1 &
      pid=$!
      sleep 0.4
      args=(-t1 -c16 -m32 -d "$UPLOAD")
      taskset -c 1 h2load -D 1 "${args[@]}" "http://127.0.0.1:$port$path" >/dev/null
      ticks0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
      out=$(taskset -c 1 h2load -D "$SECONDS_PER_RUN" "${args[@]}" "http://127.0.0.1:$port$path")
      ticks1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
      kill "$pid"
      wait "$pid" 2>/dev/null || true
      done_n=$(echo "$out" | sed -n 's/.* \([0-9]*\) succeeded.*/\1/p')
      awk -v r="$round" -v p="$path" -v d="$divisor" -v n="${done_n:-0}" -v s="$SECONDS_PER_RUN" \
        -v t="$((ticks1 - ticks0))" -v hz="$hz" \
        'BEGIN {printf "| %d | %s | 1/%s of the window | %.0f | %.0f |\n", r, p, d, n / s, n / (t / hz)}'
    done
  done
done
