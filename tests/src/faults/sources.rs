//! Event sources and providers that survive faults, for tests that break the emulator under load:
//! the stream played like Lambda's event source mapping (batches at the processor's concurrency,
//! a batch re-delivered from its first reported failure until it succeeds, iterators re-acquired
//! from the checkpoint after an error), the retry queue (receive with the receive count, process,
//! delete the handled),
//! and a provider that re-sends a webhook until it is acknowledged with a 2xx. Idle and failed
//! polls wait [`POLL`] before the next one, as the real pollers do.

use crate::pipeline::{Pipeline, TestProcessor};
use crate::Reply;
use aws_lambda_events::event::dynamodb::EventRecord;
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use inbox_core::clock::Clock;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// How long an idle or failed poll waits before the next.
pub const POLL: Duration = Duration::from_millis(50);

/// What an event source did.
#[derive(Debug, Default)]
pub struct SourceStats {
    /// Invocations (batches handed to the processor), re-deliveries included.
    pub invocations: AtomicUsize,
    /// Re-deliveries of a batch from its first reported failure.
    pub redeliveries: AtomicUsize,
    /// Reads or receives that failed (the emulator paused, killed, restarting).
    pub read_errors: AtomicUsize,
    /// The event ids delivered (stream: INSERTs of message items).
    pub delivered: Mutex<HashSet<String>>,
    /// The stream records whose batch was handled, in order (a racer re-processes them as stale
    /// images).
    pub records: Mutex<Vec<EventRecord>>,
}

impl SourceStats {
    pub fn delivered(&self) -> HashSet<String> {
        self.delivered.lock().expect("lock").clone()
    }
}

/// The event id in a stream record's new image.
pub fn event_id_of(record: &EventRecord) -> Option<String> {
    match record.change.new_image.get("event_id") {
        Some(serde_dynamo::AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Plays the table's stream into `processor` until `stop` is set and the stream is drained.
pub async fn stream_source<C: Clock>(
    p: &Pipeline,
    processor: &TestProcessor<C>,
    stop: &AtomicBool,
    stats: &SourceStats,
) {
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let mut batch = match p.try_read_stream().await {
            Ok(batch) => batch,
            Err(_) => {
                stats.read_errors.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(POLL).await;
                continue;
            }
        };
        if batch.records.is_empty() {
            if stopping {
                return;
            }
            tokio::time::sleep(POLL).await;
            continue;
        }
        stats
            .delivered
            .lock()
            .expect("lock")
            .extend(batch.records.iter().filter_map(event_id_of));
        let handled = batch.records.clone();
        // Lambda re-delivers from the first reported record until the batch succeeds.
        loop {
            stats.invocations.fetch_add(1, Ordering::SeqCst);
            let (response, _) = processor.handle_stream_batch(batch.clone()).await;
            let Some(first) = response.batch_item_failures.first() else {
                break;
            };
            let from = batch
                .records
                .iter()
                .position(|r| r.change.sequence_number == first.item_identifier)
                .unwrap_or(0);
            batch.records.drain(..from);
            stats.redeliveries.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(POLL).await;
        }
        stats.records.lock().expect("lock").extend(handled);
    }
}

/// Plays the retry queue into `processor` until `stop` is set and nothing is visible.
pub async fn retry_source<C: Clock>(
    p: &Pipeline,
    processor: &TestProcessor<C>,
    stop: &AtomicBool,
    stats: &SourceStats,
) {
    retry_source_with(p, processor, stop, stats, &|| ()).await
}

/// [`retry_source`], calling `received` after each receive that got messages and before they are
/// handled (a fault test injects its fault there: the batch is then handled during it).
pub async fn retry_source_with<C: Clock>(
    p: &Pipeline,
    processor: &TestProcessor<C>,
    stop: &AtomicBool,
    stats: &SourceStats,
    received: &(dyn Fn() + Sync),
) {
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let received_batch = p
            .sqs
            .receive_message()
            .queue_url(&p.retry_url)
            .max_number_of_messages(10)
            .wait_time_seconds(0)
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
            )
            .send()
            .await;
        let messages = match received_batch {
            Ok(out) => out.messages.unwrap_or_default(),
            Err(_) => {
                stats.read_errors.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(POLL).await;
                continue;
            }
        };
        if messages.is_empty() {
            if stopping {
                return;
            }
            tokio::time::sleep(POLL).await;
            continue;
        }
        let mut event = SqsEvent::default();
        event.records = messages
            .into_iter()
            .map(|m| {
                let mut msg = SqsMessage::default();
                msg.message_id = m.message_id;
                msg.receipt_handle = m.receipt_handle;
                msg.body = m.body;
                // As Lambda passes them: the receive count among the message's attributes.
                msg.attributes = m
                    .attributes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v))
                    .collect();
                msg
            })
            .collect();
        received();
        stats.invocations.fetch_add(1, Ordering::SeqCst);
        let (response, _) = processor.handle_sqs_batch(event.clone()).await;
        for m in &event.records {
            let failed = response
                .batch_item_failures
                .iter()
                .any(|f| Some(&f.item_identifier) == m.message_id.as_ref());
            if let (false, Some(handle)) = (failed, &m.receipt_handle) {
                // A failed delete leaves the message to come back: harmless, processing is
                // idempotent.
                let _ = p
                    .sqs
                    .delete_message()
                    .queue_url(&p.retry_url)
                    .receipt_handle(handle)
                    .send()
                    .await;
            }
        }
    }
}

/// What a provider saw while delivering one webhook until it was acknowledged.
#[derive(Debug, Clone, Default)]
pub struct Delivered {
    /// The acknowledgement (`accepted` or `duplicate`).
    pub code: String,
    /// Every answer before it, by status.
    pub refused: BTreeMap<i64, usize>,
}

/// Sends `event_id` (a Stripe-signed test event of `TYPE`, re-signed on every attempt, as a
/// provider does) until it is answered 2xx, within `deadline`.
pub async fn deliver(p: &Pipeline, event_id: &str, deadline: Instant) -> Delivered {
    deliver_with(p, event_id, serde_json::json!({}), deadline).await
}

/// [`deliver`] with `extra` merged into the event (`fail_times`, … : what the test handlers read).
pub async fn deliver_with(
    p: &Pipeline,
    event_id: &str,
    extra: serde_json::Value,
    deadline: Instant,
) -> Delivered {
    let mut seen = Delivered::default();
    loop {
        let reply: Reply = p
            .ingest(event_id, crate::pipeline::TYPE, extra.clone())
            .await;
        if (200..300).contains(&reply.status) {
            seen.code = reply.code().to_owned();
            return seen;
        }
        *seen.refused.entry(reply.status).or_default() += 1;
        assert!(
            Instant::now() < deadline,
            "{event_id} was never acknowledged: {seen:?}, last answer {} {}",
            reply.status,
            reply.json
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
