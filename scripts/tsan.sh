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
# `falconet_tsan` leaves out the tests whose programs run tokio sockets
# (`tests/tokio_user_review.rs`): tokio's I/O driver synchronises through
# epoll, which TSan cannot see (tokio-rs/tokio#7299).
# TSan runs ~10x slower: the pipe's transfer moves 256 MiB instead of 10 GiB.
export FALCONET_PIPE_STRESS_BYTES="${FALCONET_PIPE_STRESS_BYTES:-268435456}"
export FALCONET_REGISTRY_STRESS_OPS="${FALCONET_REGISTRY_STRESS_OPS:-500000}"
RUSTFLAGS="-Zsanitizer=thread --cfg falconet_tsan" RUSTDOCFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=target/tsan \
  cargo +nightly test -Zbuild-std --target "$target" "${packages[@]}" --tests
# The server has no unsafe code of its own, but its workers, timer and
# clients share the pool, pipes and registry: its stress test runs too.
FALCONET_SERVER_STRESS_ROUNDS="${FALCONET_SERVER_STRESS_ROUNDS:-2000}" \
RUSTFLAGS="-Zsanitizer=thread --cfg falconet_tsan" RUSTDOCFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=target/tsan \
  cargo +nightly test -Zbuild-std --target "$target" -p falconet-server --test stress
# The application side: responses written and request bodies read on
# application threads (app, deferred), and tower services whose bodies the
# worker polls while tokio tasks answer others (tower); HTTP/2 (h2), whose
# request bodies release falconet-flow windows on application threads,
# and whose tower bodies' frames the worker sends in place (h2_review_*),
# and whose trailers a task hands to the worker beside its output pipe's
# end (tower_trailers).
RUSTFLAGS="-Zsanitizer=thread --cfg falconet_tsan" RUSTDOCFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=target/tsan \
  cargo +nightly test -Zbuild-std --target "$target" -p falconet-server --features tower \
  --test app --test deferred --test tower --test tower_polled --test h2 --test h2_review \
  --test h2_review_shared --test h2_review_tower --test tower_trailers
