#!/usr/bin/env bash
# `make dev`: run the whole webhook pipeline locally. No AWS account, no Docker.
#
#  1. creates .venv (cargo-lambda, moto[server], stripe, standardwebhooks; pins from
#     scripts/requirements-dev.txt) if it is missing or incomplete, and activates it
#     (cargo-lambda finds zig through the venv's python);
#  2. starts DynamoDB Local (the table and its stream; scripts/dynamodb_local.sh, installed from
#     local/dynamodb/ on first use) on 127.0.0.1:8000 (DEV_DYNAMODB_PORT to change) and moto
#     (SQS, S3, Secrets Manager) on 127.0.0.1:5000 (DEV_MOTO_PORT to change); tables in memory
#     (DEV_DYNAMODB_DB_PATH=DIR keeps them in DIR across runs);
#  3. creates, from template.yaml, the table webhook-inbox-local (scripts/table_from_template.py),
#     the queues webhook-retry-local, webhook-quarantine-local, webhook-delivery-local and
#     webhook-delivery-quarantine-local with the template's visibility timeout, retention and
#     redrive policy (scripts/queues_from_template.py), and the bucket webhook-bodies-local for
#     bodies above 8 KiB with BodyBucket's settings (scripts/bucket_from_template.py);
#  4. builds inboxctl, and starts the function host, scripts/lambda_local.py, on 127.0.0.1:9000
#     (DEV_LAMBDA_PORT to change; not cargo lambda watch: docs/local-stack.md, "The function
#     host"), which builds the template's functions (ingest, process, reaper, reconcile, deliver,
#     charge, wallet-api: each function's Metadata.BuildProperties.Binary), serves them (each up
#     to DEV_LAMBDA_CONCURRENCY processes of one invocation; 429/503 with Retry-After beyond
#     DEV_LAMBDA_QUEUE waiting or DEV_LAMBDA_QUEUE_WAIT seconds) and rebuilds a function when
#     the Rust sources change (never for .git/, docs, scripts, .local/): ingest answers at
#     http://127.0.0.1:9000/lambda-url/ingest/webhooks/<source>, the wallet API at
#     http://127.0.0.1:9000/lambda-url/wallet-api/wallets/<tenant>[/holds, …] (docs/wallet-api.md;
#     UNAUTHENTICATED on loopback: in AWS only SigV4 calls through the IAM authorizer reach it),
#     any function at http://127.0.0.1:9000/2015-03-31/functions/<name>/invocations;
#  5. starts scripts/local_pipeline.py, which plays the template's event sources: the table's
#     stream (FilterCriteria INSERT sk=MSG) and the retry queue feed `process`; the stream
#     (INSERT sk=OUT|FAN) and the delivery queue feed `deliver`; the scheduled functions (reaper
#     and the delivery sweep every minute, reconcile hourly) run at start and then on schedule;
#  6. starts `inboxctl listen` on 127.0.0.1:9100 (DEV_LISTEN_PORT to change) and adds the
#     destination `dev-listener` (every event, `http://127.0.0.1:9100/webhooks`, a fresh secret):
#     every processed or ignored event is delivered to it, signed, and printed by the listener;
#  7. starts the operator console, `inboxctl console`, on 127.0.0.1:9200 (DEV_CONSOLE_PORT to
#     change), acting as $USER on the local table and queues, and prints its URL;
#  8. (with the emulators) starts the Stripe stand-in, scripts/stripe_standin.py, on 127.0.0.1:12111
#     (DEV_STRIPE_PORT to change): the API autopay charges through (STRIPE_API_BASE), its webhooks
#     signed with the `stripe` source's secret from local/secrets.json and posted to ingest's
#     `stripe` URL; scripts/autopay_demo.py drives it (a saved card, a charge).
#
# Ctrl-C stops everything this script started (the emulators, the Stripe stand-in, the function
# host and the function processes, the pipeline). The functions get their configuration from
# this script's environment (the function host passes its environment on to the function processes):
#   AWS_ENDPOINT_URL=http://127.0.0.1:5000 (moto) AWS_REGION=us-east-1
#   AWS_ENDPOINT_URL_DYNAMODB=AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:8000 (DynamoDB Local)
#   AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing TABLE_NAME=webhook-inbox-local
#   WEBHOOK_SOURCES=$(cat local/sources.json) WEBHOOK_SECRETS=$(cat local/secrets.json)
#   RETRY_QUEUE_URL, QUARANTINE_QUEUE_URL (the moto queue URLs) MAX_ATTEMPTS=5 LEASE_MS=60000
#   BACKOFF_BASE_MS=1000 BACKOFF_CAP_MS=60000 (short local retries; deployed: 2 s .. 15 min)
#   PROCESS_CONCURRENCY=10 (as deployed)
#   DELIVERY_QUEUE_URL, DELIVERY_QUARANTINE_QUEUE_URL (the moto queue URLs)
#   DELIVERY_ALLOW_LOOPBACK=true (deliveries to the local listener: loopback, plain http)
#   BODY_BUCKET=webhook-bodies-local WALLET_EMAIL_SOURCES (the local email providers' sources)
#   DESTINATION_SECRETS_KEY (a key created in moto's KMS: destination secrets encrypted)
#   STRIPE_API_BASE=http://127.0.0.1:12111 (the stand-in) STRIPE_SECRET_KEY=sk_test_local (the
#   only key the stand-in accepts here)
# and RUST_LOG (default info; your RUST_LOG if set) through --env-file .local/dev.env.
# The same settings, for inboxctl or the AWS CLI in another shell, go to .local/dev-env-<moto port>.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
REQS="$ROOT/scripts/requirements-dev.txt"
MOTO_PORT="${DEV_MOTO_PORT:-5000}"
DYNAMODB_PORT="${DEV_DYNAMODB_PORT:-8000}"
LAMBDA_PORT="${DEV_LAMBDA_PORT:-9000}"
LISTEN_PORT="${DEV_LISTEN_PORT:-9100}"
STRIPE_PORT="${DEV_STRIPE_PORT:-12111}"
CONSOLE_PORT="${DEV_CONSOLE_PORT:-9200}"
TABLE="webhook-inbox-local"
RETRY_QUEUE="webhook-retry-local"
QUARANTINE_QUEUE="webhook-quarantine-local"
DELIVERY_QUEUE="webhook-delivery-local"
DELIVERY_QUARANTINE_QUEUE="webhook-delivery-quarantine-local"
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
port_in_use "$DYNAMODB_PORT" &&
    die "something already listens on 127.0.0.1:$DYNAMODB_PORT (DynamoDB Local's port). Stop it (a previous 'make dev'? try 'scripts/dynamodb_local.sh stop $DYNAMODB_PORT') or run with DEV_DYNAMODB_PORT=<port>"
port_in_use "$LAMBDA_PORT" &&
    die "something already listens on 127.0.0.1:$LAMBDA_PORT (the function host's port). Stop it or run with DEV_LAMBDA_PORT=<port>"
port_in_use "$LISTEN_PORT" &&
    die "something already listens on 127.0.0.1:$LISTEN_PORT (inboxctl listen's port). Stop it or run with DEV_LISTEN_PORT=<port>"
port_in_use "$CONSOLE_PORT" &&
    die "something already listens on 127.0.0.1:$CONSOLE_PORT (inboxctl console's port). Stop it or run with DEV_CONSOLE_PORT=<port>"
port_in_use "$STRIPE_PORT" &&
    die "something already listens on 127.0.0.1:$STRIPE_PORT (the Stripe stand-in's port). Stop it or run with DEV_STRIPE_PORT=<port>"

# ------------------------------------------------------------------ cleanup
WATCH_PID=""
PIPELINE_PID=""
LISTEN_PID=""
CONSOLE_PID=""
EMULATORS_STARTED=0
STANDIN_STARTED=0
stop_group() { # stop_group PID NAME: TERM the process group led by PID (setsid), KILL after 5 s
    local pid=$1 name=$2
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
    log "stopping $name (process group $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
}
cleanup() {
    local rc=$?
    trap - INT TERM EXIT
    stop_group "$CONSOLE_PID" "inboxctl console"
    stop_group "$LISTEN_PID" "inboxctl listen"
    stop_group "$PIPELINE_PID" "the local pipeline"
    stop_group "$WATCH_PID" "the function host"
    if ((STANDIN_STARTED)); then
        emu_stop >&2 || true
    fi
    if ((EMULATORS_STARTED)); then
        "$ROOT/scripts/moto.sh" stop "$MOTO_PORT" >&2 || true
        "$ROOT/scripts/dynamodb_local.sh" stop "$DYNAMODB_PORT" >&2 || true
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ 2. the emulators
EMULATORS_STARTED=1
DYNAMODB_LOCAL_DB_PATH="${DEV_DYNAMODB_DB_PATH:-}" "$ROOT/scripts/dynamodb_local.sh" start "$DYNAMODB_PORT" >&2
"$ROOT/scripts/moto.sh" start "$MOTO_PORT" >&2

# ------------------------------------------------------------------ 7. the Stripe stand-in
# Started like the emulators (scripts/lib/emulator.sh: own process group, ready when its health
# page answers, stopped by cleanup). Its webhooks go to ingest's `stripe` URL, signed with the
# secret the `stripe` source verifies (local/secrets.json's committed test secret, so on its
# command line); events sent before the function host listens are retried by its schedule.
STRIPE_WEBHOOK_URL="http://127.0.0.1:$LAMBDA_PORT/lambda-url/ingest/webhooks/stripe"
STRIPE_WEBHOOK_SECRET="$(python -c 'import json, sys; print(json.loads(sys.argv[1])["stripe"][0])' "$SECRETS_JSON")" ||
    die "local/secrets.json has no secret for the source stripe"
export STRIPE_API_BASE="http://127.0.0.1:$STRIPE_PORT"
export STRIPE_SECRET_KEY="sk_test_local"
# shellcheck source=lib/emulator.sh
. "$ROOT/scripts/lib/emulator.sh"
EMU_NAME="the Stripe stand-in"
EMU_TAG="dev.sh"
EMU_PORT="$STRIPE_PORT"
EMU_PIDFILE="$STATE_DIR/stripe-standin-$STRIPE_PORT.pid"
EMU_LOGFILE="$STATE_DIR/stripe-standin-$STRIPE_PORT.log"
EMU_URL="$STRIPE_API_BASE/_standin/health"
EMU_START_TIMEOUT=20
EMU_STOP_TIMEOUT=5
EMU_CURL_FAIL=1
emu_prepare() {
    EMU_CMD=(python "$ROOT/scripts/stripe_standin.py" --port "$STRIPE_PORT"
        --webhook-url "$STRIPE_WEBHOOK_URL" --webhook-secret "$STRIPE_WEBHOOK_SECRET"
        --api-key "$STRIPE_SECRET_KEY")
}
STANDIN_STARTED=1
emu_start >&2

# ------------------------------------------------------------------ environment for the functions
# Each service at its own emulator through the SDK's endpoint variables: the functions keep no
# emulator code.
export AWS_ENDPOINT_URL="http://127.0.0.1:$MOTO_PORT"
export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DYNAMODB_PORT"
export AWS_ENDPOINT_URL_DYNAMODB_STREAMS="$AWS_ENDPOINT_URL_DYNAMODB"
export AWS_REGION="us-east-1"
export AWS_ACCESS_KEY_ID="testing"
export AWS_SECRET_ACCESS_KEY="testing"
export TABLE_NAME="$TABLE"
export WEBHOOK_SOURCES="$SOURCES_JSON"
export WEBHOOK_SECRETS="$SECRETS_JSON"
# RUST_LOG goes to the function through an env file, not the environment (the function host
# reads it; so does the pipeline's cargo, which would flood the terminal with its own logs). (--env-var would split a
# filter such as "info,shared=debug" at the comma.)
FUNCTION_RUST_LOG="${RUST_LOG:-info}"
unset RUST_LOG

# ------------------------------------------------------------------ 3. table and queues
python scripts/table_from_template.py create --table-name "$TABLE" --endpoint-url "$AWS_ENDPOINT_URL_DYNAMODB"
queues="$(python scripts/queues_from_template.py create --endpoint-url "$AWS_ENDPOINT_URL" \
    --queue "RetryQueue=$RETRY_QUEUE" --queue "QuarantineQueue=$QUARANTINE_QUEUE" \
    --queue "DeliveryQueue=$DELIVERY_QUEUE" --queue "DeliveryQuarantineQueue=$DELIVERY_QUARANTINE_QUEUE")" ||
    die "could not create the queues from template.yaml"
queue_url() { awk -v id="$1" '$1 == id { print $2 }' <<<"$queues"; }
RETRY_QUEUE_URL="$(queue_url RetryQueue)"
QUARANTINE_QUEUE_URL="$(queue_url QuarantineQueue)"
DELIVERY_QUEUE_URL="$(queue_url DeliveryQueue)"
DELIVERY_QUARANTINE_QUEUE_URL="$(queue_url DeliveryQuarantineQueue)"
[[ -n "$RETRY_QUEUE_URL" && -n "$QUARANTINE_QUEUE_URL" && -n "$DELIVERY_QUEUE_URL" && -n "$DELIVERY_QUARANTINE_QUEUE_URL" ]] ||
    die "queue URLs missing from: $queues"
export RETRY_QUEUE_URL QUARANTINE_QUEUE_URL DELIVERY_QUEUE_URL DELIVERY_QUARANTINE_QUEUE_URL
# Bodies above the inline limit (8 KiB) go to the emulator's S3, as to BodyBucket in AWS.
BODY_BUCKET="webhook-bodies-local"
python scripts/bucket_from_template.py create --bucket-name "$BODY_BUCKET" --endpoint-url "$AWS_ENDPOINT_URL" ||
    die "could not create the body bucket $BODY_BUCKET from template.yaml"
export BODY_BUCKET
log "bucket $BODY_BUCKET created for bodies above 8 KiB (BODY_BUCKET)"
# Destinations' signing secrets are encrypted in the table with a key of the emulator's KMS, as
# with DestinationSecretsKey in AWS (inboxctl encrypts, the deliver function decrypts).
DESTINATION_SECRETS_KEY="$(python -c 'import boto3, sys
kms = boto3.client("kms", endpoint_url=sys.argv[1], region_name="us-east-1")
print(kms.create_key(Description="webhook-ingestor local destination secrets")["KeyMetadata"]["Arn"])' "$AWS_ENDPOINT_URL")" ||
    die "could not create the destination secrets key in the emulator's KMS"
export DESTINATION_SECRETS_KEY
log "KMS key $DESTINATION_SECRETS_KEY created for destination secrets (DESTINATION_SECRETS_KEY)"
# Deliveries go to the local listener: loopback and plain http:// allowed (never in the template).
export DELIVERY_ALLOW_LOOPBACK=true
log "queues $RETRY_QUEUE and $QUARANTINE_QUEUE (its dead-letter queue) created from template.yaml"
# Processing settings: the template's attempts and lease, but short retries so a retry shows
# within seconds (deployed defaults: BackoffBaseMs 2000, BackoffCapMs 900000).
export MAX_ATTEMPTS=5 LEASE_MS=60000 BACKOFF_BASE_MS=1000 BACKOFF_CAP_MS=60000
# The template's concurrency: 10 records of a batch at once, and the template's
# ParallelizationFactor and MaximumConcurrency in scripts/local_pipeline.py.
export PROCESS_CONCURRENCY=10
# The local email providers' sources (local/sources.json) move wallet money too.
export WALLET_EMAIL_SOURCES="ses=ses,sendgrid=sendgrid,mailgun=mailgun,postmark=postmark,resend=resend"

mkdir -p "$STATE_DIR"
DEV_ENV_SH="$STATE_DIR/dev-env-$MOTO_PORT.sh"
{
    echo "# written by scripts/dev.sh: the local stack's settings, for inboxctl / the AWS CLI"
    for v in AWS_ENDPOINT_URL AWS_ENDPOINT_URL_DYNAMODB AWS_ENDPOINT_URL_DYNAMODB_STREAMS \
        AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY TABLE_NAME \
        RETRY_QUEUE_URL QUARANTINE_QUEUE_URL DELIVERY_QUEUE_URL BODY_BUCKET DESTINATION_SECRETS_KEY \
        STRIPE_API_BASE STRIPE_SECRET_KEY; do
        printf 'export %s=%q\n' "$v" "${!v}"
    done
    printf 'export AWS_DEFAULT_REGION=%q\n' "$AWS_REGION" # boto3 and the AWS CLI read this one
} >"$DEV_ENV_SH"

# ------------------------------------------------------------------ 4. the function host
# single quotes: the env-file parser rejects an unquoted value containing '=' (info,shared=debug)
printf "RUST_LOG='%s'\n" "$FUNCTION_RUST_LOG" >"$STATE_DIR/dev.env"
# The functions are the template's (Metadata.BuildProperties.Binary): ingest, process, reaper, ...
functions="$(python - <<'PY'
import sys
sys.path.insert(0, "scripts")
from queues_from_template import load_template
res = load_template("template.yaml").get("Resources") or {}
print(" ".join(r["Metadata"]["BuildProperties"]["Binary"] for r in res.values()
               if r.get("Type") == "AWS::Serverless::Function"
               and "Binary" in ((r.get("Metadata") or {}).get("BuildProperties") or {})))
PY
)" || die "could not read the functions from template.yaml"
[[ -n "$functions" ]] || die "template.yaml names no function binary (Metadata.BuildProperties.Binary)"
# cargo's target directory (CARGO_TARGET_DIR or the workspace's target/), for inboxctl's binary.
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')" ||
    die "cargo metadata failed"
log "building inboxctl"
cargo build --bin inboxctl || die "inboxctl does not build"
# The function host (scripts/lambda_local.py, not cargo lambda watch: docs/local-stack.md, "The
# function host"): builds each function (`cargo build --bin <name>`: one build per binary, as
# cargo unifies features per build), serves them on 127.0.0.1:$LAMBDA_PORT, each function up to
# DEV_LAMBDA_CONCURRENCY processes of one invocation each, and rebuilds and restarts a function
# only when the Rust sources it is built from change.
log "starting the function host on 127.0.0.1:$LAMBDA_PORT (it builds the functions first: $functions)"
fn_args=()
for bin in $functions; do fn_args+=(--function "$bin"); done
# own process group (setsid) so cleanup can stop it together with the function processes
setsid python scripts/lambda_local.py --port "$LAMBDA_PORT" "${fn_args[@]}" \
    --env-file "$STATE_DIR/dev.env" --state-dir "$STATE_DIR" </dev/null &
WATCH_PID=$!

# a cold build of every function takes minutes; the host listens once they are built
until port_in_use "$LAMBDA_PORT"; do
    kill -0 "$WATCH_PID" 2>/dev/null || { wait "$WATCH_PID" || true; die "the function host exited"; }
    sleep 0.2
done

# ------------------------------------------------------------------ 5. the event sources
lambda_url="http://127.0.0.1:$LAMBDA_PORT"
# own process group too; it also exits by itself if this script disappears
setsid python scripts/local_pipeline.py --lambda-url "$lambda_url" --table "InboxTable=$TABLE" \
    --queue "RetryQueue=$RETRY_QUEUE_URL" --queue "QuarantineQueue=$QUARANTINE_QUEUE_URL" \
    --queue "DeliveryQueue=$DELIVERY_QUEUE_URL" --queue "DeliveryQuarantineQueue=$DELIVERY_QUARANTINE_QUEUE_URL" </dev/null &
PIPELINE_PID=$!

# ------------------------------------------------------------------ 6. a local receiver
INBOXCTL="$TARGET_DIR/debug/inboxctl"
LISTEN_SECRET="$(python -c 'import base64, os; print("whsec_" + base64.b64encode(os.urandom(32)).decode())')"
# The secret goes by environment, not on a command line (where the process list shows it).
INBOXCTL_SECRET="$LISTEN_SECRET" setsid "$INBOXCTL" listen --port "$LISTEN_PORT" </dev/null &
LISTEN_PID=$!
INBOXCTL_SECRET="$LISTEN_SECRET" "$INBOXCTL" dest add dev-listener \
    --url "http://127.0.0.1:$LISTEN_PORT/webhooks" --pattern '*' \
    --allow-http --operator dev.sh >/dev/null ||
    die "could not add the destination dev-listener"
log "destination dev-listener: every event, delivered to inboxctl listen on 127.0.0.1:$LISTEN_PORT"

# ------------------------------------------------------------------ 7. the operator console
setsid "$INBOXCTL" console --port "$CONSOLE_PORT" </dev/null >"$STATE_DIR/console.log" 2>&1 &
CONSOLE_PID=$!
deadline=$((SECONDS + 20))
until grep -q '^console: ' "$STATE_DIR/console.log" 2>/dev/null; do
    kill -0 "$CONSOLE_PID" 2>/dev/null || die "inboxctl console exited: $(cat "$STATE_DIR/console.log")"
    ((SECONDS < deadline)) || die "inboxctl console did not listen on 127.0.0.1:$CONSOLE_PORT within 20s"
    sleep 0.2
done
CONSOLE_URL="$(sed -n 's/^console: //p' "$STATE_DIR/console.log" | head -1)"
log "operator console on $CONSOLE_URL (log ${STATE_DIR#"$ROOT"/}/console.log)"

base="$lambda_url/lambda-url/ingest/webhooks"
sources="$(python -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])))' "$SOURCES_JSON")"
cat >&2 <<EOF

  ================================================================================
  webhook pipeline running locally
    webhook URL   $base/<source>
    sources       $sources
    functions     $functions
    wallet API    $lambda_url/lambda-url/wallet-api/wallets/<tenant>  (unauthenticated on loopback)
                  $lambda_url/2015-03-31/functions/<name>/invocations
    pipeline      table stream (INSERT sk=MSG) -> process; retry queue -> process;
                  scheduled functions (reaper, ...): at start, then on their schedule
                  (scripts/local_pipeline.py plays template.yaml's event sources)
    table         $TABLE on DynamoDB Local $AWS_ENDPOINT_URL_DYNAMODB
    queues        $RETRY_QUEUE_URL
                  $QUARANTINE_QUEUE_URL  (dead-letter)
    secrets       local/secrets.json
    console       $CONSOLE_URL  (inboxctl console: events, quarantine, destinations, wallets)
    stripe        $STRIPE_API_BASE  (the Stripe stand-in: STRIPE_API_BASE, key $STRIPE_SECRET_KEY;
                  webhooks to $base/stripe; log ${EMU_LOGFILE#"$ROOT"/})

  wallet API (docs/wallet-api.md; unauthenticated here, on loopback only: in AWS the IAM
  authorizer lets only SigV4-signed calls through):
    $lambda_url/lambda-url/wallet-api/wallets/<tenant>           GET: the balance
    $lambda_url/lambda-url/wallet-api/wallets/<tenant>/holds     POST, Idempotency-Key: a hold
    curl -s $lambda_url/lambda-url/wallet-api/wallets/acme

  send a signed Stripe test event (in another terminal):
    .venv/bin/python scripts/send_stripe_example.py $base/stripe
    .venv/bin/python scripts/send_stripe_example.py $base/stripe --repeat 3   # duplicates

  every processed or ignored event is delivered, signed, to the listener (its lines: #1 … → 200);
  the deliveries and their attempts:
    cargo run -q -p inboxctl -- deliveries list
    cargo run -q -p inboxctl -- stats      # per destination: success rate, p50/p99 latency

  see the result within a second: processed, ignored (no handler for the type) or failed
  (quarantined; e.g. the example's tenant "acme" has no wallet until you create it, see docs/wallet.md):
    . ${DEV_ENV_SH#"$ROOT"/}   # the local stack's AWS_ENDPOINT_URL, TABLE_NAME, queue URLs
    cargo run -q -p inboxctl -- list
    cargo run -q -p inboxctl -- show stripe <event id>

  autopay against the stand-in: a saved card for a tenant (setup_intent.succeeded to ingest),
  then an off-session charge (payment_intent.succeeded to ingest):
    .venv/bin/python scripts/autopay_demo.py setup acme
    .venv/bin/python scripts/autopay_demo.py charge acme --amount 2000 --currency usd

  Ctrl-C stops the pipeline, the function host, the Stripe stand-in, DynamoDB Local and moto.
  ================================================================================

EOF

# Returns when either exits, or early when INT/TERM arrives (then the traps run cleanup).
wait -n "$WATCH_PID" "$PIPELINE_PID" "$LISTEN_PID" || true
kill -0 "$LISTEN_PID" 2>/dev/null || die "inboxctl listen exited"
kill -0 "$PIPELINE_PID" 2>/dev/null || die "the local pipeline (scripts/local_pipeline.py) exited"
die "the function host (scripts/lambda_local.py) exited"
