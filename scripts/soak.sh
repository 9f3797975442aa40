#!/usr/bin/env bash
# `make soak`: the local stack under a team's load for SOAK_MINUTES, then a verdict.
#
#  1. starts the stack as `make dev` does (scripts/dev.sh, its output in .local/soak/dev.log), on
#     the DEV_*_PORT ports if set (else make dev's), and waits until it is up (SOAK_START_TIMEOUT
#     seconds, default 1800: a cold build of every function takes minutes);
#  2. runs scripts/soak.py with the stack's settings (.local/dev-env-<moto port>.sh): SOAK_MINUTES
#     (default 30) of steady and burst traffic (SOAK_BURST concurrent requests, default 500, every
#     SOAK_BURST_EVERY seconds, default 120), failing, slow and throttling destinations, autopay
#     charges, `git status` every 30 s and a concurrent cargo build half-way (SOAK_CARGO), then
#     drains (SOAK_DRAIN_SECONDS, default 300) and checks: every request answered, every accepted
#     event processed, every delivery ended or scheduled, the wallet's arithmetic exact, ingest's
#     p50/p99, no traceback or panic in any component's log (.local/soak/dev.log, the emulators'
#     and the Stripe stand-in's logs);
#  3. stops the stack. Exit status: soak.py's (1 on a failed verdict). The JSON summary:
#     .local/soak/summary.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/.local/soak"
MOTO_PORT="${DEV_MOTO_PORT:-5000}"
DYNAMODB_PORT="${DEV_DYNAMODB_PORT:-8000}"
LAMBDA_PORT="${DEV_LAMBDA_PORT:-9000}"
STRIPE_PORT="${DEV_STRIPE_PORT:-12111}"
START_TIMEOUT="${SOAK_START_TIMEOUT:-1800}"

log() { printf '\033[1;32m[soak]\033[0m %s\n' "$*" >&2; }

mkdir -p "$OUT"
rm -f "$OUT/dev.log" "$OUT/summary.json"
DEV_PID=""
stop_dev() {
    [[ -n "$DEV_PID" ]] && kill -0 "$DEV_PID" 2>/dev/null || return 0
    log "stopping the stack"
    kill -TERM -- "-$DEV_PID" 2>/dev/null || kill -TERM "$DEV_PID" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$DEV_PID" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL -- "-$DEV_PID" 2>/dev/null || true
}
trap stop_dev EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "starting the stack (scripts/dev.sh; output in ${OUT#"$ROOT"/}/dev.log)"
setsid scripts/dev.sh >"$OUT/dev.log" 2>&1 </dev/null &
DEV_PID=$!
start=$SECONDS
until grep -q 'webhook pipeline running locally' "$OUT/dev.log" 2>/dev/null; do
    kill -0 "$DEV_PID" 2>/dev/null || { tail -30 "$OUT/dev.log" >&2; log "the stack exited before it was up"; exit 1; }
    ((SECONDS - start < START_TIMEOUT)) || { tail -30 "$OUT/dev.log" >&2; log "the stack was not up within ${START_TIMEOUT}s"; exit 1; }
    sleep 1
done
log "stack up after $((SECONDS - start)) s"

# shellcheck disable=SC1090
. "$ROOT/.local/dev-env-$MOTO_PORT.sh"
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | "$ROOT/.venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
rc=0
SOAK_LAMBDA_URL="http://127.0.0.1:$LAMBDA_PORT" SOAK_INBOXCTL="$TARGET_DIR/debug/inboxctl" \
    "$ROOT/.venv/bin/python" scripts/soak.py --summary "$OUT/summary.json" \
    --log "$OUT/dev.log" --log "$ROOT/.local/moto-$MOTO_PORT.log" \
    --log "$ROOT/.local/dynamodb-$DYNAMODB_PORT.log" --log "$ROOT/.local/stripe-standin-$STRIPE_PORT.log" \
    --log "$ROOT/.local/console.log" "$@" || rc=$?
exit "$rc"
