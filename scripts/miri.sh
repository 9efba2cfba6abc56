#!/usr/bin/env bash
# Every test of the crates with `unsafe` under Miri with strict provenance,
# once under Stacked Borrows and once under Tree Borrows (as crossbeam does).
#
#   scripts/miri.sh             both models (the long run, about 30 minutes)
#   scripts/miri.sh --stacked   Stacked Borrows only (what CI runs)
# Installs Miri on the nightly toolchain if it can, and says loudly if not.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  if ! rustup component add miri rust-src --toolchain nightly; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    echo "!!! MIRI IS NOT AVAILABLE: 'rustup component add miri' failed.       !!!" >&2
    echo "!!! The unsafe code was NOT checked under Miri in this run.          !!!" >&2
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    exit "${FALCONET_MIRI_REQUIRED:-0}"
  fi
fi

source scripts/crates.sh
packages=()
for crate in "${UNSAFE_CRATES[@]}"; do packages+=(-p "$crate"); done

# Strict provenance and both aliasing models for everything but the
# registry's pinned read path, which runs on crossbeam-epoch. For that
# (`crates/registry/tests/pinned.rs`, all under `mod epoch_pinned`, and the
# registry's doc tests, `Registry::pin`'s example among them) we use the
# flags crossbeam's own CI gives crossbeam-epoch (its ci/miri.sh):
# - `-Zmiri-permissive-provenance`: crossbeam-epoch keeps pointers in
#   integers (`AtomicUsize`), which strict provenance rejects;
# - `-Zmiri-tree-borrows`: its intrusive list of threads is not compatible
#   with Stacked Borrows (crossbeam issue #545);
# - `-Zmiri-ignore-leaks`: its global collector and each thread's pending
#   garbage are never freed at exit (crossbeam issue #579).
miri_tests() {
  # nextest runs the test binaries' tests in parallel: Miri is single-threaded.
  if command -v cargo-nextest >/dev/null 2>&1; then
    cargo +nightly miri nextest run "${packages[@]}" -E 'not binary(pinned)'
  else
    cargo +nightly miri test "${packages[@]}" --tests -- --skip epoch_pinned
  fi
}

strict_docs=()
for crate in "${UNSAFE_CRATES[@]}"; do
  [ "$crate" = falconet-registry ] || strict_docs+=(-p "$crate")
done
epoch_flags="-Zmiri-permissive-provenance -Zmiri-tree-borrows -Zmiri-ignore-leaks"

echo "--- Miri: Stacked Borrows, strict provenance"
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}" miri_tests
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}" cargo +nightly miri test "${strict_docs[@]}" --doc
echo "--- Miri: the pinned read path on crossbeam-epoch ($epoch_flags)"
MIRIFLAGS="$epoch_flags" cargo +nightly miri test -p falconet-registry --test pinned
MIRIFLAGS="$epoch_flags" cargo +nightly miri test -p falconet-registry --doc
[ "${1:-}" = --stacked ] && exit 0
echo "--- Miri: Tree Borrows, strict provenance"
MIRIFLAGS="-Zmiri-strict-provenance -Zmiri-tree-borrows" miri_tests
