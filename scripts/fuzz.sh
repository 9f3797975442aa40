#!/usr/bin/env bash
# `make fuzz`: the longer run of the fuzz targets (every `fuzz_…` property test of inbox-core, one
# per parser of bytes from outside; see shared/core/src/fuzz.rs), time-boxed, on stable Rust.
#
# Builds the test binary once, then runs rounds of its `fuzz` tests with INBOX_FUZZ_SCALE times
# each target's `make test` cases, each round from fresh random seeds, until FUZZ_SECONDS have
# passed (a round still running then is stopped and not counted: that is not a failure). The
# first failing round stops the run: proptest has shrunk the input and saved its seed under
# shared/core/proptest-regressions/ (commit it: every later run, `make test` included, replays it
# first); make the minimal input a named regression test beside its target and fix the parser.
# The run's counts are written to docs/fuzz-counts.jsonl, a row of docs/faults.md
# (`make fault-table` renders it with the fault tests' rows).
#
#   FUZZ_SECONDS      the time box (default 600)
#   INBOX_FUZZ_SCALE  cases per target per round, as a multiple of its `make test` cases (default 100)
#   FUZZ_FILTER       which targets (a test name filter; default `fuzz`: all of them)
#
# Coverage-guided fuzzing (cargo-fuzz, libFuzzer) needs a nightly toolchain, which this project
# does not use; the targets are structure-aware instead: they build requests from the tokens the
# parsers look for, and damage signed ones.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUDGET="${FUZZ_SECONDS:-600}"
export INBOX_FUZZ_SCALE="${INBOX_FUZZ_SCALE:-100}"
FILTER="${FUZZ_FILTER:-fuzz}"
LOG="$ROOT/target/fuzz-round.log"
COUNTS="$ROOT/docs/fuzz-counts.jsonl"

log() { printf '\033[1;34m[fuzz]\033[0m %s\n' "$*" >&2; }

bin="$(cargo test -p inbox-core --lib --no-run --message-format=json 2>/dev/null \
    | grep -o '"executable":"[^"]*inbox_core-[^"]*"' | tail -1 | cut -d'"' -f4)"
[[ -x "$bin" ]] || { log "could not build the inbox-core test binary"; exit 1; }
targets="$("$bin" "$FILTER" --list 2>/dev/null | grep -c ': test$' || true)"
# Each target's `make test` cases: the argument of its `crate::fuzz::config(N)` (one per target).
configs="$(grep -rhoE 'crate::fuzz::config\([0-9]+\)' shared/core/src | grep -oE '[0-9]+')"
base="$(paste -sd+ <<<"$configs" | bc)"
properties="$(wc -l <<<"$configs")"
log "$targets tests matching '$FILTER' ($base cases per round at scale 1), ${INBOX_FUZZ_SCALE}x per round, for ${BUDGET}s"

record() { # record FOUND: this run's row of docs/faults.md
    local cases=$(( round * INBOX_FUZZ_SCALE * base ))
    python3 - "$COUNTS" "$properties" "$(( targets - properties ))" "$round" "$INBOX_FUZZ_SCALE" "$cases" "$(( SECONDS - start ))" "$1" <<'PY'
import json, sys
path, properties, tables, rounds, scale, cases, secs, found = sys.argv[1:]
row = {
    "test": "90-fuzz",
    "fault": "hostile bytes into every parser of outside input (`make fuzz`, proptest on stable Rust)",
    "injected": f"{properties} property targets and {tables} tables: the 15 schemes' headers and verify (made-up, damaged and reference-MAC requests, "
                f"empty secrets), SNS certificates, the identity scan and identify, batch split, base64 bodies, zstd frames and S3 "
                f"bodies, Retry-After, destination patterns, WEBHOOK_SOURCES/SECRETS; {rounds} rounds at {scale}x: "
                f"{int(cases):,} cases in {secs} s",
    "found": found,
}
with open(path, "w") as f:
    f.write(json.dumps(row) + "\n")
PY
}

start=$SECONDS
round=0
while (( SECONDS - start < BUDGET )); do
    left=$(( BUDGET - (SECONDS - start) ))
    set +e
    timeout --signal=INT "$left" "$bin" "$FILTER" --quiet >"$LOG" 2>&1
    rc=$?
    set -e
    if (( rc == 124 || rc == 130 )); then
        log "time is up during round $(( round + 1 )) (not counted)"
        break
    fi
    round=$(( round + 1 ))
    if (( rc != 0 )); then
        grep -E 'Test failed|minimal failing input' -A12 "$LOG" | tail -40 >&2 || tail -40 "$LOG" >&2
        failed="$(grep -oE '^    [a-z_:]+fuzz[a-z_:]*' "$LOG" | sort -u | paste -sd, | tr -d ' ')"
        log "round $round FAILED after $(( SECONDS - start ))s (full output: $LOG)"
        log "the failing seed is saved under shared/core/proptest-regressions/: commit it"
        record "round $round failed: ${failed:-see the log}"
        exit 1
    fi
    log "round $round passed ($(( SECONDS - start ))s)"
done
seeds="$(find shared/core/proptest-regressions -name '*.txt' -exec cat {} + 2>/dev/null | grep -c '^cc ' || true)"
record "failures 0, panics 0 (the $seeds committed regression seeds replayed first each round)"
log "$round rounds passed: $(( round * INBOX_FUZZ_SCALE * base )) cases, nothing found; counts in $COUNTS"
