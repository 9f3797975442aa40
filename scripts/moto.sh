#!/usr/bin/env bash
# Start/stop the local emulator of SQS, S3 and Secrets Manager (moto in server mode, through
# scripts/moto_server.py). DynamoDB and its stream are DynamoDB Local's (scripts/dynamodb_local.sh):
# this moto refuses DynamoDB requests, so a client without AWS_ENDPOINT_URL_DYNAMODB fails at once.
#
#   scripts/moto.sh start [PORT]    start moto_server on 127.0.0.1:PORT (default 5000), wait until ready
#   scripts/moto.sh stop  [PORT]    stop the instance started by `start` on that PORT
#   scripts/moto.sh status [PORT]   exit 0 if our instance on PORT is running and answering
#
# Start, stop, status and the readiness poll are scripts/lib/emulator.sh's (shared with
# scripts/dynamodb_local.sh). State lives in .local/: moto-PORT.pid (process id, also its
# process-group id) and moto-PORT.log.
# Uses the venv's python (override with MOTO_PYTHON=/path/to/python). MOTO_STATE_FILE=PATH makes
# the emulator durable across restarts (a write-ahead log; see scripts/moto_server.py).
# Readiness: polls http://127.0.0.1:PORT/moto-api/ until it answers (deadline MOTO_START_TIMEOUT, default 20 s).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="$ROOT/.local"
MOTO_PYTHON="${MOTO_PYTHON:-$ROOT/.venv/bin/python}"
LAUNCHER="$ROOT/scripts/moto_server.py"
# shellcheck source=lib/emulator.sh
. "$ROOT/scripts/lib/emulator.sh"

usage() {
    echo "usage: $0 start|stop|status [PORT]" >&2
    exit 2
}

cmd="${1:-}"
port="${2:-5000}"
[[ -n "$cmd" ]] || usage
[[ "$port" =~ ^[0-9]+$ ]] || { echo "moto.sh: invalid port '$port'" >&2; exit 2; }

EMU_NAME="moto"
EMU_TAG="moto.sh"
EMU_PORT="$port"
EMU_PIDFILE="$STATE_DIR/moto-$port.pid"
EMU_LOGFILE="$STATE_DIR/moto-$port.log"
EMU_URL="http://127.0.0.1:$port/moto-api/"
EMU_START_TIMEOUT="${MOTO_START_TIMEOUT:-20}"
EMU_STOP_TIMEOUT=5
EMU_CURL_FAIL=1

emu_prepare() {
    if ! "$MOTO_PYTHON" -c 'import moto.server' 2>/dev/null; then
        echo "moto.sh: moto is not installed for $MOTO_PYTHON; run 'make venv' first" >&2
        exit 1
    fi
    EMU_CMD=("$MOTO_PYTHON" "$LAUNCHER" -H 127.0.0.1 -p "$port")
    # MOTO_STATE_FILE: durable across restarts (a write-ahead log; see scripts/moto_server.py).
    [[ -n "${MOTO_STATE_FILE:-}" ]] && EMU_CMD+=(--state-file "$MOTO_STATE_FILE")
    return 0
}

case "$cmd" in
    start) emu_start ;;
    stop) emu_stop ;;
    status) emu_status ;;
    *) usage ;;
esac
