#!/usr/bin/env bash
# Fuzzes the pool's operation sequences with cargo-fuzz (libFuzzer, ASan).
#   scripts/fuzz.sh [seconds]     default 300 (httparse's budget per change)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
rustup component add rust-src --toolchain nightly >/dev/null 2>&1 || true
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
cd fuzz
cargo +nightly fuzz run pool_ops -- -max_total_time="$seconds" -max_len=512
