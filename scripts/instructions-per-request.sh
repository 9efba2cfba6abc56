#!/usr/bin/env bash
# User-space instructions per request, counted by callgrind: deterministic
# where wall-clock and CPU-second benchmarks on a noisy VM swing +-10%
# (issue 16, part 1: the profile-and-cut loop). One connection sends DEPTH
# pipelined `GET /plaintext` requests and reads the answers, ROUNDS times;
# the figure is (Ir of the run - Ir of a one-round run) / (ROUNDS-1 rounds
# of requests), so start-up cost cancels out.
#
#   scripts/instructions-per-request.sh [binary, default target/release/falconet] [rounds, 2001] [depth, 16]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/falconet}
ROUNDS=${2:-2001}
DEPTH=${3:-16}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
[ -x "$BIN" ] || cargo build --release -q -p falconet-server --bin falconet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

client() { # port rounds depth
  python3 - "$@" <<'PY'
import socket, sys
port, rounds, depth = map(int, sys.argv[1:4])
request = f"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode() * depth
s = socket.create_connection(("127.0.0.1", port))
for _ in range(rounds):
    s.sendall(request)
    seen = b""
    while seen.count(b"HTTP/1.1 200") < depth:
        data = s.recv(65536)
        if not data:
            sys.exit("the server closed the connection")
        seen += data
PY
}

run() { # rounds -> total Ir
  local port=$((19500 + RANDOM % 400))
  valgrind --tool=callgrind --callgrind-out-file="$WORK/out" "$BIN" --addr "127.0.0.1:$port" --workers 1 \
    >/dev/null 2>"$WORK/err" &
  local pid=$!
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()" 2>/dev/null && break
    sleep 0.2
  done
  client "$port" "$1" "$DEPTH"
  kill -INT "$pid"
  wait "$pid" || true
  grep -oP 'Collected : \K\d+' "$WORK/err"
}

base=$(run 1)
total=$(run "$ROUNDS")
echo "$BIN: $(( (total - base) / ((ROUNDS - 1) * DEPTH) )) user instructions per request (pipelined x$DEPTH, $(( (ROUNDS - 1) * DEPTH )) requests)"
