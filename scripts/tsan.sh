#!/usr/bin/env bash
# Every test of the crates with atomics under ThreadSanitizer (nightly,
# rebuilding std with -Zbuild-std so std's own atomics are instrumented too).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rust-src --toolchain nightly >/dev/null
source scripts/crates.sh
packages=()
for crate in "${UNSAFE_CRATES[@]}"; do packages+=(-p "$crate"); done
target="$(rustc -vV | sed -n 's/^host: //p')"
RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=target/tsan \
  cargo +nightly test -Zbuild-std --target "$target" "${packages[@]}" --tests
