#!/usr/bin/env bash
# cargo-fuzz (libFuzzer, ASan) over every fuzz target, or the one named:
#   pool_ops       random pool operation sequences
#   http_session   arbitrary bytes through the server's connection state machine
#   hpack          arbitrary header blocks through the HPACK decoder, then re-encoded
#   h2_connection  arbitrary frames through the HTTP/2 connection state machine
#   scripts/fuzz.sh [seconds per target] [target]   default 300 s (httparse's budget per change)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
targets=("${2:-pool_ops}")
[ $# -ge 2 ] || targets=(pool_ops http_session hpack h2_connection)
rustup component add rust-src --toolchain nightly >/dev/null 2>&1 || true
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
cd fuzz
for target in "${targets[@]}"; do
  dict=()
  [ "$target" = http_session ] && dict=(-dict=http.dict)
  cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=1024 "${dict[@]}"
done
