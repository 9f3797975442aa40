#!/usr/bin/env bash
# `make dev`: run the webhook ingestor locally. No AWS account, no Docker.
#
#  1. creates .venv (cargo-lambda, moto[server], stripe, standardwebhooks; pins from
#     scripts/requirements-dev.txt) if it is missing or incomplete, and activates it
#     (cargo-lambda finds zig through the venv's python);
#  2. starts moto (local DynamoDB/Streams/SQS) on 127.0.0.1:5000 (DEV_MOTO_PORT to change);
#  3. creates the table webhook-inbox-local from template.yaml (scripts/table_from_template.py);
#  4. runs `cargo lambda watch` on 127.0.0.1:9000 (DEV_LAMBDA_PORT to change): the ingest function
#     answers at http://127.0.0.1:9000/lambda-url/ingest/webhooks/<source> and rebuilds on change.
#
# Ctrl-C stops everything this script started (moto, cargo lambda watch and its children).
# The function gets its configuration from this script's environment (cargo lambda watch
# passes its environment on to the function process):
#   AWS_ENDPOINT_URL=http://127.0.0.1:5000 AWS_REGION=us-east-1
#   AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing TABLE_NAME=webhook-inbox-local
#   WEBHOOK_SOURCES=$(cat local/sources.json) WEBHOOK_SECRETS=$(cat local/secrets.json)
# and RUST_LOG (default info; your RUST_LOG if set) through --env-file .local/dev.env.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
REQS="$ROOT/scripts/requirements-dev.txt"
MOTO_PORT="${DEV_MOTO_PORT:-5000}"
LAMBDA_PORT="${DEV_LAMBDA_PORT:-9000}"
TABLE="webhook-inbox-local"
STATE_DIR="$ROOT/.local"

log() { printf '\033[1;34m[dev]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[dev] error:\033[0m %s\n' "$*" >&2; exit 1; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ------------------------------------------------------------------ 1. venv
venv_complete() {
    [[ -x "$VENV/bin/python" && -x "$VENV/bin/moto_server" && -x "$VENV/bin/cargo-lambda" ]] &&
        "$VENV/bin/python" -c 'import stripe, standardwebhooks, boto3, yaml, ziglang' 2>/dev/null
}

if ! venv_complete; then
    command -v python3 >/dev/null || die "python3 is required to create $VENV"
    [[ -x "$VENV/bin/python" ]] || { log "creating $VENV"; python3 -m venv "$VENV"; }
    log "installing local tooling into $VENV (about a minute)"
    # everything pinned in requirements-dev.txt except the deploy/lint tools
    grep -vE '^[[:space:]]*(#|$|cfn-lint|aws-sam-cli)' "$REQS" | xargs "$VENV/bin/pip" install --quiet
    venv_complete || die "venv setup failed; try: rm -rf .venv && make venv"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"   # puts the venv's python first on PATH: cargo-lambda finds zig through it

command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs)"
for f in local/sources.json local/secrets.json template.yaml; do
    [[ -f "$f" ]] || die "$f is missing"
done
SOURCES_JSON="$(cat local/sources.json)"
SECRETS_JSON="$(cat local/secrets.json)"
python -c 'import json,sys; json.loads(sys.argv[1]); json.loads(sys.argv[2])' "$SOURCES_JSON" "$SECRETS_JSON" ||
    die "local/sources.json or local/secrets.json is not valid JSON"

# ------------------------------------------------------------------ ports
port_in_use "$MOTO_PORT" &&
    die "something already listens on 127.0.0.1:$MOTO_PORT (moto's port). Stop it (a previous 'make dev'? try 'scripts/moto.sh stop $MOTO_PORT') or run with DEV_MOTO_PORT=<port>"
port_in_use "$LAMBDA_PORT" &&
    die "something already listens on 127.0.0.1:$LAMBDA_PORT (cargo lambda watch's port). Stop it or run with DEV_LAMBDA_PORT=<port>"

# ------------------------------------------------------------------ cleanup
WATCH_PID=""
MOTO_STARTED=0
cleanup() {
    local rc=$?
    trap - INT TERM EXIT
    if [[ -n "$WATCH_PID" ]] && kill -0 "$WATCH_PID" 2>/dev/null; then
        log "stopping cargo lambda watch (process group $WATCH_PID)"
        kill -TERM -- "-$WATCH_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$WATCH_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$WATCH_PID" 2>/dev/null || true
    fi
    if ((MOTO_STARTED)); then
        "$ROOT/scripts/moto.sh" stop "$MOTO_PORT" >&2 || true
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ 2. moto
MOTO_STARTED=1
"$ROOT/scripts/moto.sh" start "$MOTO_PORT" >&2

# ------------------------------------------------------------------ environment for the function
export AWS_ENDPOINT_URL="http://127.0.0.1:$MOTO_PORT"
export AWS_REGION="us-east-1"
export AWS_ACCESS_KEY_ID="testing"
export AWS_SECRET_ACCESS_KEY="testing"
export TABLE_NAME="$TABLE"
export WEBHOOK_SOURCES="$SOURCES_JSON"
export WEBHOOK_SECRETS="$SECRETS_JSON"
# RUST_LOG goes to the function through an env file, not the environment: cargo-lambda itself
# honours RUST_LOG and would flood the terminal with its own logs. (--env-var would split a
# filter such as "info,shared=debug" at the comma.)
FUNCTION_RUST_LOG="${RUST_LOG:-info}"
unset RUST_LOG

# ------------------------------------------------------------------ 3. table
python scripts/table_from_template.py create --table-name "$TABLE" --endpoint-url "$AWS_ENDPOINT_URL"

# ------------------------------------------------------------------ 4. cargo lambda watch
mkdir -p "$STATE_DIR"
# single quotes: the env-file parser rejects an unquoted value containing '=' (info,shared=debug)
printf "RUST_LOG='%s'\n" "$FUNCTION_RUST_LOG" >"$STATE_DIR/dev.env"
# Build once up front so the first request does not wait for a cold compile (cargo lambda watch
# starts the function on the first invocation, with `cargo run --bin ingest`: same artifacts).
log "building the ingest function (a few minutes on a cold cache)"
cargo build --bin ingest ||
    log "warning: the ingest function does not build yet; cargo lambda watch rebuilds it when you save a fix"
log "starting cargo lambda watch on 127.0.0.1:$LAMBDA_PORT"
# own process group (setsid) so cleanup can stop it together with cargo and the function process
setsid cargo lambda watch --invoke-address 127.0.0.1 --invoke-port "$LAMBDA_PORT" \
    --env-file "$STATE_DIR/dev.env" </dev/null &
WATCH_PID=$!

deadline=$((SECONDS + 60))
until port_in_use "$LAMBDA_PORT"; do
    kill -0 "$WATCH_PID" 2>/dev/null || { wait "$WATCH_PID" || true; die "cargo lambda watch exited"; }
    ((SECONDS < deadline)) || die "cargo lambda watch did not listen on 127.0.0.1:$LAMBDA_PORT within 60s"
    sleep 0.2
done

base="http://127.0.0.1:$LAMBDA_PORT/lambda-url/ingest/webhooks"
sources="$(python -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])))' "$SOURCES_JSON")"
cat >&2 <<EOF

  ================================================================================
  webhook ingestor running locally
    webhook URL   $base/<source>
    sources       $sources
    table         $TABLE on moto $AWS_ENDPOINT_URL
    secrets       local/secrets.json

  send a signed Stripe test event (in another terminal):
    .venv/bin/python scripts/send_stripe_example.py $base/stripe
    .venv/bin/python scripts/send_stripe_example.py $base/stripe --repeat 3   # duplicates

  Ctrl-C stops cargo lambda watch and moto.
  ================================================================================

EOF

# `wait` returns early when INT/TERM arrives, then the traps run cleanup.
wait "$WATCH_PID"
