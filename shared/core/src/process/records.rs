//! The processor's per-record functions: a stream record (a new message) and a retry-queue
//! message (a message to process again), each taken to the per-message processor. The lifting over
//! a batch (concurrency, spans, batch item failures) is [`crate::invocation`]'s.
//!
//! Only infrastructure errors (store or queue unreachable) fail a record: handler failures go
//! through the retry path, so a poison message never blocks its shard. A failed retry-queue
//! message is made visible again within a minute rather than after the queue's visibility timeout;
//! one that arrived before its retry time is sent again for the time left, and one whose message
//! moved on since it was read (a conflict) is read again and processed as it now is.

use super::{Outcome, Processor, Skip};
use crate::clock::Clock;
use crate::domain::{EventId, MessageKey, SourceName, Status};
use crate::invocation::{self, Summary, Task};
use crate::message::{RetryRequest, StoredMessage};
use crate::policy;
use crate::queue::{Quarantine, RetryQueue};
use crate::store::schema::{BODY_REF, MESSAGE_SK};
use crate::store::{MessageStore, StoreError};
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use serde_dynamo::AttributeValue;
use std::future::Future;

/// How often SQS delivered `message` (its `ApproximateReceiveCount`; 1 when not given).
fn receive_count(message: &SqsMessage) -> u32 {
    message
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
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
    /// Processes a stream batch, up to `concurrency` records at once; the first record (in stream
    /// order) that hit an infrastructure error is reported ([`invocation::lift`], [`invocation::Batch`]).
    pub async fn handle_stream_batch(
        &self,
        event: StreamEvent,
    ) -> (DynamoDbEventResponse, Summary) {
        invocation::lift(&event, self.config.concurrency, |r| self.stream_record(r)).await
    }

    /// Processes a retry-queue batch, up to `concurrency` messages at once; each that hit an
    /// infrastructure error is reported and made visible again soon
    /// ([`policy::redelivery_after`] its receive count), not after the queue's visibility timeout.
    pub async fn handle_sqs_batch(&self, event: SqsEvent) -> (SqsBatchResponse, Summary) {
        let (response, summary) =
            invocation::lift(&event, self.config.concurrency, |m| self.queue_record(m)).await;
        // Each at once: the batch's failures share one patience, within the invocation's time.
        let early = response.batch_item_failures.iter().filter_map(|failure| {
            let message = event
                .records
                .iter()
                .find(|m| m.message_id.as_deref() == Some(failure.item_identifier.as_str()))?;
            let handle = message.receipt_handle.as_deref()?;
            let after = policy::redelivery_after(receive_count(message));
            Some(async move {
                let early = crate::queue::patiently(self.config.queue_patience, || {
                    self.retry.redeliver_in(handle, after)
                });
                if let Err(e) = early.await {
                    // It comes back after the visibility timeout instead: later, not lost.
                    tracing::warn!(message_id = %failure.item_identifier, error = %crate::error::one_line(&e), "could not bring the retry back early");
                }
            })
        });
        futures_util::future::join_all(early).await;
        (response, summary)
    }

    /// A stream record: a new message, processed from its image (or read by key).
    fn stream_record(
        &self,
        record: &EventRecord,
    ) -> Task<impl Future<Output = Result<&'static str, super::InfraError>> + '_> {
        let Some(target) = stream_message(record) else {
            return Task::Skip("not_a_new_message");
        };
        let (source, event_id) = match &target {
            Ok(m) => (m.source.to_string(), m.event_id.to_string()),
            Err(k) => (k.source.to_string(), k.event_id.to_string()),
        };
        let span = tracing::info_span!("record", source, event_id, origin = "stream");
        Task::Run(span, async move {
            let key = match &target {
                Ok(m) => m.key(),
                Err(k) => k.clone(),
            };
            let result = match target {
                Ok(m) => self.process(m).await,
                Err(k) => self.process_key(&k).await,
            };
            let result = match result {
                Ok(Outcome::Skipped(Skip::Conflict)) => self.read_again(&key).await,
                other => other,
            };
            self.observe(&result);
            result.map(|o| o.as_str())
        })
    }

    /// A retry-queue message: the retry request of a message, processed by key.
    fn queue_record(
        &self,
        message: &SqsMessage,
    ) -> Task<impl Future<Output = Result<&'static str, super::InfraError>> + '_> {
        let request = message
            .body
            .as_deref()
            .map(serde_json::from_str::<RetryRequest>);
        let Some(Ok(request)) = request else {
            // Unreadable forever: retrying would only carry it to the quarantine queue.
            tracing::error!(
                message_id = message.message_id.as_deref(),
                "retry-queue message is not a retry request; dropped"
            );
            return Task::Skip("unreadable");
        };
        let span = tracing::info_span!(
            "record",
            source = %request.source,
            event_id = %request.event_id,
            origin = "retry_queue"
        );
        Task::Run(span, async move {
            let key = request.key();
            let result = match self.process_key(&key).await {
                Ok(Outcome::Skipped(Skip::NotDue)) => self.arrived_early(&key).await,
                Ok(Outcome::Skipped(Skip::Conflict)) => self.read_again(&key).await,
                other => other,
            };
            self.observe(&result);
            result.map(|o| o.as_str())
        })
    }

    /// A conflict: the item this record was processed from was stale (the stream's image of a
    /// message since moved on, perhaps by this message's own write whose answer was lost in an
    /// outage, or a racing invocation's). Dropping the record would leave a message `retrying`
    /// with no retry on its way until the reaper's grace ran out: it is read again and processed
    /// as it now is, and a retry not due yet is sent for the time left. One that another
    /// invocation finished or holds is still this record's conflict (what it counts as).
    async fn read_again(&self, key: &MessageKey) -> Result<Outcome, super::InfraError> {
        match self.process_key(key).await? {
            Outcome::Skipped(Skip::NotDue) => self.arrived_early(key).await,
            Outcome::Skipped(_) => Ok(Outcome::Skipped(Skip::Conflict)),
            other => Ok(other),
        }
    }

    /// A retry delivered before its time (a queue's delay is not exact): sent again for the time
    /// that is left, so that dropping this delivery loses nothing (it would otherwise wait for the
    /// reaper's deadline, the retry time plus its grace).
    async fn arrived_early(&self, key: &MessageKey) -> Result<Outcome, super::InfraError> {
        let now = self.clock.now_millis();
        let left = match self.store.get(key).await? {
            Some(m) if m.status == Status::Retrying => m.next_attempt_at.map(|at| at - now),
            _ => None,
        };
        if let Some(left) = left.filter(|ms| *ms > 0) {
            let delay = std::time::Duration::from_millis(u64::try_from(left).unwrap_or(0));
            crate::queue::patiently(self.config.queue_patience, || {
                self.retry.schedule(key, delay)
            })
            .await?;
        }
        Ok(Outcome::Skipped(Skip::NotDue))
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
            tracing::error!(error = %crate::error::one_line(e), "infrastructure error; the record will be delivered again (the reaper counts the attempt if it never reports)")
        }
    }
}
