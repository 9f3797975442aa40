#!/usr/bin/env bash
# Processed → delivered latency on the local stack: with `make dev` running, sends N signed Stripe
# events of a fresh type without a handler (each becomes `ignored` and is delivered to the dev listener), waits
# until every delivery is delivered, then prints `inboxctl stats` (its outbox table has p50/p99 of
# delivered_at − created_at per destination: from the event's terminal transition to its 2xx).
#
#   scripts/outbox_latency.sh [N] [webhook URL]     (default 50, http://127.0.0.1:9000/...)
#
# Reads the local stack's settings from .local/dev-env-<moto port>.sh (DEV_MOTO_PORT, default 5000).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
N="${1:-50}"
URL="${2:-http://127.0.0.1:${DEV_LAMBDA_PORT:-9000}/lambda-url/ingest/webhooks/stripe}"
# shellcheck disable=SC1090
. ".local/dev-env-${DEV_MOTO_PORT:-5000}.sh"
cargo build -q -p inboxctl
INBOXCTL="$ROOT/target/debug/inboxctl"
TYPE="latency.probe.$(date +%s)"
for _ in $(seq "$N"); do
    "$INBOXCTL" send stripe --type "$TYPE" --url "$URL" >/dev/null
done
deadline=$((SECONDS + 300))
while :; do
    done_count="$("$INBOXCTL" --json deliveries list --limit 100000 --status delivered |
        python3 -c 'import json,sys; t=sys.argv[1]; print(sum(1 for d in json.load(sys.stdin) if d["event_type"]==t))' "$TYPE")"
    [[ "$done_count" -ge "$N" ]] && break
    ((SECONDS < deadline)) || { echo "$done_count of $N delivered within 300 s" >&2; exit 1; }
    sleep 1
done
"$INBOXCTL" stats
