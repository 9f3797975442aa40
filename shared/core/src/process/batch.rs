//! Batch handlers: the per-message processor lifted over a DynamoDB stream batch or an SQS batch,
//! one tracing span per record, failures reported per record (`ReportBatchItemFailures`).
//!
//! Only infrastructure errors (store or queue unreachable) are reported: handler failures go
//! through the retry path, so a poison message never blocks its shard.

use super::{Outcome, Processor};
use crate::clock::Clock;
use crate::domain::{EventId, MessageKey, SourceName};
use crate::message::{RetryRequest, StoredMessage};
use crate::queue::{Quarantine, RetryQueue};
use crate::store::schema::{BODY_REF, MESSAGE_SK};
use crate::store::{MessageStore, StoreError};
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use serde_dynamo::AttributeValue;
use tracing::Instrument;

/// Counts of what a batch did, for the log line that closes it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchSummary {
    pub records: usize,
    pub outcomes: std::collections::BTreeMap<&'static str, usize>,
    pub failures: usize,
}

fn text(item: &serde_dynamo::Item, name: &str) -> Option<String> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    }
}

/// What a stream record asks for: a message image to process, or nothing (not a new message).
fn stream_message(record: &EventRecord) -> Option<Result<StoredMessage, MessageKey>> {
    let image = &record.change.new_image;
    if record.event_name != "INSERT" || text(image, "sk").as_deref() != Some(MESSAGE_SK) {
        return None;
    }
    let by_key = || {
        let source = text(image, "source").and_then(|s| SourceName::parse(&s).ok())?;
        let event_id = text(image, "event_id").and_then(|s| EventId::parse(&s).ok())?;
        Some(Err(MessageKey::new(source, event_id)))
    };
    // A body kept in S3 is fetched by reading the message through the store.
    if image.contains_key(BODY_REF) {
        return by_key();
    }
    let mut decoded = image.clone();
    let read = crate::store::dynamo::body::decode_image(&mut decoded).and_then(|()| {
        serde_dynamo::from_item::<_, StoredMessage>(decoded).map_err(|e| e.to_string())
    });
    match read {
        Ok(m) => Some(Ok(m)),
        Err(e) => {
            // Fall back to reading the item by key.
            tracing::warn!(error = %e, "stream image not readable as a message; reading it by key");
            by_key()
        }
    }
}

impl<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock> Processor<S, R, Q, C> {
    /// Processes a stream batch, up to `concurrency` records at once. If records hit an
    /// infrastructure error, the first of them (in stream order) is reported: Lambda resumes the
    /// shard from there, and records after it that did succeed are skipped as already done.
    pub async fn handle_stream_batch(
        &self,
        event: StreamEvent,
    ) -> (DynamoDbEventResponse, BatchSummary) {
        use futures_util::StreamExt;
        let mut response = DynamoDbEventResponse::default();
        let mut summary = BatchSummary {
            records: event.records.len(),
            ..Default::default()
        };
        let mut work = Vec::with_capacity(event.records.len());
        for record in &event.records {
            match stream_message(record) {
                Some(target) => work.push((record, target)),
                None => *summary.outcomes.entry("not_a_new_message").or_default() += 1,
            }
        }
        let results: Vec<_> =
            futures_util::stream::iter(work.into_iter().map(|(record, target)| async move {
                let (source, event_id) = match &target {
                    Ok(m) => (m.source.to_string(), m.event_id.to_string()),
                    Err(k) => (k.source.to_string(), k.event_id.to_string()),
                };
                let span = tracing::info_span!("record", source, event_id, origin = "stream");
                let result = async {
                    let result = match target {
                        Ok(m) => self.process(m).await,
                        Err(k) => self.process_key(&k).await,
                    };
                    self.observe(&result);
                    result
                }
                .instrument(span)
                .await;
                (record, result)
            }))
            .buffered(self.config.concurrency.max(1))
            .collect()
            .await;
        for (record, result) in results {
            match result {
                Ok(outcome) => *summary.outcomes.entry(outcome.as_str()).or_default() += 1,
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

    /// Processes an SQS batch of retry requests; each record that hit an infrastructure error is
    /// reported and comes back after the visibility timeout.
    pub async fn handle_sqs_batch(&self, event: SqsEvent) -> (SqsBatchResponse, BatchSummary) {
        let mut response = SqsBatchResponse::default();
        let mut summary = BatchSummary {
            records: event.records.len(),
            ..Default::default()
        };
        for record in &event.records {
            let request = record
                .body
                .as_deref()
                .map(serde_json::from_str::<RetryRequest>);
            let Some(Ok(request)) = request else {
                // Unreadable forever: retrying would only carry it to the quarantine queue.
                tracing::error!(
                    message_id = record.message_id.as_deref(),
                    "retry-queue message is not a retry request; dropped"
                );
                *summary.outcomes.entry("unreadable").or_default() += 1;
                continue;
            };
            let span = tracing::info_span!(
                "record",
                source = %request.source,
                event_id = %request.event_id,
                origin = "retry_queue"
            );
            let result = async {
                let result = self.process_key(&request.key()).await;
                self.observe(&result);
                result
            }
            .instrument(span)
            .await;
            match result {
                Ok(outcome) => *summary.outcomes.entry(outcome.as_str()).or_default() += 1,
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

    /// Logs a record's result; a throttled store request also counts `StoreThrottled`.
    fn observe(&self, result: &Result<Outcome, super::InfraError>) {
        if let Err(super::InfraError::Store(StoreError::Throttled(_))) = result {
            self.count_throttled(self.clock.now_millis(), "request");
        }
        log_result(result);
    }
}

fn log_result(result: &Result<Outcome, super::InfraError>) {
    match result {
        Ok(Outcome::Retrying { attempt, delay }) => {
            tracing::warn!(
                outcome = "retrying",
                attempt,
                delay_ms = delay.as_millis() as u64,
                "handler failed; retry scheduled"
            )
        }
        Ok(Outcome::Failed {
            attempts,
            permanent,
        }) => {
            tracing::error!(
                outcome = "failed",
                attempts,
                permanent,
                "message quarantined"
            )
        }
        Ok(outcome) => tracing::info!(outcome = outcome.as_str(), "record done"),
        Err(e) => {
            let mut cause = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                cause.push_str(": ");
                cause.push_str(&s.to_string());
                source = s.source();
            }
            tracing::error!(error = %cause, "infrastructure error; the record will be delivered again (the reaper counts the attempt if it never reports)")
        }
    }
}
