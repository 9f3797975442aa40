//! The deliver function's batches: new delivery and fan-out items from the table's stream (the
//! event source mapping passes only INSERTs of `sk` `OUT` and `FAN`), and work from the delivery
//! queue. Up to `concurrency` records at once, one tracing span each; only infrastructure errors
//! (store or queue unreachable) are reported as batch item failures, so one failing destination
//! never holds up the others.

use super::delivery::{FanoutItem, OutboundDelivery};
use super::queue::{OutboxQueues, Work};
use super::schema::{DELIVERY_SK, FANOUT_SK};
use super::store::OutboxStore;
use super::transport::Transport;
use super::worker::{Deliverer, DeliveryOutcome};
use crate::clock::Clock;
use crate::process::batch::BatchSummary;
use crate::process::InfraError;
use crate::store::{ItemStore, ItemWriter, MessageStore};
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::StreamExt;
use tracing::Instrument;

/// What a stream record asks for.
enum StreamWork {
    Deliver(Box<OutboundDelivery>),
    Expand(FanoutItem),
}

fn stream_work(record: &EventRecord) -> Option<Result<StreamWork, String>> {
    let image = &record.change.new_image;
    let sk = match image.get("sk") {
        Some(serde_dynamo::AttributeValue::S(s)) => s.as_str(),
        _ => return None,
    };
    if record.event_name != "INSERT" {
        return None;
    }
    match sk {
        DELIVERY_SK => Some(
            serde_dynamo::from_item::<_, OutboundDelivery>(image.clone())
                .map(|d| StreamWork::Deliver(Box::new(d)))
                .map_err(|e| e.to_string()),
        ),
        FANOUT_SK => Some(
            serde_dynamo::from_item::<_, FanoutItem>(image.clone())
                .map(StreamWork::Expand)
                .map_err(|e| e.to_string()),
        ),
        _ => None,
    }
}

fn log_result(result: &Result<DeliveryOutcome, InfraError>) {
    match result {
        Ok(DeliveryOutcome::Retrying { attempt, delay }) => {
            tracing::warn!(
                outcome = "retrying",
                attempt,
                delay_ms = delay.as_millis() as u64,
                "attempt failed; retry scheduled"
            )
        }
        Ok(DeliveryOutcome::Failed { attempts }) => {
            tracing::error!(outcome = "failed", attempts, "delivery failed")
        }
        Ok(o) => tracing::info!(outcome = o.as_str(), "delivery done"),
        Err(e) => {
            let mut cause = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                cause.push_str(": ");
                cause.push_str(&s.to_string());
                source = s.source();
            }
            tracing::error!(error = %cause, "infrastructure error; the record will be delivered again")
        }
    }
}

impl<S, T, Q, C> Deliverer<S, T, Q, C>
where
    S: OutboxStore + MessageStore + ItemStore + ItemWriter + Clone,
    T: Transport,
    Q: OutboxQueues,
    C: Clock,
{
    /// A stream batch: the first record (in stream order) that hit an infrastructure error is
    /// reported, so Lambda resumes there (records after it that succeeded are skipped as done).
    pub async fn handle_stream_batch(
        &self,
        event: StreamEvent,
    ) -> (DynamoDbEventResponse, BatchSummary) {
        let mut summary = BatchSummary {
            records: event.records.len(),
            ..Default::default()
        };
        let mut work = Vec::new();
        for record in &event.records {
            match stream_work(record) {
                Some(Ok(w)) => work.push((record, w)),
                Some(Err(e)) => {
                    tracing::error!(error = %e, "a stream image is not a readable outbox item; skipped (the sweep reads it by key)");
                    *summary.outcomes.entry("unreadable").or_default() += 1;
                }
                None => *summary.outcomes.entry("not_outbox_work").or_default() += 1,
            }
        }
        let results: Vec<_> = futures_util::stream::iter(work.into_iter().map(|(record, w)| async move {
            let result = match w {
                StreamWork::Deliver(d) => {
                    let span = tracing::info_span!("delivery", destination = %d.destination, source = %d.source, event_id = %d.event_id, origin = "stream");
                    self.deliver_item(*d).instrument(span).await
                }
                StreamWork::Expand(f) => {
                    let span = tracing::info_span!("fanout", source = %f.source, event_id = %f.event_id, origin = "stream");
                    self.expand(&f.key()).instrument(span).await
                }
            };
            log_result(&result);
            (record, result)
        }))
        .buffered(self.config.concurrency.max(1))
        .collect()
        .await;
        let mut response = DynamoDbEventResponse::default();
        for (record, result) in results {
            match result {
                Ok(o) => *summary.outcomes.entry(o.as_str()).or_default() += 1,
                Err(_) => {
                    summary.failures += 1;
                    if response.batch_item_failures.is_empty() {
                        let mut failure = DynamoDbBatchItemFailure::default();
                        failure.item_identifier = record.change.sequence_number.clone();
                        response.batch_item_failures.push(failure);
                    }
                }
            }
        }
        (response, summary)
    }

    /// A delivery-queue batch; each record that hit an infrastructure error is reported and comes
    /// back after the visibility timeout.
    pub async fn handle_sqs_batch(&self, event: SqsEvent) -> (SqsBatchResponse, BatchSummary) {
        let mut summary = BatchSummary {
            records: event.records.len(),
            ..Default::default()
        };
        let mut work = Vec::new();
        for record in &event.records {
            match record.body.as_deref().map(serde_json::from_str::<Work>) {
                Some(Ok(w)) => work.push((record, w)),
                _ => {
                    tracing::error!(
                        message_id = record.message_id.as_deref(),
                        "delivery-queue message is not outbox work; dropped"
                    );
                    *summary.outcomes.entry("unreadable").or_default() += 1;
                }
            }
        }
        let results: Vec<_> = futures_util::stream::iter(work.into_iter().map(|(record, w)| async move {
            let span = match &w {
                Work::Delivery(r) => tracing::info_span!("delivery", destination = %r.destination, source = %r.source, event_id = %r.event_id, origin = "queue"),
                Work::Fanout { source, event_id } => tracing::info_span!("fanout", source = %source, event_id = %event_id, origin = "queue"),
            };
            let result = self.work(&w).instrument(span).await;
            log_result(&result);
            (record, result)
        }))
        .buffer_unordered(self.config.concurrency.max(1))
        .collect()
        .await;
        let mut response = SqsBatchResponse::default();
        for (record, result) in results {
            match result {
                Ok(o) => *summary.outcomes.entry(o.as_str()).or_default() += 1,
                Err(_) => {
                    summary.failures += 1;
                    let mut failure = BatchItemFailure::default();
                    failure.item_identifier = record.message_id.clone().unwrap_or_default();
                    response.batch_item_failures.push(failure);
                }
            }
        }
        (response, summary)
    }
}
