# shellcheck shell=bash
# Start/stop/status of one local server on 127.0.0.1:PORT, shared by scripts/moto.sh,
# scripts/dynamodb_local.sh and scripts/dev.sh (the Stripe stand-in). Sourced, never run.
#
# The caller sets, before calling emu_start / emu_stop / emu_status:
#   EMU_NAME           how messages name it ("moto", "DynamoDB Local")
#   EMU_TAG            how errors are prefixed ("moto.sh")
#   EMU_PORT           the port (digits)
#   EMU_PIDFILE        the process id of our instance (also its process-group id: setsid)
#   EMU_LOGFILE        its stdout and stderr
#   EMU_URL            what answers once it is ready
#   EMU_START_TIMEOUT  seconds to wait for it to answer
#   EMU_STOP_TIMEOUT   seconds between TERM and KILL
#   EMU_CURL_FAIL      1: only a 2xx/3xx answer counts as ready (curl -f); 0: any HTTP answer
#   EMU_CWD            the directory it runs in (optional, default: the caller's)
# and defines:
#   emu_prepare        checks what it needs and sets the array EMU_CMD (the command line); exits
#                      on a missing prerequisite. Runs after the port was found free.
#   emu_ready          (optional) runs once it answers, before `start` returns (a warm-up)
#
# State: only EMU_PIDFILE and EMU_LOGFILE. `stop` signals the process group started by `start`
# and nothing else, so emulators on other ports (other test runs, other people's) are never
# touched.

emu_answers() {
    local fail=()
    ((${EMU_CURL_FAIL:-1})) && fail=(-f)
    curl "${fail[@]}" -s -o /dev/null --max-time 1 "$EMU_URL" 2>/dev/null
}

emu_pid() {
    cat "$EMU_PIDFILE" 2>/dev/null || true
}

emu_our_pid_alive() {
    [[ -f "$EMU_PIDFILE" ]] || return 1
    local pid
    pid="$(emu_pid)"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

# True if anything accepts TCP connections on 127.0.0.1:PORT (default EMU_PORT).
emu_port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/${1:-$EMU_PORT}") 2>/dev/null
}

emu_start() {
    mkdir -p "$(dirname "$EMU_PIDFILE")" "$(dirname "$EMU_LOGFILE")"
    if emu_our_pid_alive; then
        if emu_answers; then
            echo "$EMU_NAME already running on 127.0.0.1:$EMU_PORT (pid $(emu_pid))"
            return 0
        fi
        echo "$EMU_TAG: stale $EMU_NAME (pid $(emu_pid)) on port $EMU_PORT does not answer; stopping it" >&2
        emu_stop
    fi
    rm -f "$EMU_PIDFILE"
    if emu_port_in_use; then
        echo "$EMU_TAG: something else already listens on 127.0.0.1:$EMU_PORT; pick another port" >&2
        exit 1
    fi
    EMU_CMD=()
    emu_prepare
    ((${#EMU_CMD[@]})) || { echo "$EMU_TAG: no command to start (emu_prepare set no EMU_CMD)" >&2; exit 1; }

    # exec setsid in the background subshell: $! is the server itself, leader of its own session
    # and process group (pgid == pid), so `stop` can signal the whole group.
    (cd "${EMU_CWD:-.}" && exec setsid "${EMU_CMD[@]}") >"$EMU_LOGFILE" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$EMU_PIDFILE"

    local deadline=$((SECONDS + EMU_START_TIMEOUT))
    until emu_answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$EMU_TAG: $EMU_NAME exited during startup; last log lines ($EMU_LOGFILE):" >&2
            tail -n 20 "$EMU_LOGFILE" >&2 || true
            rm -f "$EMU_PIDFILE"
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            echo "$EMU_TAG: $EMU_NAME did not answer on $EMU_URL within ${EMU_START_TIMEOUT}s; log: $EMU_LOGFILE" >&2
            tail -n 20 "$EMU_LOGFILE" >&2 || true
            emu_stop
            exit 1
        fi
        sleep 0.1
    done
    if declare -F emu_ready >/dev/null; then
        emu_ready
    fi
    echo "$EMU_NAME ready on http://127.0.0.1:$EMU_PORT (pid $pid, log $EMU_LOGFILE)"
}

emu_stop() {
    if [[ ! -f "$EMU_PIDFILE" ]]; then
        echo "$EMU_TAG: no $EMU_NAME started by this script on port $EMU_PORT ($EMU_PIDFILE missing)" >&2
        return 0
    fi
    local pid
    pid="$(emu_pid)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        # pid is the process-group leader (setsid): signal the group, fall back to the pid.
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + EMU_STOP_TIMEOUT))
        while kill -0 "$pid" 2>/dev/null; do
            if ((SECONDS >= deadline)); then
                kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.1
        done
        echo "$EMU_NAME on port $EMU_PORT stopped (pid $pid)"
    fi
    rm -f "$EMU_PIDFILE"
}

emu_status() {
    if emu_our_pid_alive && emu_answers; then
        echo "$EMU_NAME running on 127.0.0.1:$EMU_PORT (pid $(emu_pid))"
    else
        echo "$EMU_NAME not running on port $EMU_PORT (as started by this script)"
        return 1
    fi
}
