//! One Lambda invocation of a function fed by the table's stream, a queue or a schedule: what the
//! event is ([`Incoming`]), and a per-record async function lifted over a DynamoDB stream batch or
//! an SQS batch ([`lift`], each kind of batch a [`Batch`]).
//!
//! The lifting has the shape of the Rust runtime's partial-batch-failure example: the per-record
//! function makes each record a [`Task`] (nothing to do, counted by name; or a future and the
//! tracing span it runs in), up to `concurrency` tasks run at once, and the records whose future
//! failed are answered as `batchItemFailures` (the event source mapping's
//! `ReportBatchItemFailures`):
//!
//! - a queue batch reports every failed message: each comes back after its visibility timeout,
//!   the others are deleted;
//! - a stream batch reports only the first failed record in stream order, whenever it failed:
//!   Lambda resumes the shard from its sequence number, so the records after it come again even
//!   if they succeeded (the per-record functions are idempotent: they find them done).
//!
//! A failure means an infrastructure error (the store or a queue unreachable), logged by the
//! per-record function: what a record's own content makes fail goes through that function's retry
//! path and is an outcome, not a failure. [`Summary`] counts what a batch did, for its log line.
//!
//! [`deadline`] reads the invocation's deadline from Lambda's context, once, for every function.

use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::StreamExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use tracing::Instrument;

/// The invocation's deadline (ms since the epoch) from Lambda's context deadline `context_ms`,
/// read at `now_ms` when the invocation starts: `None` when there is none (`0`, as a hand-made
/// test context has) or when it is not after the start. A deadline already past when an
/// invocation starts is not Lambda's (`cargo lambda watch`'s emulator hands the function a value
/// that is not epoch milliseconds): read as one, every delivery and every charge was deferred
/// in `make dev`, run after run.
pub fn deadline(context_ms: u64, now_ms: i64) -> Option<i64> {
    i64::try_from(context_ms).ok().filter(|d| *d > now_ms)
}

/// What invoked the function, read once from the raw event.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A batch of the table's stream records.
    Stream(StreamEvent),
    /// A batch of SQS messages. An empty `Records` list names no source and is read as an empty
    /// queue batch: either answer is `{"batchItemFailures": []}`.
    Queue(SqsEvent),
    /// An EventBridge scheduled event (`detail-type` `Scheduled Event`); its content is not used.
    Schedule,
}

/// An event that is none of [`Incoming`]'s.
#[derive(Debug, thiserror::Error)]
pub enum IncomingError {
    /// Records from another service.
    #[error("unsupported event: records from {0:?}; expected a DynamoDB stream or SQS batch, or a scheduled event")]
    OtherSource(String),
    /// Neither records with an event source nor a scheduled event.
    #[error("unsupported event: no records with an event source and no scheduled event; expected a DynamoDB stream or SQS batch, or a scheduled event")]
    Unrecognized,
    /// The records' source is known but the batch does not read as its event.
    #[error("a {kind} batch that does not read as one: {error}")]
    Malformed {
        kind: &'static str,
        #[source]
        error: serde_json::Error,
    },
}

impl Incoming {
    /// Reads the raw event: by the first record's `eventSource` (`aws:dynamodb`, `aws:sqs`), else
    /// by EventBridge's `detail-type`.
    pub fn parse(payload: Value) -> Result<Self, IncomingError> {
        let records = payload.get("Records").and_then(Value::as_array);
        let event_source = records
            .and_then(|r| r.first())
            .and_then(|r| r.get("eventSource"))
            .and_then(Value::as_str);
        let malformed = |kind| move |error| IncomingError::Malformed { kind, error };
        match event_source {
            Some("aws:dynamodb") => serde_json::from_value(payload)
                .map(Self::Stream)
                .map_err(malformed("DynamoDB stream")),
            Some("aws:sqs") => serde_json::from_value(payload)
                .map(Self::Queue)
                .map_err(malformed("SQS")),
            Some(other) => Err(IncomingError::OtherSource(other.to_owned())),
            None if records.is_some_and(Vec::is_empty) => Ok(Self::Queue(SqsEvent::default())),
            None if payload.get("detail-type").and_then(Value::as_str)
                == Some("Scheduled Event") =>
            {
                Ok(Self::Schedule)
            }
            None => Err(IncomingError::Unrecognized),
        }
    }
}

/// What the per-record function makes of one record.
pub enum Task<F> {
    /// Nothing to do (not work for this function, or unreadable and logged): counted in the
    /// summary under this name.
    Skip(&'static str),
    /// Work: the future runs inside the span (one per record); `Ok` names its outcome for the
    /// summary, `Err` is an infrastructure error and reports the record.
    Run(tracing::Span, F),
}

/// Counts of what a batch did, for the log line that closes it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Records in the batch.
    pub records: usize,
    /// Records by outcome (skipped ones by their [`Task::Skip`] name).
    pub outcomes: BTreeMap<&'static str, usize>,
    /// Records that met an infrastructure error.
    pub failures: usize,
}

impl Summary {
    /// The batch's closing log line; `origin` names its event source (`stream`, `retry_queue`, …).
    pub fn log(&self, origin: &'static str) {
        tracing::info!(
            origin,
            records = self.records,
            failures = self.failures,
            outcomes = ?self.outcomes,
            "batch done"
        );
    }
}

/// A batch Lambda hands over: its records, and how the ones that failed are answered.
pub trait Batch {
    /// One record of the batch.
    type Record;
    /// The answer: which records Lambda is to hand over again (`batchItemFailures`).
    type Response;
    /// Whether results are gathered in the records' order; otherwise as they finish, so that a
    /// slow record does not hold back the start of the next ones.
    const IN_ORDER: bool;

    /// The records, in the batch's order.
    fn records(&self) -> &[Self::Record];

    /// The answer, given the records that failed, in the batch's order.
    fn answer(failed: &[&Self::Record]) -> Self::Response;
}

/// A stream batch: its records in stream order, and only the first failed one answered (Lambda
/// resumes the shard from its sequence number).
impl Batch for StreamEvent {
    type Record = EventRecord;
    type Response = DynamoDbEventResponse;
    const IN_ORDER: bool = true;

    fn records(&self) -> &[EventRecord] {
        &self.records
    }

    fn answer(failed: &[&EventRecord]) -> DynamoDbEventResponse {
        let mut response = DynamoDbEventResponse::default();
        if let Some(first) = failed.first() {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = first.change.sequence_number.clone();
            response.batch_item_failures.push(failure);
        }
        response
    }
}

/// An SQS batch: every failed message answered by its id.
impl Batch for SqsEvent {
    type Record = SqsMessage;
    type Response = SqsBatchResponse;
    const IN_ORDER: bool = false;

    fn records(&self) -> &[SqsMessage] {
        &self.records
    }

    fn answer(failed: &[&SqsMessage]) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        for message in failed {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message.message_id.clone().unwrap_or_default();
            response.batch_item_failures.push(failure);
        }
        response
    }
}

/// Lifts `per_record` over `batch`: each record's [`Task`], up to `concurrency` run at once
/// (at least one), each inside its span; answers the failed records as the batch answers them
/// and counts what every record came to.
pub async fn lift<'a, B, F, Fut, E>(
    batch: &'a B,
    concurrency: usize,
    per_record: F,
) -> (B::Response, Summary)
where
    B: Batch,
    F: Fn(&'a B::Record) -> Task<Fut>,
    Fut: Future<Output = Result<&'static str, E>>,
{
    let records = batch.records();
    let mut summary = Summary {
        records: records.len(),
        ..Summary::default()
    };
    let mut work = Vec::with_capacity(records.len());
    for (index, record) in records.iter().enumerate() {
        match per_record(record) {
            Task::Skip(name) => *summary.outcomes.entry(name).or_default() += 1,
            Task::Run(span, task) => work.push(async move { (index, task.instrument(span).await) }),
        }
    }
    let work = futures_util::stream::iter(work);
    let concurrency = concurrency.max(1);
    let results: Vec<_> = if B::IN_ORDER {
        work.buffered(concurrency).collect().await
    } else {
        work.buffer_unordered(concurrency).collect().await
    };
    let mut failed = Vec::new();
    for (index, result) in results {
        match result {
            Ok(outcome) => *summary.outcomes.entry(outcome).or_default() += 1,
            Err(_) => {
                summary.failures += 1;
                failed.push(index);
            }
        }
    }
    failed.sort_unstable();
    let failed: Vec<&B::Record> = failed.into_iter().map(|i| &records[i]).collect();
    (B::answer(&failed), summary)
}

#[cfg(test)]
mod tests;
