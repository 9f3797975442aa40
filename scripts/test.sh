#!/usr/bin/env bash
# `make test`: every test, from a fresh machine, no AWS account and no Docker.
#
#  1. ensures .venv (make venv: all pins in scripts/requirements-dev.txt);
#  2. builds the release Lambda artifact target/lambda/ingest/bootstrap (make build-lambda),
#     which a smoke test runs;
#  3. starts moto on a free port (MOTO_PORT, else 5055 if free, else any free port);
#  4. runs `cargo test --workspace --no-fail-fast` (extra arguments to this script go to cargo test) with
#       AWS_ENDPOINT_URL=http://127.0.0.1:<port> AWS_REGION=us-east-1
#       AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
#       INBOX_VENV=<abs .venv> INGEST_BOOTSTRAP=<abs target/lambda/ingest/bootstrap>
#  5. runs cfn-lint, `sam validate --lint` and scripts/check_template.py (least privilege, secret
#     values, routes, alarms: what SAM would deploy) on template.yaml, and the scripts' own unit
#     tests (pytest scripts/tests);
#  6. checks rustfmt and clippy (-D warnings);
#  7. always stops moto (also on failure or Ctrl-C).
# Exit status: cargo test's status if it failed, else the template and script checks' status.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
MAKE="${MAKE:-make}"

log() { printf '\033[1;34m[test]\033[0m %s\n' "$*" >&2; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ------------------------------------------------------------------ 1-2. venv, release artifact
"$MAKE" --no-print-directory venv
log "building the release Lambda artifact"
"$MAKE" --no-print-directory build-lambda
BOOTSTRAP="$ROOT/target/lambda/ingest/bootstrap"
[[ -x "$BOOTSTRAP" ]] || { log "missing $BOOTSTRAP after build-lambda"; exit 1; }

# ------------------------------------------------------------------ 3. moto
if [[ -n "${MOTO_PORT:-}" ]]; then
    port="$MOTO_PORT"
elif ! port_in_use 5055; then
    port=5055
else
    port="$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
fi

MOTO_STARTED=0
cleanup() {
    local rc=$?
    trap - INT TERM EXIT
    if ((MOTO_STARTED)); then "$ROOT/scripts/moto.sh" stop "$port" >&2 || true; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

MOTO_STARTED=1
"$ROOT/scripts/moto.sh" start "$port" >&2

# ------------------------------------------------------------------ 4. cargo test
log "cargo test --workspace (moto on 127.0.0.1:$port)"
test_rc=0
env \
    AWS_ENDPOINT_URL="http://127.0.0.1:$port" \
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
