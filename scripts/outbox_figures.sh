#!/usr/bin/env bash
# Every outbox figure of docs/benchmarks.md in one run:
#  1. against its own DynamoDB Local and moto (OUTBOX_FIGURES_DYNAMODB_PORT, default 5145;
#     OUTBOX_FIGURES_MOTO_PORT, default 5146): deliveries per second of one
#     worker to a local receiver, and DynamoDB requests per delivery
#     (`cargo run -p integration-tests --bin outbox_figures`; RELEASE=1 for a release build);
#  2. the local stack (`make dev` on DEV_MOTO_PORT/DEV_DYNAMODB_PORT/DEV_LAMBDA_PORT/DEV_LISTEN_PORT,
#     defaults 5147/5149/9147/9148): 50 events delivered to its listener, processed → delivered p50/p99
#     (scripts/outbox_latency.sh); the stack is stopped afterwards.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PORT="${OUTBOX_FIGURES_MOTO_PORT:-5146}"
DDB_PORT="${OUTBOX_FIGURES_DYNAMODB_PORT:-5145}"
export DEV_MOTO_PORT="${DEV_MOTO_PORT:-5147}" DEV_DYNAMODB_PORT="${DEV_DYNAMODB_PORT:-5149}" DEV_LAMBDA_PORT="${DEV_LAMBDA_PORT:-9147}" DEV_LISTEN_PORT="${DEV_LISTEN_PORT:-9148}"
profile=()
[[ "${RELEASE:-0}" == 1 ]] && profile=(--release)

DEV_PID=""
cleanup() {
    [[ -n "$DEV_PID" ]] && kill -TERM -- "-$DEV_PID" 2>/dev/null && wait "$DEV_PID" 2>/dev/null || true
    scripts/moto.sh stop "$PORT" >/dev/null 2>&1 || true
    scripts/dynamodb_local.sh stop "$DDB_PORT" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "== 1. one worker against DynamoDB Local, moto and a local receiver"
scripts/dynamodb_local.sh start "$DDB_PORT" >&2
scripts/moto.sh start "$PORT" >&2
AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing \
    AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DDB_PORT" AWS_ENDPOINT_URL_DYNAMODB_STREAMS="http://127.0.0.1:$DDB_PORT" \
    AWS_SECRET_ACCESS_KEY=testing INBOX_VENV="$ROOT/.venv" \
    cargo run -q "${profile[@]}" -p integration-tests --bin outbox_figures
scripts/moto.sh stop "$PORT" >&2
scripts/dynamodb_local.sh stop "$DDB_PORT" >&2

echo "== 2. processed → delivered on make dev"
LOG="$(mktemp)"
setsid scripts/dev.sh >"$LOG" 2>&1 &
DEV_PID=$!
deadline=$((SECONDS + 600))
until grep -q "destination dev-listener" "$LOG"; do
    kill -0 "$DEV_PID" 2>/dev/null || { tail -20 "$LOG" >&2; exit 1; }
    ((SECONDS < deadline)) || { echo "make dev did not come up" >&2; exit 1; }
    sleep 1
done
scripts/outbox_latency.sh 50 | tail -6
