"""The pure parts of scripts/moto_server.py's SQS serialization: which requests are SQS, how a
long poll is rewritten as a short receive, and how an answer is read as holding messages."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import parse_qs

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import moto_server as ms  # noqa: E402

QUEUE = "http://127.0.0.1:5000/123456789012/webhook-retry-local"


def test_is_sqs() -> None:
    assert ms.is_sqs({}, "AmazonSQS")
    assert not ms.is_sqs({}, "DynamoDB_20120810")
    auth = "AWS4-HMAC-SHA256 Credential=testing/20261207/us-east-1/sqs/aws4_request, SignedHeaders=host"
    assert ms.is_sqs({"HTTP_AUTHORIZATION": auth}, "")
    assert not ms.is_sqs({"HTTP_AUTHORIZATION": auth.replace("/sqs/", "/s3/")}, "")


def test_short_receive_json_keeps_the_wait_it_asked_for() -> None:
    body = json.dumps({"QueueUrl": QUEUE, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 2}).encode()
    new, wait = ms.short_receive({}, body, "AmazonSQS")
    assert wait == 2.0
    assert json.loads(new) == {"QueueUrl": QUEUE, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 0}


def test_short_receive_query_protocol() -> None:
    body = f"Action=ReceiveMessage&QueueUrl={QUEUE}&WaitTimeSeconds=5".encode()
    new, wait = ms.short_receive({}, body, "")
    assert wait == 5.0
    assert parse_qs(new.decode())["WaitTimeSeconds"] == ["0"]
    assert parse_qs(new.decode())["QueueUrl"] == [QUEUE]


def test_queue_url_of() -> None:
    assert ms.queue_url_of(json.dumps({"QueueUrl": QUEUE}).encode(), "AmazonSQS") == QUEUE
    assert ms.queue_url_of(f"Action=SendMessage&QueueUrl={QUEUE}".encode(), "") == QUEUE
    assert ms.queue_url_of(b"not json", "AmazonSQS") == ""


def test_has_messages() -> None:
    assert ms.has_messages(b'{"Messages": [{"MessageId": "1"}]}')
    assert not ms.has_messages(b"{}")
    assert not ms.has_messages(b'{"Messages": []}')
    assert ms.has_messages(b"<ReceiveMessageResult><Message><MessageId>1</MessageId></Message></ReceiveMessageResult>")
    assert not ms.has_messages(b"<ReceiveMessageResult></ReceiveMessageResult>")


def test_has_visible() -> None:
    class M:
        def __init__(self, visible_at: int, delayed_until: int) -> None:
            self.visible_at, self.delayed_until = visible_at, delayed_until

    class Q:
        def __init__(self, msgs: list[M]) -> None:
            self._messages = msgs

    far = 10**15
    assert not ms.has_visible(Q([]))
    assert not ms.has_visible(Q([M(far, 0), M(0, far)]))  # in flight, delayed
    assert ms.has_visible(Q([M(far, 0), M(0, 0)]))
    assert ms.has_visible(None)  # unknown queue: receive again
