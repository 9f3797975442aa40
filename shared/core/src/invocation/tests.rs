//! The events as Lambda sends them, and the lifting's rules: the stream's first failure, a
//! queue's partial failures, the concurrency bound, one span per record.

use super::*;
use serde_json::json;
use std::cell::{Cell, RefCell};

/// A stream record as the table's stream sends it (the message item's new image).
fn stream_event() -> Value {
    json!({"Records": [{
        "eventID": "c4ca4238a0b923820dcc509a6f75849b",
        "eventName": "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1764579600.0,
            "Keys": {"pk": {"S": "stripe#evt_1"}, "sk": {"S": "MSG"}},
            "NewImage": {
                "pk": {"S": "stripe#evt_1"}, "sk": {"S": "MSG"},
                "source": {"S": "stripe"}, "event_id": {"S": "evt_1"},
                "status": {"S": "pending"}, "version": {"N": "0"}
            },
            "SequenceNumber": "4421584500000000017450439091",
            "SizeBytes": 150,
            "StreamViewType": "NEW_IMAGE"
        },
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/inbox/stream/2026-12-01T00:00:00.000"
    }]})
}

/// A retry-queue message as the SQS event source sends it.
fn queue_event() -> Value {
    json!({"Records": [{
        "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
        "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
        "body": "{\"source\":\"stripe\",\"event_id\":\"evt_1\"}",
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1764579600000",
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": "1764579600003"
        },
        "messageAttributes": {},
        "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:inbox-retry",
        "awsRegion": "us-east-1"
    }]})
}

/// EventBridge's scheduled event (the deliver function's sweep, every minute).
fn scheduled_event() -> Value {
    json!({
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-12-01T09:00:00Z",
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/inbox-deliver-sweep"],
        "detail": {}
    })
}

#[test]
fn a_stream_batch_is_read_with_its_records() {
    let Incoming::Stream(batch) = Incoming::parse(stream_event()).unwrap() else {
        panic!("not a stream batch")
    };
    let record = &batch.records[0];
    assert_eq!(
        (
            record.event_name.as_str(),
            record.change.sequence_number.as_deref()
        ),
        ("INSERT", Some("4421584500000000017450439091"))
    );
    assert_eq!(
        record.change.new_image.get("event_id"),
        Some(&serde_dynamo::AttributeValue::S("evt_1".into()))
    );
}

#[test]
fn an_sqs_batch_is_read_with_its_messages() {
    let Incoming::Queue(batch) = Incoming::parse(queue_event()).unwrap() else {
        panic!("not a queue batch")
    };
    let message = &batch.records[0];
    assert_eq!(
        message.message_id.as_deref(),
        Some("059f36b4-87a3-44ab-83d2-661975830a7d")
    );
    assert_eq!(
        message.body.as_deref(),
        Some(r#"{"source":"stripe","event_id":"evt_1"}"#)
    );
}

#[test]
fn a_scheduled_event_is_the_schedule() {
    assert!(matches!(
        Incoming::parse(scheduled_event()),
        Ok(Incoming::Schedule)
    ));
    let mut other = scheduled_event();
    other["detail-type"] = json!("EC2 Instance State-change Notification");
    assert!(matches!(
        Incoming::parse(other),
        Err(IncomingError::Unrecognized)
    ));
}

#[test]
fn an_empty_batch_is_an_empty_queue_batch_answered_with_no_failures() {
    let Incoming::Queue(batch) = Incoming::parse(json!({"Records": []})).unwrap() else {
        panic!("not a queue batch")
    };
    assert!(batch.records.is_empty());
    let response = serde_json::to_value(SqsBatchResponse::default()).unwrap();
    assert_eq!(response, json!({"batchItemFailures": []}));
    assert_eq!(
        serde_json::to_value(DynamoDbEventResponse::default()).unwrap(),
        response,
        "a stream batch would answer the same"
    );
}

#[test]
fn unknown_events_are_refused_saying_what_they_are() {
    let kinesis = json!({"Records": [{"eventSource": "aws:kinesis", "kinesis": {"data": "e30="}}]});
    let e = Incoming::parse(kinesis).unwrap_err();
    assert!(matches!(&e, IncomingError::OtherSource(s) if s == "aws:kinesis"));
    assert!(
        e.to_string().contains(r#"records from "aws:kinesis""#),
        "{e}"
    );
    // SNS spells it `EventSource`; an HTTP API request has no records at all.
    let sns = json!({"Records": [{"EventSource": "aws:sns", "Sns": {"Message": "hi"}}]});
    let http = json!({"version": "2.0", "routeKey": "POST /webhooks/{source}", "body": "{}"});
    for event in [sns, http, json!(null), json!("Scheduled Event")] {
        let e = Incoming::parse(event).unwrap_err();
        assert!(matches!(e, IncomingError::Unrecognized));
        assert!(
            e.to_string()
                .contains("expected a DynamoDB stream or SQS batch, or a scheduled event"),
            "{e}"
        );
    }
}

#[test]
fn a_batch_of_a_known_source_that_does_not_read_is_malformed() {
    let bad = json!({"Records": [{"eventSource": "aws:sqs", "messageId": 7}]});
    let e = Incoming::parse(bad).unwrap_err();
    assert!(
        matches!(e, IncomingError::Malformed { kind: "SQS", .. }),
        "{e}"
    );
    let bad = json!({"Records": [{"eventSource": "aws:dynamodb", "dynamodb": "not a record"}]});
    let e = Incoming::parse(bad).unwrap_err();
    assert!(
        matches!(
            e,
            IncomingError::Malformed {
                kind: "DynamoDB stream",
                ..
            }
        ),
        "{e}"
    );
}

/// What a test record asks of the per-record function.
#[derive(Clone, Copy)]
enum Plan {
    /// Succeeds after yielding this many times.
    Ok(u32),
    /// Fails after yielding this many times.
    Fail(u32),
    /// Not work.
    Skip,
}

fn stream_of(plans: &[Plan]) -> StreamEvent {
    let mut event = StreamEvent::default();
    event.records = (0..plans.len())
        .map(|i| {
            let mut r = EventRecord::default();
            r.change.sequence_number = Some(format!("seq-{i}"));
            r
        })
        .collect();
    event
}

fn queue_of(plans: &[Plan]) -> SqsEvent {
    let mut event = SqsEvent::default();
    event.records = (0..plans.len())
        .map(|i| {
            let mut m = SqsMessage::default();
            m.message_id = Some(format!("msg-{i}"));
            m
        })
        .collect();
    event
}

/// The test's per-record function: the plan of record `i`, run.
fn task(plan: Plan) -> Task<impl Future<Output = Result<&'static str, ()>>> {
    let (yields, result) = match plan {
        Plan::Skip => return Task::Skip("not_work"),
        Plan::Ok(n) => (n, Ok("done")),
        Plan::Fail(n) => (n, Err(())),
    };
    Task::Run(tracing::info_span!("record"), async move {
        for _ in 0..yields {
            tokio::task::yield_now().await;
        }
        result
    })
}

fn index(id: &str) -> usize {
    id.rsplit('-').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_stream_batch_reports_its_first_failed_record_in_stream_order() {
    use Plan::*;
    // Record 1 fails last (after many yields), record 3 first: the shard resumes at record 1.
    let plans = [Ok(0), Fail(20), Skip, Fail(0), Ok(5)];
    let event = stream_of(&plans);
    let (response, summary) = lift(&event, 10, |r| {
        task(plans[index(r.change.sequence_number.as_deref().unwrap())])
    })
    .await;
    let reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_deref())
        .collect();
    assert_eq!(reported, [Some("seq-1")]);
    assert_eq!(summary.records, 5);
    assert_eq!(
        summary.failures, 2,
        "every failure is counted, one reported"
    );
    assert_eq!(
        summary.outcomes,
        BTreeMap::from([("done", 2), ("not_work", 1)])
    );
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({"batchItemFailures": [{"itemIdentifier": "seq-1"}]}),
        "the answer Lambda reads"
    );
}

#[tokio::test]
async fn a_stream_batch_without_failures_reports_none() {
    let plans = [Plan::Ok(1), Plan::Skip, Plan::Ok(0)];
    let event = stream_of(&plans);
    let (response, summary) = lift(&event, 2, |r| {
        task(plans[index(r.change.sequence_number.as_deref().unwrap())])
    })
    .await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!((summary.records, summary.failures), (3, 0));
}

#[tokio::test]
async fn a_queue_batch_reports_every_failed_message() {
    use Plan::*;
    let plans = [Fail(3), Ok(0), Skip, Fail(0), Ok(2), Fail(1)];
    let event = queue_of(&plans);
    let (response, summary) = lift(&event, 4, |m| {
        task(plans[index(m.message_id.as_deref().unwrap())])
    })
    .await;
    let mut reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    reported.sort_unstable();
    assert_eq!(reported, ["msg-0", "msg-3", "msg-5"]);
    assert_eq!((summary.records, summary.failures), (6, 3));
    assert_eq!(
        summary.outcomes,
        BTreeMap::from([("done", 2), ("not_work", 1)])
    );
}

/// A per-record function that counts how many of its records run at once.
struct Gauge {
    running: Cell<usize>,
    most: Cell<usize>,
    started: Cell<usize>,
}

impl Gauge {
    fn new() -> Self {
        Self {
            running: Cell::new(0),
            most: Cell::new(0),
            started: Cell::new(0),
        }
    }

    fn task(&self) -> Task<impl Future<Output = Result<&'static str, ()>> + '_> {
        Task::Run(tracing::Span::none(), async move {
            self.started.set(self.started.get() + 1);
            self.running.set(self.running.get() + 1);
            self.most.set(self.most.get().max(self.running.get()));
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            self.running.set(self.running.get() - 1);
            Ok("done")
        })
    }
}

#[tokio::test]
async fn no_more_records_run_at_once_than_the_bound() {
    let plans = [Plan::Ok(0); 10];
    for bound in [1, 3, 10] {
        let gauge = Gauge::new();
        let (_, summary) = lift(&stream_of(&plans), bound, |_| gauge.task()).await;
        assert_eq!(
            (gauge.started.get(), gauge.most.get()),
            (10, bound),
            "stream, bound {bound}"
        );
        assert_eq!(summary.outcomes, BTreeMap::from([("done", 10)]));
        let gauge = Gauge::new();
        lift(&queue_of(&plans), bound, |_| gauge.task()).await;
        assert_eq!(
            (gauge.started.get(), gauge.most.get()),
            (10, bound),
            "queue, bound {bound}"
        );
    }
    let gauge = Gauge::new();
    lift(&queue_of(&plans), 0, |_| gauge.task()).await;
    assert_eq!(gauge.most.get(), 1, "a bound of 0 runs one at a time");
}

#[tokio::test]
async fn each_record_runs_inside_its_own_span() {
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
    let seen = RefCell::new(Vec::new());
    let plans = [Plan::Ok(0); 4];
    let event = queue_of(&plans);
    lift(&event, 4, |m| {
        let id = m.message_id.clone().unwrap();
        let seen = &seen;
        Task::Run(
            tracing::info_span!("record", message_id = %id),
            async move {
                tokio::task::yield_now().await;
                let current = tracing::Span::current();
                let name = current.metadata().map(|m| m.name());
                seen.borrow_mut().push((current.id(), name));
                Ok::<_, ()>("done")
            },
        )
    })
    .await;
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 4);
    assert!(seen
        .iter()
        .all(|(id, name)| id.is_some() && *name == Some("record")));
    let ids: std::collections::HashSet<_> = seen.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids.len(), 4, "one span per record");
    assert!(tracing::Span::current().is_none(), "and none outside them");
}

#[test]
fn a_deadline_is_one_only_after_the_start() {
    let now = 1_796_140_000_000;
    assert_eq!(super::deadline(0, now), None, "none in a hand-made context");
    assert_eq!(
        super::deadline(4_200_000, now),
        None,
        "not epoch ms: cargo lambda's emulator"
    );
    assert_eq!(
        super::deadline(1_796_140_000_000, now),
        None,
        "not after the start"
    );
    assert_eq!(
        super::deadline(1_796_140_060_000, now),
        Some(1_796_140_060_000)
    );
    assert_eq!(
        super::deadline(u64::MAX, now),
        None,
        "not a number of ms that fits"
    );
}
