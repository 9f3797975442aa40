//! The queues beside the table: the retry queue (re-drives a message after a delay) and the
//! quarantine queue (dead letters an operator inspects and replays).
//!
//! [`sqs`] implements [`Queues`] on Amazon SQS; [`memory`] is a fake for unit tests.

pub mod memory;
pub mod sqs;

use crate::domain::MessageKey;
use crate::message::QuarantineNotice;
use std::future::Future;
use std::time::Duration;

/// A queue operation failed; the caller treats it as an infrastructure error.
#[derive(Debug, thiserror::Error)]
#[error("the queue is unavailable")]
pub struct QueueError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Where retries are scheduled and failures quarantined.
pub trait Queues: Send + Sync {
    /// Asks for `key` to be processed again after `delay` (at most 15 minutes).
    fn schedule(
        &self,
        key: &MessageKey,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Asks for each key to be processed again now (the reaper, replays). Returns how many were sent.
    fn redrive(
        &self,
        keys: &[MessageKey],
    ) -> impl Future<Output = Result<usize, QueueError>> + Send;

    /// Puts a notice on the quarantine queue.
    fn quarantine(
        &self,
        notice: &QuarantineNotice,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}
