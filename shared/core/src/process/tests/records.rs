//! The processor's per-record functions over whole batches, on the in-memory store: what a stream
//! record and a retry-queue message come to, and which records a batch answers as failed.

use super::*;
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord};
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use serde_dynamo::AttributeValue;

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A stream record of `event_name` whose new image is the item's key and `source`/`event_id`
/// only: not readable as a message, so the processor reads the message by key.
fn record(seq: &str, event_name: &str, sk: &str, id: &str) -> EventRecord {
    let mut r = EventRecord::default();
    r.event_name = event_name.into();
    r.change.sequence_number = Some(seq.into());
    r.change.new_image = [
        ("pk", s(&format!("MSG#stripe#{id}"))),
        ("sk", s(sk)),
        ("source", s("stripe")),
        ("event_id", s(id)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect::<std::collections::HashMap<_, _>>()
    .into();
    r
}

fn stream(records: Vec<EventRecord>) -> StreamEvent {
    let mut e = StreamEvent::default();
    e.records = records;
    e
}

fn queue(bodies: &[&str]) -> SqsEvent {
    let mut e = SqsEvent::default();
    e.records = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            let mut m = SqsMessage::default();
            m.message_id = Some(format!("msg-{i}"));
            m.body = Some((*body).into());
            m
        })
        .collect();
    e
}

fn retry_request(id: &str) -> String {
    format!(r#"{{"source":"stripe","event_id":"{id}"}}"#)
}

#[tokio::test]
async fn a_stream_batch_processes_new_messages_and_counts_what_is_not_one() {
    let w = World::new();
    let p = w.processor(Registry::new());
    w.ingest("evt_1", "customer.created").await;
    w.ingest("evt_2", "customer.created").await;
    let batch = stream(vec![
        record("1", "INSERT", "MSG", "evt_1"),
        record("2", "MODIFY", "MSG", "evt_1"),
        record("3", "INSERT", "OUT#dest_1", "evt_1"),
        record("4", "INSERT", "MSG", "evt_2"),
    ]);
    let (response, summary) = p.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        (summary.records, summary.failures, summary.outcomes),
        (4, 0, [("ignored", 2), ("not_a_new_message", 2)].into())
    );
    for id in ["evt_1", "evt_2"] {
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(id).unwrap(),
        );
        assert_eq!(w.store.message(&key).unwrap().status, Status::Ignored);
    }
}

#[tokio::test]
async fn a_stream_batch_on_a_store_that_is_down_answers_its_first_record() {
    let w = World::new();
    let p = w.processor(Registry::new());
    w.ingest("evt_1", "customer.created").await;
    w.ingest("evt_2", "customer.created").await;
    w.store.set_down(true);
    let batch = stream(vec![
        record("7", "MODIFY", "MSG", "evt_1"),
        record("8", "INSERT", "MSG", "evt_1"),
        record("9", "INSERT", "MSG", "evt_2"),
    ]);
    let (response, summary) = p.handle_stream_batch(batch).await;
    let reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_deref())
        .collect();
    assert_eq!(
        reported,
        [Some("8")],
        "the shard resumes at the first failed record"
    );
    assert_eq!(summary.failures, 2);
}

#[tokio::test]
async fn a_retry_queue_batch_drops_what_is_unreadable_and_answers_each_failure() {
    let w = World::new();
    let p = w.processor(Registry::new());
    w.ingest("evt_1", "customer.created").await;
    let batch = queue(&[
        &retry_request("evt_1"),
        "not json",
        &retry_request("evt_gone"),
    ]);
    let (response, summary) = p.handle_sqs_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        summary.outcomes,
        [("ignored", 1), ("missing", 1), ("unreadable", 1)].into()
    );
    w.store.set_down(true);
    let batch = queue(&[&retry_request("evt_1"), "{}", &retry_request("evt_2")]);
    let (response, summary) = p.handle_sqs_batch(batch).await;
    let mut reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    reported.sort_unstable();
    assert_eq!(
        reported,
        ["msg-0", "msg-2"],
        "each failed message comes back"
    );
    assert_eq!(
        (summary.failures, summary.outcomes),
        (2, [("unreadable", 1)].into())
    );
}

#[tokio::test]
async fn a_retry_that_met_an_outage_comes_back_soon_not_after_the_visibility_timeout() {
    let w = World::new();
    let p = w.processor(Registry::new());
    w.ingest("evt_1", "customer.created").await;
    w.store.set_down(true);
    let mut batch = queue(&[&retry_request("evt_1"), &retry_request("evt_2")]);
    batch.records[0].receipt_handle = Some("first-delivery".into());
    batch.records[1].receipt_handle = Some("third-delivery".into());
    batch.records[1]
        .attributes
        .insert("ApproximateReceiveCount".into(), "3".into());
    let (response, _) = p.handle_sqs_batch(batch).await;
    assert_eq!(response.batch_item_failures.len(), 2);
    let mut back = w.retry.redeliveries();
    back.sort();
    assert_eq!(
        back,
        [
            ("first-delivery".to_owned(), Duration::from_secs(10)),
            ("third-delivery".to_owned(), Duration::from_secs(40)),
        ]
    );
    w.store.set_down(false);
    let (response, _) = p.handle_sqs_batch(queue(&[&retry_request("evt_1")])).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        w.retry.redeliveries().len(),
        2,
        "only failures come back early"
    );
}

#[tokio::test]
async fn a_retry_delivered_before_its_time_is_sent_again_for_the_time_left() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(1)));
    let key = w.ingest("evt_1", "invoice.paid").await.key();
    assert!(matches!(
        p.process_key(&key).await.unwrap(),
        Outcome::Retrying { .. }
    ));
    let due = w.store.message(&key).unwrap().next_attempt_at.unwrap();
    w.retry.take_scheduled();
    w.clock.set_millis(due - 400);
    let (response, summary) = p.handle_sqs_batch(queue(&[&retry_request("evt_1")])).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.outcomes, [("skipped_not_due", 1)].into());
    assert_eq!(
        w.retry.take_scheduled(),
        vec![(key.clone(), Duration::from_millis(400))],
        "not dropped: due again when its time comes"
    );
    w.clock.set_millis(due);
    p.handle_sqs_batch(queue(&[&retry_request("evt_1")])).await;
    assert_eq!(w.store.message(&key).unwrap().status, Status::Processed);
    assert!(w.retry.take_scheduled().is_empty());
}

/// A stream record whose new image is `m` as stored (readable as a message: processed as read).
fn image_of(seq: &str, m: &StoredMessage) -> EventRecord {
    let mut item: std::collections::HashMap<String, AttributeValue> =
        serde_dynamo::to_item(m).unwrap();
    item.insert("sk".into(), s("MSG"));
    let mut r = record(seq, "INSERT", "MSG", m.event_id.as_str());
    r.change.new_image = item.into();
    r
}

#[tokio::test]
async fn a_stale_image_that_meets_a_conflict_is_read_again_not_dropped() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(1)));
    // The stream's image, then the message's own `retrying` write (in an outage its answer is
    // lost: the record fails and the stream delivers this image again).
    let stale = w.ingest("evt_1", "invoice.paid").await;
    let key = stale.key();
    assert!(matches!(
        p.process_key(&key).await.unwrap(),
        Outcome::Retrying { .. }
    ));
    w.retry.take_scheduled();
    let due = w.store.message(&key).unwrap().next_attempt_at.unwrap();

    // Before its retry time: not dropped, a retry is on its way for the time left.
    w.clock.set_millis(due - 400);
    let (response, summary) = p
        .handle_stream_batch(stream(vec![image_of("1", &stale)]))
        .await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.outcomes, [("skipped_not_due", 1)].into());
    assert_eq!(
        w.retry.take_scheduled(),
        vec![(key.clone(), Duration::from_millis(400))]
    );

    // At its retry time: processed as it now is.
    w.clock.set_millis(due);
    let (_, summary) = p
        .handle_stream_batch(stream(vec![image_of("2", &stale)]))
        .await;
    assert_eq!(summary.outcomes, [("processed", 1)].into());
    assert_eq!(w.store.message(&key).unwrap().status, Status::Processed);
}
