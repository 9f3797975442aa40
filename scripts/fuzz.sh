#!/usr/bin/env bash
# `make fuzz`: the longer run of the fuzz targets (every `fuzz_…` property test of inbox-core; see
# shared/core/src/fuzz.rs), time-boxed, on stable Rust.
#
# Rounds of `cargo test -p inbox-core --lib fuzz` with INBOX_FUZZ_SCALE times each target's
# `make test` cases, each round from fresh random seeds, until FUZZ_SECONDS have passed (a round
# still running then is stopped: that is not a failure). The first failing round stops the run:
# proptest has shrunk the input and saved its seed under shared/core/proptest-regressions/
# (commit it: every later run, `make test` included, replays it first); turn the minimal input
# into a named regression test beside its target and fix the parser.
#
#   FUZZ_SECONDS      the time box (default 600)
#   INBOX_FUZZ_SCALE  cases per target per round, as a multiple of its `make test` cases (default 100)
#   FUZZ_FILTER       which targets (a cargo test filter; default `fuzz`: all of them)
#
# Coverage-guided fuzzing (cargo-fuzz) needs a nightly toolchain, which this project does not use;
# the targets are structure-aware instead (they build requests from the tokens the parsers look
# for, and damage signed ones).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUDGET="${FUZZ_SECONDS:-600}"
export INBOX_FUZZ_SCALE="${INBOX_FUZZ_SCALE:-100}"
FILTER="${FUZZ_FILTER:-fuzz}"

log() { printf '\033[1;34m[fuzz]\033[0m %s\n' "$*" >&2; }

cargo test -p inbox-core --lib --no-run --quiet
targets="$(cargo test -p inbox-core --lib --quiet "$FILTER" -- --list 2>/dev/null | grep -c ': test$' || true)"
log "$targets targets matching '$FILTER', ${INBOX_FUZZ_SCALE}x their cases per round, for ${BUDGET}s"

start=$SECONDS
round=0
while (( SECONDS - start < BUDGET )); do
    left=$(( BUDGET - (SECONDS - start) ))
    round=$(( round + 1 ))
    set +e
    timeout --signal=INT "$left" cargo test -p inbox-core --lib --quiet "$FILTER" >"target/fuzz-round.log" 2>&1
    rc=$?
    set -e
    if (( rc == 124 || rc == 130 )); then
        round=$(( round - 1 ))
        log "time is up during round $(( round + 1 )) (not counted)"
        break
    fi
    if (( rc != 0 )); then
        grep -E 'minimal failing input|Test failed|panicked at' -A3 target/fuzz-round.log >&2 || cat target/fuzz-round.log >&2
        log "round $round FAILED after $(( SECONDS - start ))s (full output: target/fuzz-round.log)"
        log "the failing seed is saved under shared/core/proptest-regressions/: commit it"
        exit 1
    fi
    log "round $round passed ($(( SECONDS - start ))s)"
done
log "$round rounds passed: each target ran $(( round * INBOX_FUZZ_SCALE ))x its make-test cases, nothing found"
