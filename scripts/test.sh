#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run calls this). On a fresh machine
# it needs only the pinned toolchain (rust-toolchain.toml) and crates.io.
#
#   scripts/test.sh            fmt, clippy, docs, unit/integration/doc/proptest
#                              tests, stress, the self-checking example,
#                              cargo package, loom at preemption bound 2
#   FALCONET_MIRI=1 ...        and Miri under Stacked Borrows (scripts/miri.sh
#                              runs both models; scripts/long-checks.sh runs it)
# CI keeps under 30 minutes on two cores (21 on a clean clone at 81042fb:
# the test build 11, the tests under nextest 3.5, loom 3.3): Miri (about 11 more) runs in
# scripts/long-checks.sh with loom at bound 3, TSan, the soaks and the fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
step() { printf '\n==> [%dm%02ds] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*"; }

step "rustfmt"
cargo fmt --all -- --check

step "clippy -D warnings (all targets, all features)"
cargo clippy --workspace --all-targets --all-features -- -D warnings

step "clippy -D warnings (all targets, default features and none: what \`cargo test -p CRATE\` builds)"
# A test helper that needs a feature's dependency once broke the server's
# tests without --all-features while the line above stayed green.
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --workspace --all-targets --no-default-features -- -D warnings

step "rustdoc without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features

step "tests: unit, integration, proptest, stress, allocation counting, doc"
# curl for the interop tests (tests/h2.rs: `--http2` and prior knowledge),
# which skip without it.
command -v curl >/dev/null ||
  { apt-get update -q >/dev/null && apt-get install -y -q curl >/dev/null; } ||
  echo "curl could not be installed: its tests skip"
# Installed, it is required: a curl test that skips then fails instead.
command -v curl >/dev/null && export FALCONET_REQUIRE_TOOLS=1
if cargo nextest --version >/dev/null 2>&1; then
  # One queue across all the test binaries, six waiting tests at once
  # (.config/nextest.toml says why): about 3 minutes where `cargo test`
  # takes 9. nextest does not run doc tests; the second line does.
  cargo nextest run --workspace --all-features --no-fail-fast
  cargo test --workspace --all-features --doc
else
  echo "cargo-nextest is not installed: cargo test runs the same tests, slower"
  cargo test --workspace --all-features
fi

step "examples that check themselves: tokio_frames (a tokio frame server on the primitives)"
# The test profile: the dependencies are already built for it above.
cargo run --quiet --profile test --example tokio_frames

step "cargo package: every published crate, in dependency order, built from its package"
# A missing file or a broken manifest fails here, not at publish time. The
# crates are not on crates.io yet, so `cargo package --workspace` resolves
# them from a local registry of the packages it just made.
# cargo extracts each package into $CARGO_HOME/registry/src/<that local
# registry>/ once and reuses the copy while the version is unchanged, so a
# second run on one machine would build against the first run's sources:
# drop falconet's copies first (they never come from crates.io).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/falconet-*
cargo package --workspace --exclude falconet-benches --exclude falconet-testkit --allow-dirty --quiet

step "fuzz targets compile (scripts/fuzz.sh runs them; this keeps them in step with the API)"
cargo check --manifest-path fuzz/Cargo.toml --bins --quiet

step "loom models (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-2}, the pipe's three heaviest at 1; scripts/loom.sh runs bound 3)"
# The pipe's three heaviest models take six of the run's minutes at bound 2
# (27 seconds at 1); scripts/loom.sh runs them at bound 3.
FALCONET_LOOM_HEAVY_BOUND="${FALCONET_LOOM_HEAVY_BOUND:-1}" LOOM_QUICK=1 \
  LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" scripts/loom.sh

if [ "${FALCONET_MIRI:-0}" = 1 ]; then
  step "Miri, strict provenance, Stacked Borrows"
  scripts/miri.sh --stacked
else
  step "Miri not run (FALCONET_MIRI=1 adds it; scripts/long-checks.sh runs both models)"
fi
step "done"
