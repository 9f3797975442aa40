#!/usr/bin/env bash
# Start/stop the local emulator of SQS, S3 and Secrets Manager (moto in server mode, through
# scripts/moto_server.py). DynamoDB and its stream are DynamoDB Local's (scripts/dynamodb_local.sh):
# this moto refuses DynamoDB requests, so a client without AWS_ENDPOINT_URL_DYNAMODB fails at once.
#
#   scripts/moto.sh start [PORT]    start moto_server on 127.0.0.1:PORT (default 5000), wait until ready
#   scripts/moto.sh stop  [PORT]    stop the instance started by `start` on that PORT
#   scripts/moto.sh status [PORT]   exit 0 if our instance on PORT is running and answering
#
# State lives in .local/: moto-PORT.pid (process id, also its process-group id) and moto-PORT.log.
# Uses the venv's python (override with MOTO_PYTHON=/path/to/python). MOTO_STATE_FILE=PATH makes
# the emulator durable across restarts (a write-ahead log; see scripts/moto_server.py).
# Readiness: polls http://127.0.0.1:PORT/moto-api/ until it answers (deadline MOTO_START_TIMEOUT, default 20 s).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="$ROOT/.local"
MOTO_PYTHON="${MOTO_PYTHON:-$ROOT/.venv/bin/python}"
LAUNCHER="$ROOT/scripts/moto_server.py"
START_TIMEOUT="${MOTO_START_TIMEOUT:-20}"

usage() {
    echo "usage: $0 start|stop|status [PORT]" >&2
    exit 2
}

cmd="${1:-}"
port="${2:-5000}"
[[ -n "$cmd" ]] || usage
[[ "$port" =~ ^[0-9]+$ ]] || { echo "moto.sh: invalid port '$port'" >&2; exit 2; }

pidfile="$STATE_DIR/moto-$port.pid"
logfile="$STATE_DIR/moto-$port.log"
url="http://127.0.0.1:$port/moto-api/"

answers() {
    curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null
}

our_pid_alive() {
    [[ -f "$pidfile" ]] || return 1
    local pid
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

port_in_use() {
    # true if anything accepts TCP connections on 127.0.0.1:$port
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

start() {
    mkdir -p "$STATE_DIR"
    if our_pid_alive; then
        if answers; then
            echo "moto already running on 127.0.0.1:$port (pid $(cat "$pidfile"))"
            return 0
        fi
        echo "moto.sh: stale moto (pid $(cat "$pidfile")) on port $port does not answer; stopping it" >&2
        stop
    fi
    rm -f "$pidfile"
    if port_in_use; then
        echo "moto.sh: something else already listens on 127.0.0.1:$port; pick another port (scripts/moto.sh start PORT)" >&2
        exit 1
    fi
    if ! "$MOTO_PYTHON" -c 'import moto.server' 2>/dev/null; then
        echo "moto.sh: moto is not installed for $MOTO_PYTHON; run 'make venv' first" >&2
        exit 1
    fi

    # setsid: own session and process group (pgid == pid) so `stop` can kill the whole group.
    local durable=()
    [[ -n "${MOTO_STATE_FILE:-}" ]] && durable=(--state-file "$MOTO_STATE_FILE")
    setsid "$MOTO_PYTHON" "$LAUNCHER" -H 127.0.0.1 -p "$port" "${durable[@]}" >"$logfile" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$pidfile"

    local deadline=$((SECONDS + START_TIMEOUT))
    until answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "moto.sh: moto_server exited during startup; last log lines ($logfile):" >&2
            tail -n 20 "$logfile" >&2 || true
            rm -f "$pidfile"
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            echo "moto.sh: moto_server did not answer on $url within ${START_TIMEOUT}s; log: $logfile" >&2
            tail -n 20 "$logfile" >&2 || true
            stop
            exit 1
        fi
        sleep 0.1
    done
    echo "moto ready on http://127.0.0.1:$port (pid $pid, log $logfile)"
}

stop() {
    if [[ ! -f "$pidfile" ]]; then
        echo "moto.sh: no moto started by this script on port $port ($pidfile missing)" >&2
        return 0
    fi
    local pid
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        # pid is the process-group leader (setsid): signal the group, fall back to the pid.
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 5))
        while kill -0 "$pid" 2>/dev/null; do
            if ((SECONDS >= deadline)); then
                kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.1
        done
        echo "moto on port $port stopped (pid $pid)"
    fi
    rm -f "$pidfile"
}

status() {
    if our_pid_alive && answers; then
        echo "moto running on 127.0.0.1:$port (pid $(cat "$pidfile"))"
    else
        echo "moto not running on port $port (as started by this script)"
        return 1
    fi
}

case "$cmd" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) usage ;;
esac
