"""The pure parts of scripts/local_pipeline.py: which records an event source's FilterCriteria let
through, which lane a record goes to, and how a function's batchItemFailures report decides what
is retried, resumed or deleted. No emulator and no function is needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import local_pipeline as lp  # noqa: E402

TEMPLATE = SCRIPTS.parent / "template.yaml"


def stream_record(sk: str, event_name: str = "INSERT", pk: str = "MSG#stripe#evt_1", seq: str = "100") -> dict:
    """A stream record as local_pipeline hands it to a function (Lambda's shape)."""
    return {
        "eventID": "1",
        "eventName": event_name,
        "eventSource": "aws:dynamodb",
        "dynamodb": {
            "Keys": {"pk": {"S": pk}, "sk": {"S": sk}},
            "SequenceNumber": seq,
        },
    }


# ------------------------------------------------------------------ FilterCriteria


@pytest.fixture(scope="module")
def sources() -> lp.Sources:
    tables = {"InboxTable": "webhook-inbox-test"}
    queues = {q: f"http://127.0.0.1/{q}" for q in
              ("RetryQueue", "QuarantineQueue", "DeliveryQueue", "DeliveryQuarantineQueue")}
    return lp.read_sources(TEMPLATE, tables, queues)


def stream_of(sources: lp.Sources, function: str) -> lp.StreamSource:
    found = [s for s in sources.streams if s.function == function]
    assert len(found) == 1, [s.name for s in sources.streams]
    return found[0]


def test_the_templates_filters_send_new_messages_to_process_only(sources):
    process = stream_of(sources, "process")
    deliver = stream_of(sources, "deliver")
    new_message = stream_record("MSG")
    assert lp.passes(process.filters, new_message)
    assert not lp.passes(deliver.filters, new_message)


def test_the_templates_filters_send_new_deliveries_and_fanouts_to_deliver_only(sources):
    process = stream_of(sources, "process")
    deliver = stream_of(sources, "deliver")
    for sk in ("OUT", "FAN"):
        record = stream_record(sk, pk=f"{sk}#crm#stripe#evt_1")
        assert lp.passes(deliver.filters, record), sk
        assert not lp.passes(process.filters, record), sk


@pytest.mark.parametrize("event_name", ["MODIFY", "REMOVE"])
def test_the_templates_filters_let_no_update_or_removal_through(sources, event_name):
    for function in ("process", "deliver"):
        src = stream_of(sources, function)
        for sk in ("MSG", "OUT", "FAN"):
            assert not lp.passes(src.filters, stream_record(sk, event_name)), (function, sk)


@pytest.mark.parametrize("sk", ["DLV#count", "DLV#0000000000005#ab", "STATE", "DEST#crm", "msg"])
def test_the_templates_filters_let_no_other_item_through(sources, sk):
    for function in ("process", "deliver"):
        assert not lp.passes(stream_of(sources, function).filters, stream_record(sk)), (function, sk)


def test_the_template_is_read_with_its_settings(sources):
    process = stream_of(sources, "process")
    assert process.report_failures
    assert process.batch_size == 100
    assert process.parallelization == 2
    assert process.on_failure_url == "http://127.0.0.1/QuarantineQueue"
    retry = [q for q in sources.queues if q.function == "process"]
    assert len(retry) == 1 and retry[0].queue_url == "http://127.0.0.1/RetryQueue"
    assert retry[0].batch_size <= 10 and retry[0].report_failures
    assert {s.function for s in sources.schedules} >= {"reaper", "deliver", "reconcile", "charge"}


def test_no_filters_pass_everything():
    assert lp.passes([], stream_record("anything", "REMOVE"))


def test_any_one_pattern_passes():
    a = {"eventName": ["INSERT"]}
    b = {"eventName": ["REMOVE"]}
    assert lp.passes([a, b], stream_record("MSG", "REMOVE"))
    assert not lp.passes([a, b], stream_record("MSG", "MODIFY"))


@pytest.mark.parametrize(
    ("pattern", "event", "expected"),
    [
        ({"a": ["x"]}, {"a": "x"}, True),
        ({"a": ["x", "y"]}, {"a": "y"}, True),
        ({"a": ["x"]}, {"a": "z"}, False),
        ({"a": ["x"]}, {"b": "x"}, False),                     # the key must be present
        ({"a": {"b": ["x"]}}, {"a": {"b": "x", "c": 1}}, True),  # other keys are ignored
        ({"a": {"b": ["x"]}}, {"a": "x"}, False),              # a nested pattern needs an object
        ({"a": ["x"]}, {"a": ["z", "x"]}, True),               # an array matches if any element does
        ({"a": ["x"]}, {"a": []}, False),
        ({"n": [1]}, {"n": 1.0}, True),                        # numbers compare by value
        ({"n": [1]}, {"n": "1"}, False),                       # but not a string of one
        ({"n": [1]}, {"n": True}, False),                      # nor a boolean
        ({"t": [True]}, {"t": True}, True),
        ({"t": [True]}, {"t": 1}, False),
        ({}, {"anything": 1}, True),
        ({"a": ["x"]}, "not an object", False),
        ({"a": ["x"]}, None, False),
    ],
)
def test_matching_is_eventbridges_exact_value_subset(pattern, event, expected):
    assert lp.matches(pattern, event) is expected


@pytest.mark.parametrize(
    "pattern",
    [
        {"a": [{"prefix": "MSG"}]},   # content filters are not emulated
        {"a": [["x"]]},
        {"a": "x"},                    # values must be lists or objects
        ["not", "an", "object"],
    ],
)
def test_unsupported_patterns_are_refused_at_start(pattern):
    with pytest.raises(ValueError):
        lp._check_pattern(pattern, "Test.FilterCriteria")


def test_a_supported_pattern_is_accepted():
    lp._check_pattern(json.loads('{"eventName":["INSERT"],"dynamodb":{"Keys":{"sk":{"S":["MSG"]}}}}'), "t")


# ------------------------------------------------------------------ lanes


def test_a_records_lane_is_stable_and_in_range():
    for lanes in (1, 2, 3, 10):
        for i in range(50):
            record = stream_record("MSG", pk=f"MSG#stripe#evt_{i}")
            lane = lp.lane_of(record, lanes)
            assert 0 <= lane < lanes
            assert lp.lane_of(record, lanes) == lane


def test_one_items_records_share_a_lane_whatever_their_change():
    for i in range(20):
        pk = f"MSG#stripe#evt_{i}"
        lanes = {lp.lane_of(stream_record("MSG", name, pk=pk, seq=str(n)), 4)
                 for n, name in enumerate(("INSERT", "MODIFY", "REMOVE"))}
        assert len(lanes) == 1, pk


def test_the_lane_does_not_depend_on_the_order_of_the_keys():
    a = {"dynamodb": {"Keys": {"pk": {"S": "MSG#s#e"}, "sk": {"S": "MSG"}}}}
    b = {"dynamodb": {"Keys": {"sk": {"S": "MSG"}, "pk": {"S": "MSG#s#e"}}}}
    assert lp.lane_of(a, 7) == lp.lane_of(b, 7)


def test_distinct_items_spread_over_the_lanes():
    lanes = [lp.lane_of(stream_record("MSG", pk=f"MSG#stripe#evt_{i}"), 2) for i in range(200)]
    assert 60 <= lanes.count(0) <= 140, lanes.count(0)


def test_one_lane_takes_everything():
    assert {lp.lane_of(stream_record("MSG", pk=f"MSG#s#{i}"), 1) for i in range(20)} == {0}


# ------------------------------------------------------------------ failure ids


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (None, []),                                            # an empty response: all done
        ({}, []),
        ({"batchItemFailures": None}, []),
        ({"batchItemFailures": []}, []),
        ({"batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]}, ["a", "b"]),
        ({"batchItemFailures": [{"other": "a"}]}, [None]),     # no identifier: an unusable entry
        ({"batchItemFailures": ["a"]}, [None]),
        ({"batchItemFailures": "a"}, None),                    # not a list: not a report
        ([], None),
        ("ok", None),
    ],
)
def test_failure_ids_read_a_batch_item_failures_report(result, expected):
    assert lp.failure_ids(result) == expected


SEQS = ["100", "200", "300", "400"]


def failures(*ids):
    return {"batchItemFailures": [{"itemIdentifier": i} for i in ids]}


def test_a_stream_batch_without_failures_is_done():
    assert lp.stream_outcome(None, SEQS, True) == (None, "")
    assert lp.stream_outcome(failures(), SEQS, True) == (None, "")


def test_a_stream_batch_resumes_at_the_lowest_reported_sequence_number():
    at, why = lp.stream_outcome(failures("400", "200"), SEQS, True)
    assert at == 1
    assert "2 reported" in why


@pytest.mark.parametrize(
    "result",
    [failures("999"), failures(None), {"batchItemFailures": [{}]}, {"batchItemFailures": "x"}, "x"],
)
def test_an_unusable_stream_report_fails_the_whole_batch(result):
    at, why = lp.stream_outcome(result, SEQS, True)
    assert at == 0
    assert "whole batch" in why


def test_reports_are_ignored_without_report_batch_item_failures():
    assert lp.stream_outcome(failures("200"), SEQS, False) == (None, "")
    assert lp.stream_outcome("garbage", SEQS, False) == (None, "")
    assert lp.queue_done(failures("a"), ["a", "b"], False) == {"a", "b"}


def test_an_sqs_batch_deletes_every_message_not_reported():
    assert lp.queue_done(None, ["a", "b", "c"], True) == {"a", "b", "c"}
    assert lp.queue_done(failures("b"), ["a", "b", "c"], True) == {"a", "c"}
    assert lp.queue_done(failures("a", "b", "c"), ["a", "b", "c"], True) == set()


@pytest.mark.parametrize("result", [failures("z"), failures(None), {"batchItemFailures": {}}, 7])
def test_an_unusable_sqs_report_deletes_nothing(result):
    assert lp.queue_done(result, ["a", "b"], True) is None


@pytest.mark.parametrize(
    ("batch_len", "failed_at", "limit"),
    [
        (100, 0, 50),    # failing from the first record: halved
        (3, 0, 2),
        (2, 0, 1),
        (1, 0, 1),       # a poison record alone stays alone
        (100, 40, 60),   # split at a reported failure: only the rest is retried
        (100, 99, 1),
    ],
)
def test_bisect_halves_a_batch_failing_from_its_start(batch_len, failed_at, limit):
    assert lp.bisected_limit(batch_len, failed_at) == limit


# ------------------------------------------------------------------ the rest that is pure


@pytest.mark.parametrize(
    ("expr", "seconds"),
    [("rate(1 minute)", 60), ("rate(5 minutes)", 300), ("rate(1 hour)", 3600), (" rate(2 days) ", 172800)],
)
def test_schedules_are_rate_expressions(expr, seconds):
    assert lp._period(expr) == seconds


@pytest.mark.parametrize("expr", ["cron(0 * * * ? *)", "rate(0.5 minutes)", "rate(1 week)"])
def test_other_schedules_are_refused(expr):
    with pytest.raises(ValueError):
        lp._period(expr)


def test_a_shard_resumes_at_the_first_record_not_handled_in_any_lane():
    lanes = [lp.Lane(pending=[stream_record("MSG", seq="300")]),
             lp.Lane(pending=[stream_record("MSG", seq="120"), stream_record("MSG", seq="500")]),
             lp.Lane()]
    shard = lp.Shard("s", None, lanes, last_read="500")
    assert shard.resume() == ("AT_SEQUENCE_NUMBER", {"SequenceNumber": "120"})
    assert shard.pending() == 3


def test_a_drained_shard_resumes_after_the_last_record_read():
    assert lp.Shard("s", None, [lp.Lane()], last_read="42").resume() == (
        "AFTER_SEQUENCE_NUMBER", {"SequenceNumber": "42"})
    assert lp.Shard("s", None, [lp.Lane()]).resume() is None


def test_stream_records_take_lambdas_shape():
    rec = {
        "eventID": "e1",
        "eventName": "INSERT",
        "dynamodb": {
            "ApproximateCreationDateTime": 1700000000,
            "Keys": {"pk": {"S": "MSG#s#e"}, "sk": {"S": "MSG"}},
            "NewImage": {"body": {"B": b"\x00\xff"}, "tags": {"BS": [b"a"]},
                         "m": {"M": {"x": {"B": b"z"}}}, "l": {"L": [{"N": "1"}]}},
            "SequenceNumber": "7",
            "StreamViewType": "NEW_IMAGE",
        },
    }
    out = lp.lambda_stream_record(rec, "arn:stream", "eu-west-1")
    assert out["eventSource"] == "aws:dynamodb"
    assert out["eventVersion"] == "1.1"
    assert out["awsRegion"] == "eu-west-1" and out["eventSourceARN"] == "arn:stream"
    image = out["dynamodb"]["NewImage"]
    assert image["body"] == {"B": "AP8="}                     # binary as base64, as Lambda sends it
    assert image["tags"] == {"BS": ["YQ=="]}
    assert image["m"] == {"M": {"x": {"B": "eg=="}}}
    assert image["l"] == {"L": [{"N": "1"}]}
    assert out["dynamodb"]["SequenceNumber"] == "7"
    json.dumps(out)  # what is invoked must serialise
