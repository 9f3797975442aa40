//! The queues beside the table, one capability trait per role: the retry queue ([`RetryQueue`]:
//! processes a message again after a delay, or now) and the quarantine queue ([`Quarantine`]: dead
//! letters an operator inspects and replays). The processor holds both; the reaper and replays only
//! re-drive, so they take only a [`RetryQueue`].
//!
//! [`sqs`] implements each role on Amazon SQS; [`memory`] has a fake of each for unit tests.

pub mod memory;
pub mod sqs;

use crate::domain::MessageKey;
use crate::message::QuarantineNotice;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A queue operation failed; the caller treats it as an infrastructure error.
#[derive(Debug, thiserror::Error)]
#[error("the queue is unavailable")]
pub struct QueueError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Where retries are scheduled and messages re-driven.
pub trait RetryQueue: Send + Sync {
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
}

/// Where messages that keep failing are announced to an operator.
pub trait Quarantine: Send + Sync {
    /// Puts a notice on the quarantine queue.
    fn quarantine(
        &self,
        notice: &QuarantineNotice,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}

impl<T: RetryQueue> RetryQueue for Arc<T> {
    fn schedule(
        &self,
        key: &MessageKey,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).schedule(key, delay)
    }

    fn redrive(
        &self,
        keys: &[MessageKey],
    ) -> impl Future<Output = Result<usize, QueueError>> + Send {
        (**self).redrive(keys)
    }
}

impl<T: Quarantine> Quarantine for Arc<T> {
    fn quarantine(
        &self,
        notice: &QuarantineNotice,
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).quarantine(notice)
    }
}
