#!/usr/bin/env python3
"""Play the AWS event sources of template.yaml locally: `make dev` runs the whole pipeline with it.

Without an AWS account (and without Docker) there is no Lambda event source mapping and no
scheduler, so this daemon does their work against the local emulators (DynamoDB Local for the
table's stream, moto for the queues) and the function host (scripts/lambda_local.py):

  stream -> process   reads the table's stream (DescribeTable, DescribeStream, GetShardIterator,
                      GetRecords every ~250 ms when idle), keeps the records that pass the event's
                      FilterCriteria, and invokes the function with Lambda-shaped DynamoDB stream
                      batches (at most BatchSize records), ParallelizationFactor batches of a shard
                      at once: records are split into that many lanes by partition key (one key
                      stays in order in its lane), each lane with its own batch, retries and
                      checkpoint, as Lambda does. ReportBatchItemFailures is honoured: the lane
                      resumes at the lowest reported sequence number; a function error retries the
                      batch (halved each time with BisectBatchOnFunctionError) with a short
                      backoff; after MaximumRetryAttempts the batch is skipped and, with an
                      OnFailure destination, a Lambda-shaped failure record (shard and sequence
                      numbers only) is sent to that queue. When the emulator goes away (restarted,
                      paused past a timeout), the poller asks for new shard iterators from where
                      it got to (the first record not yet handled), as Lambda does from its
                      checkpoint: records handled in other lanes may be delivered again, none is
                      skipped.
  queue -> process    long-polls the queue (ReceiveMessage, up to BatchSize <= 10) with
                      ScalingConfig.MaximumConcurrency pollers (5 without one), invokes the
                      function with a Lambda-shaped SQS batch and deletes every message not listed
                      in batchItemFailures; failed ones come back after the queue's visibility
                      timeout and the queue's redrive policy (moto applies it) moves them to the
                      dead-letter queue after maxReceiveCount receives.
  schedule -> reaper  invokes the function once at start and then at the rate of the event's
                      ScheduleExpression (`rate(1 minute)`), with a scheduled-event-shaped payload.

Everything is read from template.yaml: which function (its cargo binary, Metadata.BuildProperties
.Binary) each event source feeds, StartingPosition, BatchSize, FilterCriteria, FunctionResponse
Types, BisectBatchOnFunctionError, MaximumRetryAttempts, DestinationConfig.OnFailure, the schedule.
Not emulated: MaximumBatchingWindowInSeconds (batches go out as soon as they are read), the
scaling of SQS pollers (MaximumConcurrency pollers from the start), MaximumRecordAgeInSeconds
(records of any age are delivered).

Functions are invoked through the function host's Invoke API:
    POST {lambda_url}/2015-03-31/functions/<binary>/invocations

Usage (scripts/dev.sh starts it; Ctrl-C / SIGTERM stops it):
    local_pipeline.py --lambda-url http://127.0.0.1:9000 \\
        --table InboxTable=webhook-inbox-local \\
        --queue RetryQueue=<url> --queue QuarantineQueue=<url> [--function BINARY …] \\
        [--endpoint-url http://127.0.0.1:5000] [--dynamodb-endpoint-url http://127.0.0.1:8000] \\
        [--region us-east-1] [--template template.yaml]

Each resource the template's event sources name must be mapped with --table/--queue. Logs one
line per invocation to stderr (records, failures, duration); never the payloads. Exits when its
parent process goes away (so a killed `make dev` does not leave it polling).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from queues_from_template import Resolver, _intrinsic, load_template  # noqa: E402

DEFAULT_TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"
ACCOUNT = "123456789012"  # moto's default account

STOP = threading.Event()
IDLE_POLL_S = 0.25          # stream poll interval when there is nothing to deliver
STREAM_RETRY_BASE_S = 0.5   # backoff between retries of a failed stream batch: 0.5, 1, 2, 4, 4, ...
STREAM_RETRY_CAP_S = 4.0
SQS_WAIT_S = 2              # ReceiveMessage long poll
# An invocation waits for the function's Timeout (template.yaml) plus this allowance: the function
# host answers every invocation (its own timeouts, 429/503 with Retry-After when its queue is full
# or a process is not free within a minute); this bound is the last resort if it does not.
INVOKE_GRACE_S = 60.0
LAMBDA_DEFAULT_TIMEOUT_S = 3.0
DESCRIBE_EVERY_S = 30.0     # re-describe the stream to find new shards


def log(msg: str) -> None:
    ts = dt.datetime.now().strftime("%H:%M:%S.%f")[:-3]
    print(f"\033[1;35m[pipeline]\033[0m {ts} {msg}", file=sys.stderr, flush=True)


def sleep(seconds: float) -> None:
    STOP.wait(seconds)


# ------------------------------------------------------------------ template


@dataclass
class StreamSource:
    name: str                 # "<Function>.<Event>"
    function: str             # cargo binary
    timeout_s: float          # the function's Timeout
    table: str                # local table name
    starting_position: str
    batch_size: int
    filters: list[dict[str, Any]]
    report_failures: bool
    bisect: bool
    max_retries: int          # -1: until the record expires (here: forever)
    on_failure_url: str | None
    parallelization: int = 1  # concurrent batches per shard (ParallelizationFactor)


@dataclass
class QueueSource:
    name: str
    function: str
    timeout_s: float
    queue_url: str
    batch_size: int
    report_failures: bool
    concurrency: int = 5      # pollers (ScalingConfig.MaximumConcurrency; Lambda starts with 5)


@dataclass
class Schedule:
    name: str
    function: str
    timeout_s: float
    period_s: float
    expression: str


@dataclass
class Sources:
    streams: list[StreamSource] = field(default_factory=list)
    queues: list[QueueSource] = field(default_factory=list)
    schedules: list[Schedule] = field(default_factory=list)


def _target(value: Any, attr: str, where: str) -> str:
    """The logical id in `!GetAtt X.<attr>` (or `!Ref X`)."""
    fn = _intrinsic(value)
    if fn and fn[0] == "Fn::GetAtt":
        arg = fn[1]
        lid, _, a = arg.partition(".") if isinstance(arg, str) else (arg[0], ".", arg[1])
        if a == attr:
            return lid
    if fn and fn[0] == "Ref":
        return fn[1]
    raise ValueError(f"{where}: expected !GetAtt <Resource>.{attr}, got {value!r}")


def _check_pattern(pattern: Any, where: str) -> None:
    """Only the subset this emulation implements: nested objects and lists of exact values."""
    if not isinstance(pattern, dict):
        raise ValueError(f"{where}: a filter pattern level must be an object")
    for k, v in pattern.items():
        if isinstance(v, dict):
            _check_pattern(v, f"{where}.{k}")
        elif isinstance(v, list):
            bad = [x for x in v if isinstance(x, (dict, list))]
            if bad:
                raise ValueError(
                    f"{where}.{k}: content filter {bad[0]!r} is not supported by local_pipeline.py "
                    "(exact values only); extend matches()"
                )
        else:
            raise ValueError(f"{where}.{k}: pattern values must be lists or objects")


def matches(pattern: dict[str, Any], event: Any) -> bool:
    """EventBridge-style matching, exact-value subset: every key present, values among the listed."""
    if not isinstance(event, dict):
        return False
    for key, want in pattern.items():
        if key not in event:
            return False
        got = event[key]
        if isinstance(want, dict):
            if not matches(want, got):
                return False
        elif isinstance(got, list):  # an array matches if any element does
            if not any(_eq(g, w) for g in got for w in want):
                return False
        elif not any(_eq(got, w) for w in want):
            return False
    return True


def passes(filters: list[dict[str, Any]], event: Any) -> bool:
    """Whether an event source's FilterCriteria let `event` through: any one pattern matching (no
    filters: everything)."""
    return not filters or any(matches(f, event) for f in filters)


def _eq(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b or (
        isinstance(a, (int, float)) and isinstance(b, (int, float))
        and not isinstance(a, bool) and not isinstance(b, bool) and a == b
    )


_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")


def _period(expr: str) -> float:
    m = _RATE.match(expr.strip())
    if not m:
        raise ValueError(f"schedule {expr!r}: only rate(N unit) is emulated")
    n, unit = int(m.group(1)), m.group(2).rstrip("s")
    return n * {"minute": 60, "hour": 3600, "day": 86400}[unit]


def read_sources(template: Path, tables: dict[str, str], queues: dict[str, str],
                 only: set[str] | None = None) -> Sources:
    doc = load_template(template)
    resolve = Resolver(doc)
    out = Sources()
    global_timeout = ((doc.get("Globals") or {}).get("Function") or {}).get("Timeout", LAMBDA_DEFAULT_TIMEOUT_S)
    for fid, res in (doc.get("Resources") or {}).items():
        if not isinstance(res, dict) or res.get("Type") != "AWS::Serverless::Function":
            continue
        binary = (((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary"))
        if only and binary not in only:
            continue
        timeout = float(resolve((res.get("Properties") or {}).get("Timeout", global_timeout), f"{fid}.Timeout"))
        events = (res.get("Properties") or {}).get("Events") or {}
        for eid, ev in events.items():
            where = f"{fid}.Events.{eid}"
            etype = ev.get("Type")
            if etype not in ("DynamoDB", "SQS", "Schedule", "ScheduleV2"):
                continue
            if not binary:
                raise ValueError(f"{fid}: Metadata.BuildProperties.Binary (the cargo binary) is missing")
            props = ev.get("Properties") or {}
            enabled = resolve(props.get("Enabled", True), f"{where}.Enabled")
            state = resolve(props.get("State", "ENABLED"), f"{where}.State")  # ScheduleV2
            if enabled in (False, "false", "False") or state == "DISABLED":
                continue
            rtypes = resolve(props.get("FunctionResponseTypes") or [], f"{where}.FunctionResponseTypes")
            if etype == "DynamoDB":
                table = _target(props.get("Stream"), "StreamArn", f"{where}.Stream")
                if table not in tables:
                    raise ValueError(f"{where}: map the table {table} with --table {table}=NAME")
                filters = []
                for i, f in enumerate((resolve(props.get("FilterCriteria") or {}, where)).get("Filters") or []):
                    pattern = json.loads(f["Pattern"]) if isinstance(f["Pattern"], str) else f["Pattern"]
                    _check_pattern(pattern, f"{where}.FilterCriteria.Filters[{i}]")
                    filters.append(pattern)
                dest = ((props.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
                on_failure = None
                if dest is not None:
                    dlid = _target(dest, "Arn", f"{where}.DestinationConfig.OnFailure.Destination")
                    on_failure = queues.get(dlid)
                    if on_failure is None:
                        log(f"warning: {where}: on-failure destination {dlid} is not mapped (--queue); failures are only logged")
                out.streams.append(StreamSource(
                    name=f"{fid}.{eid}",
                    function=binary,
                    timeout_s=timeout,
                    table=tables[table],
                    starting_position=resolve(props.get("StartingPosition", "LATEST"), where),
                    batch_size=int(resolve(props.get("BatchSize", 100), where)),
                    filters=filters,
                    report_failures="ReportBatchItemFailures" in rtypes,
                    bisect=resolve(props.get("BisectBatchOnFunctionError", False), where) in (True, "true"),
                    max_retries=int(resolve(props.get("MaximumRetryAttempts", -1), where)),
                    on_failure_url=on_failure,
                    parallelization=max(1, int(resolve(props.get("ParallelizationFactor", 1), where))),
                ))
            elif etype == "SQS":
                q = _target(props.get("Queue"), "Arn", f"{where}.Queue")
                if q not in queues:
                    raise ValueError(f"{where}: map the queue {q} with --queue {q}=URL")
                out.queues.append(QueueSource(
                    name=f"{fid}.{eid}",
                    function=binary,
                    timeout_s=timeout,
                    queue_url=queues[q],
                    batch_size=min(10, int(resolve(props.get("BatchSize", 10), where))),
                    report_failures="ReportBatchItemFailures" in rtypes,
                    concurrency=max(1, int(resolve(
                        (props.get("ScalingConfig") or {}).get("MaximumConcurrency", 5), where))),
                ))
            else:
                expr = resolve(props.get("Schedule") or props.get("ScheduleExpression"), where)
                out.schedules.append(Schedule(f"{fid}.{eid}", binary, timeout, _period(expr), expr))
    return out


# ------------------------------------------------------------------ invoking functions


class InvokeError(Exception):
    """The invocation failed: function error, crash, timeout, throttled, or the function host unreachable."""


class Invoker:
    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")

    def __call__(self, function: str, event: dict[str, Any], timeout_s: float) -> Any:
        url = f"{self.base}/2015-03-31/functions/{function}/invocations"
        wait = timeout_s + INVOKE_GRACE_S
        req = urllib.request.Request(
            url, data=json.dumps(event).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=wait) as resp:
                body = resp.read()
                func_error = resp.headers.get("X-Amz-Function-Error")
        except TimeoutError:
            raise InvokeError(
                f"no response within {wait:.0f} s (Timeout {timeout_s:.0f} s + {INVOKE_GRACE_S:.0f} s to build): "
                "the function timed out, failed to start, or is still compiling; see the function host's output"
            ) from None
        except urllib.error.HTTPError as e:
            raise InvokeError(f"HTTP {e.code}: {_error_text(e.read())}") from None
        except (urllib.error.URLError, OSError) as e:
            raise InvokeError(f"cannot reach the function host at {self.base}: {getattr(e, 'reason', e)}") from None
        try:
            result = json.loads(body) if body.strip() else None
        except ValueError:
            raise InvokeError("the function's response is not JSON") from None
        if func_error or (isinstance(result, dict) and "errorType" in result and "errorMessage" in result):
            raise InvokeError(f"function error: {_error_text(body)}")
        return result


def _error_text(body: bytes) -> str:
    """errorType: errorMessage (truncated); never the event."""
    try:
        j = json.loads(body)
        if "errorType" in j or "errorMessage" in j:
            text = f"{j.get('errorType', 'error')}: {j.get('errorMessage', '')}"
        elif "message" in j:  # the function host's own answers (no such function, 429, 503)
            text = f"{j.get('Type', 'error')}: {j['message']}"
        else:  # cargo lambda's own errors (e.g. no such binary): {"title", "detail"}
            text = f"{j.get('title', 'error')}: {j.get('detail', '')}"
    except (ValueError, AttributeError):
        text = body.decode("utf-8", "replace")
    text = " ".join(text.split())
    return text[:300] + ("…" if len(text) > 300 else "")


def failure_ids(result: Any) -> list[Any] | None:
    """Item identifiers of batchItemFailures; None if the response is not a valid report."""
    if result is None:
        return []
    if not isinstance(result, dict):
        return None
    failures = result.get("batchItemFailures")
    if failures is None:
        return []
    if not isinstance(failures, list):
        return None
    return [f.get("itemIdentifier") if isinstance(f, dict) else None for f in failures]


def stream_outcome(result: Any, seqs: list[str], report_failures: bool) -> tuple[int | None, str]:
    """How a stream batch (its records' sequence numbers, in order) ended, from the function's
    response: (None, "") when every record is done, else (the index to resume from, why). Lambda
    resumes at the lowest reported sequence number; a report it cannot use (not a report, or
    naming a record that is not in the batch) fails the whole batch."""
    ids = failure_ids(result) if report_failures else []
    if ids is None:
        return 0, "invalid batchItemFailures response: whole batch failed"
    if any(i not in seqs for i in ids):
        return 0, "batchItemFailures names an unknown or empty itemIdentifier: whole batch failed"
    if ids:
        return min(seqs.index(i) for i in ids), f"{len(ids)} reported failure(s)"
    return None, ""


def bisected_limit(batch_len: int, failed_at: int) -> int:
    """The next batch size under BisectBatchOnFunctionError: a batch split at a reported failure
    retries only its remaining records; a batch failing from its first record is halved, so a
    poison record ends up alone and is the only one skipped when retries run out."""
    retry = batch_len - failed_at
    return retry if failed_at > 0 else max(1, (retry + 1) // 2)


def queue_done(result: Any, message_ids: list[str], report_failures: bool) -> set[str] | None:
    """The messages of an SQS batch to delete (every one not reported failed), or None when the
    report is unusable (then the whole batch failed and returns after the visibility timeout)."""
    ids = failure_ids(result) if report_failures else []
    if ids is None or any(i not in message_ids for i in ids):
        return None
    return set(message_ids) - set(ids)


# ------------------------------------------------------------------ AWS clients


def client(service: str, args: argparse.Namespace):
    """A boto3 client reaching `service` at its own emulator: DynamoDB and its stream at
    --dynamodb-endpoint-url, the queues at --endpoint-url; without them boto3 reads
    $AWS_ENDPOINT_URL_DYNAMODB, $AWS_ENDPOINT_URL_DYNAMODB_STREAMS and $AWS_ENDPOINT_URL itself."""
    import boto3

    dynamodb = service in ("dynamodb", "dynamodbstreams")
    endpoint = args.dynamodb_endpoint_url if dynamodb else args.endpoint_url
    return boto3.client(service, endpoint_url=endpoint or None, region_name=args.region)


def _lambda_attr(value: dict[str, Any]) -> dict[str, Any]:
    """Low-level DynamoDB JSON from boto3 (binary as bytes) -> Lambda event JSON (binary base64)."""
    (t, v), = value.items()
    if t == "B":
        return {"B": base64.b64encode(v).decode()}
    if t == "BS":
        return {"BS": [base64.b64encode(b).decode() for b in v]}
    if t == "M":
        return {"M": {k: _lambda_attr(x) for k, x in v.items()}}
    if t == "L":
        return {"L": [_lambda_attr(x) for x in v]}
    return {t: v}


def _lambda_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _lambda_attr(v) for k, v in item.items()}


def _epoch(value: Any) -> float:
    if isinstance(value, dt.datetime):
        return int(value.timestamp())
    return value


def lambda_stream_record(rec: dict[str, Any], stream_arn: str, region: str) -> dict[str, Any]:
    d = rec["dynamodb"]
    change: dict[str, Any] = {}
    if "ApproximateCreationDateTime" in d:
        change["ApproximateCreationDateTime"] = _epoch(d["ApproximateCreationDateTime"])
    for k in ("Keys", "NewImage", "OldImage"):
        if k in d:
            change[k] = _lambda_item(d[k])
    for k in ("SequenceNumber", "SizeBytes", "StreamViewType"):
        if k in d:
            change[k] = d[k]
    out = {
        "eventID": rec["eventID"],
        "eventName": rec["eventName"],
        "eventVersion": "1.1",  # what Lambda delivers (moto's stream says 1.0)
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": change,
        "eventSourceARN": stream_arn,
    }
    if "userIdentity" in rec:
        out["userIdentity"] = {"type": rec["userIdentity"].get("Type"),
                               "principalId": rec["userIdentity"].get("PrincipalId")}
    return out


# ------------------------------------------------------------------ stream -> function


@dataclass
class Lane:
    """One of a shard's ParallelizationFactor lanes: its records in order, its own batch retries."""
    pending: list[dict[str, Any]] = field(default_factory=list)  # matching, not yet delivered
    attempts: int = 0               # failed attempts of the batch at the head of `pending`
    limit: int = 0                  # current batch size (halved by bisect)
    retry_at: float = 0.0


@dataclass
class Shard:
    shard_id: str
    iterator: str | None
    lanes: list[Lane]
    last_read: str | None = None    # sequence number of the last record read (delivered or not)
    closed: bool = False

    def pending(self) -> int:
        return sum(len(lane.pending) for lane in self.lanes)

    def resume(self) -> tuple[str, dict[str, str]] | None:
        """Where to ask for a new iterator after an error: at the first record not yet handled in
        any lane, else after the last record read; None if nothing was read yet."""
        first = [int(lane.pending[0]["dynamodb"]["SequenceNumber"]) for lane in self.lanes if lane.pending]
        if first:
            return "AT_SEQUENCE_NUMBER", {"SequenceNumber": str(min(first))}
        if self.last_read is not None:
            return "AFTER_SEQUENCE_NUMBER", {"SequenceNumber": self.last_read}
        return None


def lane_of(event: dict[str, Any], lanes: int) -> int:
    """The lane of a record: a stable hash of its keys, so one item's records stay in order."""
    keys = json.dumps(event["dynamodb"].get("Keys", {}), sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(keys).digest()[:4], "big") % lanes


class StreamPoller:
    def __init__(self, src: StreamSource, args: argparse.Namespace, invoke: Invoker) -> None:
        self.src = src
        self.args = args
        self.invoke = invoke
        self.ddb = client("dynamodb", args)
        self.streams = client("dynamodbstreams", args)
        self.sqs = client("sqs", args) if src.on_failure_url else None
        self.stream_arn: str | None = None
        self.last_arn: str | None = None
        self.shards: dict[str, Shard] = {}
        self.described_at: float | None = None
        self.label = f"{src.name} (stream -> {src.function})"
        self.pool = ThreadPoolExecutor(max_workers=src.parallelization, thread_name_prefix=src.name)

    def run(self) -> None:
        filt = " or ".join(json.dumps(f, separators=(",", ":")) for f in self.src.filters) or "none"
        log(f"{self.label}: table {self.src.table}, from {self.src.starting_position}, "
            f"batches of {self.src.batch_size}, {self.src.parallelization} at once per shard, filter {filt}")
        while not STOP.is_set():
            try:
                busy = self.step()
            except Exception as e:  # emulator restarted, table recreated, network: start over
                log(f"{self.label}: {type(e).__name__}: {e}; re-reading the stream from where it got to in 2 s")
                self.stream_arn = None
                sleep(2)
                continue
            if not busy:
                sleep(IDLE_POLL_S)

    def new_shard(self, sid: str, iterator: str | None, last_read: str | None = None) -> Shard:
        lanes = [Lane(limit=self.src.batch_size) for _ in range(self.src.parallelization)]
        return Shard(sid, iterator, lanes, last_read=last_read)

    def describe(self) -> None:
        old: dict[str, Shard] = {}
        if self.stream_arn is None:  # (re)start: find the stream, keep positions in the same stream
            table = self.ddb.describe_table(TableName=self.src.table)["Table"]
            arn = table.get("LatestStreamArn")
            if not arn:
                raise RuntimeError(f"table {self.src.table} has no stream")
            if arn == self.last_arn:
                old = self.shards
            self.stream_arn = self.last_arn = arn
            self.shards = {}
        first = self.described_at is None
        desc = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        for s in desc.get("Shards", []):
            sid = s["ShardId"]
            if sid in self.shards:
                continue
            prev = old.get(sid)
            resume = prev.resume() if prev is not None else None
            if resume is not None:
                kind, extra = resume  # after an error: from the first record not yet handled
            elif first:
                kind, extra = self.src.starting_position, {}  # shards present at start
            else:
                kind, extra = "TRIM_HORIZON", {}  # new shards (or a new stream): from their start
            it = self.streams.get_shard_iterator(
                StreamArn=self.stream_arn, ShardId=sid, ShardIteratorType=kind, **extra,
            )["ShardIterator"]
            # Pending records are read again from the resume point (their lanes start empty).
            last = prev.last_read if prev is not None and kind == "AFTER_SEQUENCE_NUMBER" else None
            self.shards[sid] = self.new_shard(sid, it, last_read=last)
        self.described_at = time.monotonic()

    def step(self) -> bool:
        if (self.stream_arn is None or self.described_at is None
                or time.monotonic() - self.described_at > DESCRIBE_EVERY_S):
            self.describe()
        busy = False
        for shard in list(self.shards.values()):
            if STOP.is_set():
                break
            if shard.pending() < self.src.batch_size * len(shard.lanes) and shard.iterator and not shard.closed:
                busy |= self.read(shard)
            now = time.monotonic()
            ready = [lane for lane in shard.lanes if lane.pending and now >= lane.retry_at]
            if ready:
                # The lanes' batches run at once (ParallelizationFactor); the shard goes on when
                # all have answered.
                for f in [self.pool.submit(self.deliver, shard, lane) for lane in ready]:
                    f.result()
                busy = True
        return busy

    def read(self, shard: Shard) -> bool:
        resp = self.streams.get_records(ShardIterator=shard.iterator, Limit=1000)
        shard.iterator = resp.get("NextShardIterator")
        if shard.iterator is None:
            shard.closed = True
        records = resp.get("Records", [])
        for rec in records:
            event = lambda_stream_record(rec, self.stream_arn, self.args.region)
            if passes(self.src.filters, event):
                shard.lanes[lane_of(event, len(shard.lanes))].pending.append(event)
            shard.last_read = event["dynamodb"]["SequenceNumber"]
        return bool(records)

    def deliver(self, shard: Shard, lane: Lane) -> None:
        batch = lane.pending[: lane.limit]
        seqs = [r["dynamodb"]["SequenceNumber"] for r in batch]
        started = time.monotonic()
        failed_at: int | None = None  # index in batch to resume from
        function_error = False        # the invocation failed (vs. reported item failures)
        error = ""
        try:
            result = self.invoke(self.src.function, {"Records": batch}, self.src.timeout_s)
            failed_at, error = stream_outcome(result, seqs, self.src.report_failures)
        except InvokeError as e:
            failed_at, function_error, error = 0, True, str(e)
        ms = (time.monotonic() - started) * 1000

        if failed_at is None:
            log(f"{self.label}: {len(batch)} record(s), 0 failures, {ms:.0f} ms")
            lane.pending = lane.pending[len(batch):]
            lane.attempts, lane.limit = 0, self.src.batch_size
            return

        if failed_at > 0:  # the records before the failure are done; the failed one heads the retry
            lane.pending = lane.pending[failed_at:]
            lane.attempts = 0
        lane.attempts += 1
        if self.src.bisect:
            lane.limit = bisected_limit(len(batch), failed_at)
        retried = lane.attempts - 1
        if 0 <= self.src.max_retries <= retried:
            failed = batch[failed_at:]
            log(f"{self.label}: {len(batch)} record(s), FAILED ({error}), {ms:.0f} ms; retries exhausted "
                f"({self.src.max_retries}): skipping {len(failed)} record(s) {seqs[failed_at]}..{seqs[-1]}"
                + (" -> on-failure destination" if self.sqs else ""))
            self.on_failure(shard, lane, failed, function_error)
            lane.pending = lane.pending[len(failed):]
            lane.attempts, lane.limit, lane.retry_at = 0, self.src.batch_size, 0.0
            return
        delay = min(STREAM_RETRY_CAP_S, STREAM_RETRY_BASE_S * 2 ** (lane.attempts - 1))
        lane.retry_at = time.monotonic() + delay
        left = "" if self.src.max_retries < 0 else f", {self.src.max_retries - retried} retries left"
        log(f"{self.label}: {len(batch)} record(s), FAILED ({error}), {ms:.0f} ms; "
            f"retrying from sequence number {seqs[failed_at]} in {delay:.1f} s{left}")

    def on_failure(self, shard: Shard, lane: Lane, failed: list[dict[str, Any]], function_error: bool) -> None:
        """The record Lambda sends to a stream's on-failure destination: metadata, no payload."""
        if not self.sqs:
            return
        first, last = failed[0]["dynamodb"], failed[-1]["dynamodb"]

        def iso(epoch: Any) -> str | None:
            if epoch is None:
                return None
            return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

        record = {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": f"arn:aws:lambda:{self.args.region}:{ACCOUNT}:function:{self.src.function}",
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": lane.attempts,
            },
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": "Unhandled" if function_error else "",
            },
            "version": "1.0",
            "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "DDBStreamBatchInfo": {
                "shardId": shard.shard_id,
                "startSequenceNumber": first["SequenceNumber"],
                "endSequenceNumber": last["SequenceNumber"],
                "approximateArrivalOfFirstRecord": iso(first.get("ApproximateCreationDateTime")),
                "approximateArrivalOfLastRecord": iso(last.get("ApproximateCreationDateTime")),
                "batchSize": len(failed),
                "streamArn": self.stream_arn,
            },
        }
        try:
            self.sqs.send_message(QueueUrl=self.src.on_failure_url, MessageBody=json.dumps(record))
        except Exception as e:
            log(f"{self.label}: cannot send to the on-failure destination: {type(e).__name__}: {e}")


# ------------------------------------------------------------------ queue -> function


class QueuePoller:
    def __init__(self, src: QueueSource, args: argparse.Namespace, invoke: Invoker) -> None:
        self.src = src
        self.args = args
        self.invoke = invoke
        self.sqs = client("sqs", args)
        self.label = f"{src.name} (queue -> {src.function})"
        self.arn: str | None = None

    def run(self) -> None:
        log(f"{self.label}: {self.src.queue_url}, batches of {self.src.batch_size}, "
            f"{self.src.concurrency} pollers")
        pollers = [threading.Thread(target=self.poll, name=f"{self.src.name}-{i}", daemon=True)
                   for i in range(self.src.concurrency - 1)]
        for t in pollers:
            t.start()
        self.poll()

    def poll(self) -> None:
        while not STOP.is_set():
            try:
                self.step()
            except Exception as e:
                log(f"{self.label}: {type(e).__name__}: {e}; retrying in 2 s")
                sleep(2)

    def step(self) -> None:
        if self.arn is None:
            self.arn = self.sqs.get_queue_attributes(
                QueueUrl=self.src.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        resp = self.sqs.receive_message(
            QueueUrl=self.src.queue_url,
            MaxNumberOfMessages=self.src.batch_size,
            WaitTimeSeconds=SQS_WAIT_S,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        msgs = resp.get("Messages") or []
        if not msgs or STOP.is_set():
            return
        records = [self.record(m) for m in msgs]
        started = time.monotonic()
        try:
            result = self.invoke(self.src.function, {"Records": records}, self.src.timeout_s)
        except InvokeError as e:
            ms = (time.monotonic() - started) * 1000
            log(f"{self.label}: {len(msgs)} message(s), FAILED ({e}), {ms:.0f} ms; "
                "they return after the visibility timeout")
            return
        ms = (time.monotonic() - started) * 1000
        done_ids = queue_done(result, [m["MessageId"] for m in msgs], self.src.report_failures)
        if done_ids is None:
            log(f"{self.label}: {len(msgs)} message(s), invalid batchItemFailures: whole batch failed, "
                f"{ms:.0f} ms; they return after the visibility timeout")
            return
        done = [m for m in msgs if m["MessageId"] in done_ids]
        failures = len(msgs) - len(done)
        for i in range(0, len(done), 10):
            chunk = done[i:i + 10]
            r = self.sqs.delete_message_batch(
                QueueUrl=self.src.queue_url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(chunk)],
            )
            for f in r.get("Failed") or []:
                log(f"{self.label}: DeleteMessage failed ({f.get('Code')}); the message will come back")
        tail = "" if not failures else "; failed ones return after the visibility timeout"
        log(f"{self.label}: {len(msgs)} message(s), {failures} failure(s), {ms:.0f} ms{tail}")

    def record(self, m: dict[str, Any]) -> dict[str, Any]:
        attrs = {}
        for name, a in (m.get("MessageAttributes") or {}).items():
            v = {"dataType": a["DataType"], "stringListValues": [], "binaryListValues": []}
            if "StringValue" in a:
                v["stringValue"] = a["StringValue"]
            if "BinaryValue" in a:
                v["binaryValue"] = base64.b64encode(a["BinaryValue"]).decode()
            attrs[name] = v
        return {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m.get("Body", ""),
            "attributes": m.get("Attributes") or {},
            "messageAttributes": attrs,
            "md5OfBody": m.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.arn,
            "awsRegion": self.args.region,
        }


# ------------------------------------------------------------------ schedule -> function


class Scheduler:
    def __init__(self, src: Schedule, args: argparse.Namespace, invoke: Invoker) -> None:
        self.src = src
        self.args = args
        self.invoke = invoke
        self.label = f"{src.name} ({src.expression} -> {src.function})"

    def run(self) -> None:
        log(f"{self.label}: now, then every {self.src.period_s:.0f} s")
        next_at = time.monotonic()
        while not STOP.is_set():
            sleep(max(0.0, next_at - time.monotonic()))
            if STOP.is_set():
                break
            self.fire()
            now = time.monotonic()
            next_at += self.src.period_s
            while next_at <= now:  # a run longer than the period: skip the missed runs
                next_at += self.src.period_s

    def fire(self) -> None:
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.scheduler",
            "account": ACCOUNT,
            "time": now,
            "region": self.args.region,
            "resources": [f"arn:aws:scheduler:{self.args.region}:{ACCOUNT}:schedule/default/{self.src.name}"],
            "detail": {},
        }
        started = time.monotonic()
        try:
            result = self.invoke(self.src.function, event, self.src.timeout_s)
        except InvokeError as e:
            log(f"{self.label}: FAILED ({e}), {(time.monotonic() - started) * 1000:.0f} ms")
            return
        summary = ""
        if isinstance(result, dict):  # counts only (the reaper's report), never payloads
            summary = " ".join(f"{k}={v}" for k, v in result.items() if isinstance(v, (int, float)))
        log(f"{self.label}: ok{(' ' + summary) if summary else ''}, {(time.monotonic() - started) * 1000:.0f} ms")


# ------------------------------------------------------------------ main


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    out = {}
    for v in values:
        k, sep, val = v.partition("=")
        if not sep or not k or not val:
            raise SystemExit(f"local_pipeline: {flag} expects LOGICAL_ID=VALUE, got {v!r}")
        out[k] = val
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--template", type=Path, default=DEFAULT_TEMPLATE)
    p.add_argument("--lambda-url", default="http://127.0.0.1:9000",
                   help="the function host's Invoke API (default: http://127.0.0.1:9000)")
    p.add_argument("--table", action="append", default=[], metavar="LOGICAL_ID=NAME")
    p.add_argument("--queue", action="append", default=[], metavar="LOGICAL_ID=URL")
    p.add_argument("--function", action="append", default=[], metavar="BINARY",
                   help="play only the event sources of these functions (default: all)")
    p.add_argument("--endpoint-url", default=None,
                   help="the queues' emulator, moto (default: $AWS_ENDPOINT_URL, read by boto3)")
    p.add_argument("--dynamodb-endpoint-url", default=None,
                   help="the table's and its stream's, DynamoDB Local (default: "
                        "$AWS_ENDPOINT_URL_DYNAMODB and $AWS_ENDPOINT_URL_DYNAMODB_STREAMS, read by boto3)")
    p.add_argument("--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
    args = p.parse_args(argv)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")

    try:
        sources = read_sources(args.template, _pairs(args.table, "--table"), _pairs(args.queue, "--queue"),
                               set(args.function) or None)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"local_pipeline: {e}", file=sys.stderr)
        return 2

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: STOP.set())
    invoke = Invoker(args.lambda_url)
    workers = (
        [StreamPoller(s, args, invoke) for s in sources.streams]
        + [QueuePoller(q, args, invoke) for q in sources.queues]
        + [Scheduler(s, args, invoke) for s in sources.schedules]
    )
    if not workers:
        print("local_pipeline: the template has no stream, queue or schedule event", file=sys.stderr)
        return 2
    for w in workers:
        threading.Thread(target=w.run, name=w.label, daemon=True).start()

    parent = os.getppid()
    while not STOP.wait(1.0):
        if os.getppid() != parent:
            log("parent process gone; stopping")
            break
    STOP.set()
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
