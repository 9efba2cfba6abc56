#!/usr/bin/env bash
# Every long check, in turn (run before an issue is called done; CI runs
# scripts/test.sh only):
#   loom at preemption bound 3, Miri (Stacked and Tree Borrows),
#   ThreadSanitizer, the soak runs, and a fuzz smoke run of every target.
#   scripts/long-checks.sh [fuzz seconds per target, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }
step "loom, bound 3";                 scripts/loom.sh
step "Miri";                          FALCONET_MIRI_REQUIRED=1 scripts/miri.sh
step "ThreadSanitizer";               scripts/tsan.sh
step "soak";                          scripts/soak.sh
step "fuzz smoke (${1:-60} s per target)"; scripts/fuzz.sh "${1:-60}"
