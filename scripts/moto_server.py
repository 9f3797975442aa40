#!/usr/bin/env python3
"""The local AWS emulator for SQS, S3 and Secrets Manager: moto in server mode, made durable.

DynamoDB and its stream are served by AWS's own DynamoDB Local (scripts/dynamodb_local.sh;
docs/dynamodb-local.md says why): this launcher serves whatever reaches it as plain moto does, and
touches none of moto's DynamoDB code.

With `--state-file PATH` it is durable, as SQS is: every request that changed state and succeeded
is appended to PATH (a write-ahead log, flushed before the answer is sent) and replayed in order
when the emulator starts, so an emulator killed and restarted (a fault test, a crashed `make dev`)
comes back with every queued message, bucket object and secret it had acknowledged. SQS message
ids are restored and deletes are logged by message id. Not restored: in-flight receives (every
undeleted message is visible again, as after its visibility timeout) and moves to a dead-letter
queue (the message is back in its queue with a fresh receive count). `POST /moto-api/reset`
empties the log.

SQS is served one request at a time (moto 5.2.5's SQS model is not thread-safe: under a dozen
long-polling pollers, `receive_message` raised `RuntimeError: Set changed size during iteration`
and `ValueError: list.remove(x)`, its receive scans the whole queue several times per message it
hands out (patched: `patch_sqs_retention_check`), and its long poll spins while a queue holds visible messages it
cannot hand out, at 75 % CPU, until the server stopped answering). Long polls are waited out here,
outside the lock: a `ReceiveMessage` with `WaitTimeSeconds` runs as a short receive; if it found
nothing it waits on its queue (woken by a send or visibility change there, and every second) and
receives again only once the queue holds a visible message, until its time is up. (A first version
re-ran every waiting receive every 200 ms: with make dev's 40 pollers, 30 of them idle, the lock
was never free and every SQS call took 5-16 s after 12 minutes of a soak.)

    python scripts/moto_server.py [-H HOST] [-p PORT] [--state-file PATH]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs

from moto.core.utils import unix_time_millis
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple
from werkzeug.test import EnvironBuilder

App = Callable[..., Iterable[bytes]]

# Actions that only read (never logged). Everything else that succeeds is logged.
READ_PREFIXES = ("Get", "List", "Describe", "Query", "Scan", "BatchGet", "TransactGet", "Receive")
CREDENTIAL_REGION = re.compile(r"Credential=[^/]+/[^/]+/([^/]+)/")


class RefuseDynamoDB:
    """WSGI middleware: a DynamoDB or DynamoDB Streams request (its `X-Amz-Target` starts with
    `DynamoDB`) is answered 400 without reaching moto. A client that reaches this emulator for
    DynamoDB is misconfigured (`AWS_ENDPOINT_URL_DYNAMODB` missing): it fails at once instead of
    silently running on moto's DynamoDB."""

    def __init__(self, app: App) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        body = json.dumps({
            "__type": "com.amazonaws.dynamodb.v20120810#UnrecognizedClientException",
            "message": "this emulator (moto) serves SQS, S3 and Secrets Manager only: point DynamoDB "
                       "and DynamoDB Streams at DynamoDB Local (AWS_ENDPOINT_URL_DYNAMODB, "
                       "AWS_ENDPOINT_URL_DYNAMODB_STREAMS; scripts/dynamodb_local.sh)",
        }).encode()
        start_response("400 Bad Request", [("Content-Type", "application/x-amz-json-1.0"),
                                           ("Content-Length", str(len(body)))])
        return [body]


def call(app: App, environ: dict[str, Any]) -> tuple[int, bytes]:
    """Runs a WSGI request to the end: (status code, whole body)."""
    status: list[int] = [500]

    def start_response(s: str, headers: Any, exc_info: Any = None) -> Callable[[bytes], None]:
        status[0] = int(s.split(" ", 1)[0])
        return lambda _data: None

    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return status[0], body


def action_of(environ: dict[str, Any], body: bytes) -> tuple[str, str]:
    """(service prefix, action) of a request: `X-Amz-Target` (JSON protocols) or `Action=` (query)."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if "." in target:
        service, action = target.split(".", 1)
        return service, action
    if body[:7] == b"Action=" or b"&Action=" in body:
        action = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])[0]
        return "query", action
    return "", environ.get("PATH_INFO", "")


def region_of(environ: dict[str, Any]) -> str:
    m = CREDENTIAL_REGION.search(environ.get("HTTP_AUTHORIZATION", ""))
    return m.group(1) if m else "us-east-1"


def sqs_queue(environ: dict[str, Any], queue_url: str) -> Any:
    from moto.backends import get_backend

    account, name = queue_url.rstrip("/").split("/")[-2:]
    return get_backend("sqs")[account][region_of(environ)].queues.get(name)


SQS_CREDENTIAL = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/")
SQS_WAKERS = ("SendMessage", "SendMessageBatch", "ChangeMessageVisibility",
              "ChangeMessageVisibilityBatch", "SetQueueAttributes", "CreateQueue", "PurgeQueue")
SQS_RECHECK_S = 1.0  # delayed messages and expired visibility timeouts show within this


def is_sqs(environ: dict[str, Any], service: str) -> bool:
    if service:
        return service.startswith("AmazonSQS")
    m = SQS_CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    return bool(m and m.group(1) == "sqs")


def short_receive(environ: dict[str, Any], body: bytes, service: str) -> tuple[bytes, float | None]:
    """A ReceiveMessage rewritten without its long poll: (new body, seconds it wanted to wait, or
    None when it did not ask for one)."""
    if service:
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            return body, None
        wait = req.get("WaitTimeSeconds")
        if wait is None:
            queue = sqs_queue(environ, req.get("QueueUrl", "")) if req.get("QueueUrl") else None
            wait = int(getattr(queue, "receive_message_wait_time_seconds", 0) or 0) if queue else 0
        req["WaitTimeSeconds"] = 0
        return json.dumps(req).encode(), float(wait)
    pairs = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    wait = float(pairs.get("WaitTimeSeconds", ["0"])[0] or 0)
    pairs["WaitTimeSeconds"] = ["0"]
    from urllib.parse import urlencode
    return urlencode({k: v[0] for k, v in pairs.items()}).encode(), wait


def has_messages(out: bytes) -> bool:
    if out[:1] == b"{":
        try:
            return bool(json.loads(out).get("Messages"))
        except ValueError:
            return True
    return b"<Message>" in out


def queue_url_of(body: bytes, service: str) -> str:
    if service:
        try:
            return str(json.loads(body or b"{}").get("QueueUrl") or "")
        except (ValueError, AttributeError):
            return ""
    return parse_qs(body.decode("utf-8", "replace")).get("QueueUrl", [""])[0]


def has_visible(queue: Any) -> bool:
    """Whether a queue holds a message a receive could hand out now (visible, not delayed): the
    cheap check a waiting long poll makes instead of running a receive."""
    if queue is None:
        return True
    now = unix_time_millis()
    return any(now > m.visible_at and now >= m.delayed_until for m in list(queue._messages))


class SerializeSqs:
    """WSGI middleware: every SQS request runs under one lock, long polls waited out here (see the
    module docs). Everything else passes through unchanged.

    A long poll that found nothing waits on its queue's condition (sharing the lock), woken by a
    send or a visibility change to that queue and at least every SQS_RECHECK_S; when woken it runs
    the receive again only if the queue holds a message that is visible now (a cheap scan, no
    request machinery), so idle pollers cost next to nothing."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.conds: dict[str, threading.Condition] = {}

    def cond(self, queue_url: str) -> threading.Condition:
        name = queue_url.rstrip("/").rsplit("/", 1)[-1]
        c = self.conds.get(name)
        if c is None:
            c = self.conds[name] = threading.Condition(self.lock)
        return c

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        service, action = action_of(environ, body)
        if not is_sqs(environ, service):
            return self.app(environ, start_response)
        queue_url = queue_url_of(body, service)
        wait = None
        with self.lock:
            if action == "ReceiveMessage":
                body, wait = short_receive(environ, body, service)
            try:
                queue = sqs_queue(environ, queue_url) if wait and queue_url else None
            except (ValueError, KeyError, AttributeError):
                queue = None  # unknown: re-run the receive every SQS_RECHECK_S
            deadline = time.monotonic() + (wait or 0)
            cond = self.cond(queue_url)
            while True:
                env = dict(environ)
                env["wsgi.input"] = io.BytesIO(body)
                env["CONTENT_LENGTH"] = str(len(body))
                status, out, headers = run_app(self.app, env)
                if action in SQS_WAKERS:
                    cond.notify_all()
                if not wait or not status.startswith("2") or has_messages(out):
                    break
                woken = False
                while (remaining := deadline - time.monotonic()) > 0:
                    cond.wait(min(SQS_RECHECK_S, remaining))
                    if has_visible(queue):
                        woken = True
                        break
                if not woken:
                    break  # the wait is over: the empty answer stands
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"] + [("Content-Length", str(len(out)))]
        start_response(status, headers)
        return [out]


def run_app(app: App, environ: dict[str, Any]) -> tuple[str, bytes, list[Any]]:
    """Runs a WSGI request to the end: (status line, whole body, headers)."""
    captured: list[Any] = ["500 INTERNAL SERVER ERROR", []]

    def start_response(s: str, headers: Any, exc_info: Any = None) -> Callable[[bytes], None]:
        captured[0], captured[1] = s, headers
        return lambda _data: None

    result = app(environ, start_response)
    try:
        out = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return captured[0], out, list(captured[1])


class Durable:
    """WSGI middleware: appends every state-changing request that succeeded to a log, and replays
    the log at start (see the module docs)."""

    def __init__(self, app: App, path: str) -> None:
        self.app = app
        self.path = path
        self.lock = threading.Lock()
        self.replay()
        self.log = open(path, "a", encoding="utf-8")

    # ---------------------------------------------------------------- recording

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        service, action = action_of(environ, body)
        deleted = self.sqs_deletes(environ, action, body)
        status, out, headers = run_app(self.app, environ)
        start_response(status, headers)
        code = int(status.split(" ", 1)[0])
        if 200 <= code < 300:
            if environ.get("PATH_INFO", "").startswith("/moto-api/reset"):
                with self.lock:
                    self.log.truncate(0)
                    self.log.seek(0)
            elif deleted is not None:
                self.append({"sqs_delete": deleted, "region": region_of(environ)})
            elif service and not action.startswith(READ_PREFIXES):
                self.append(self.entry(environ, body, action, out))
        return [out]

    def entry(self, environ: dict[str, Any], body: bytes, action: str, out: bytes) -> dict[str, Any]:
        headers = {k[5:].replace("_", "-").title(): v for k, v in environ.items() if k.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        e: dict[str, Any] = {
            "method": environ["REQUEST_METHOD"],
            "path": environ.get("PATH_INFO", "/"),
            "query": environ.get("QUERY_STRING", ""),
            "headers": headers,
            "body": base64.b64encode(body).decode("ascii"),
            "action": action,
        }
        try:
            answer = json.loads(out) if out[:1] == b"{" else {}
        except ValueError:
            answer = {}
        if action == "SendMessage" and "MessageId" in answer:
            e["message_ids"] = [answer["MessageId"]]
        elif action == "SendMessageBatch":
            e["message_ids"] = [s.get("MessageId") for s in answer.get("Successful", [])]
        return e

    def append(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()  # in the OS before the answer leaves: survives a killed process

    def sqs_deletes(self, environ: dict[str, Any], action: str, body: bytes) -> dict[str, Any] | None:
        """For a DeleteMessage(Batch), the ids of the messages its receipt handles name (read
        before the delete runs): receipt handles do not survive a replay, message ids do."""
        if action not in ("DeleteMessage", "DeleteMessageBatch"):
            return None
        try:
            req = json.loads(body)
            handles = [req["ReceiptHandle"]] if action == "DeleteMessage" else [x["ReceiptHandle"] for x in req["Entries"]]
            queue = sqs_queue(environ, req["QueueUrl"])
            ids = [m.id for m in list(queue._messages) if any(m.had_receipt_handle(h) for h in handles)]
            return {"queue_url": req["QueueUrl"], "ids": ids}
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    # ---------------------------------------------------------------- replay

    def replay(self) -> None:
        if not os.path.exists(self.path):
            return
        count = 0
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    break  # a torn last line: the request it logged was never answered
                self.replay_one(e)
                count += 1
        print(f"replayed {count} logged requests from {self.path}", flush=True)

    def replay_one(self, e: dict[str, Any]) -> None:
        if "sqs_delete" in e:
            d = e["sqs_delete"]
            environ = {"HTTP_AUTHORIZATION": f"Credential=x/x/{e.get('region', 'us-east-1')}/sqs/aws4_request"}
            queue = sqs_queue(environ, d["queue_url"])
            if queue is not None:
                queue._messages = [m for m in queue._messages if m.id not in set(d["ids"])]
            return
        environ = EnvironBuilder(
            method=e["method"], path=e["path"], query_string=e["query"],
            headers=e["headers"], data=base64.b64decode(e["body"]),
        ).get_environ()
        _, out = call(self.app, environ)
        try:
            answer = json.loads(out) if out[:1] == b"{" else {}
        except ValueError:
            answer = {}
        if e.get("message_ids"):
            req = json.loads(base64.b64decode(e["body"]))
            queue = sqs_queue(environ, req["QueueUrl"])
            new = [answer.get("MessageId")] if e["action"] == "SendMessage" else [s.get("MessageId") for s in answer.get("Successful", [])]
            renamed = dict(zip(new, e["message_ids"]))
            for m in queue._messages if queue is not None else []:
                if m.id in renamed:
                    m.id = renamed[m.id]


def patch_sqs_retention_check() -> None:
    """moto 5.2.5's `receive_message` checks each message it hands out against the queue's
    retention period through `get_queue_attributes`, which computes every attribute of the queue,
    most of them a scan of its messages with a clock read per message: a receive of 10 from a
    queue of 700 messages cost tens of thousands of clock reads, and under the SQS lock every SQS
    call waited 5-12 s (seen in a soak, py-spy). Same check, reading the one attribute."""
    from moto.core.utils import unix_time
    from moto.sqs.models import Message, SQSBackend

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Message) -> bool:
        queue = self.get_queue(queue_name)
        return float(queue.message_retention_period) + message.sent_timestamp / 1000 > unix_time()

    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period
    patch_sqs_queue_scans()


def patch_sqs_queue_scans() -> None:
    """moto 5.2.5 reads the clock twice per message in every scan of a queue (`Message.visible`,
    `Message.delayed`), and every SendMessage computes all of the queue's attributes (three such
    scans) to read ContentBasedDeduplication: with 900 messages in the delivery queue every send
    cost thousands of clock reads (py-spy, in a soak). Same results, one clock read per scan."""
    from moto.sqs.models import Queue

    def visible_now(self: Any) -> list[Any]:
        now = unix_time_millis()
        return [m for m in self._messages if now > m.visible_at and now >= m.delayed_until]

    def delayed(self: Any) -> int:
        now = unix_time_millis()
        return sum(1 for m in self._messages if now < m.delayed_until)

    def not_visible(self: Any) -> int:
        now = unix_time_millis()
        return sum(1 for m in self._messages if not now > m.visible_at)

    Queue.messages = property(visible_now)
    Queue.approximate_number_of_messages_delayed = property(delayed)
    Queue.approximate_number_of_messages_not_visible = property(not_visible)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=int(os.environ.get("MOTO_PORT", "5000")))
    parser.add_argument("--state-file", help="write-ahead log: replayed at start, appended on success")
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))

    patch_sqs_retention_check()
    app: Any = DomainDispatcherApplication(create_backend_app)
    if args.state_file:
        app = Durable(app, args.state_file)
    app = RefuseDynamoDB(SerializeSqs(app))
    mode = "SQS (serialized, long polls outside moto), S3, Secrets Manager; DynamoDB refused (DynamoDB Local serves it)"
    if args.state_file:
        mode += f"; durable ({args.state_file})"
    print(f"moto on http://{args.host}:{args.port}: {mode}", flush=True)
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
