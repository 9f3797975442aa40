//! The queues beside the table, one capability trait per role: the retry queue ([`RetryQueue`]:
//! processes a message again after a delay, or now, and brings a failed delivery back soon) and the quarantine queue ([`Quarantine`]: dead
//! letters an operator inspects and replays). The processor holds both; the reaper and replays only
//! re-drive, so they take only a [`RetryQueue`].
//!
//! [`sqs`] implements each role on Amazon SQS; `memory` has a fake of each for unit tests (with
//! the `test-util` feature or in this crate's tests; never in a Lambda).

#[cfg(any(test, feature = "test-util"))]
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

/// How long the processor keeps retrying a queue request that failed (a retry's send, a failed
/// retry's early redelivery) before leaving it to the reaper or the visibility timeout: a short
/// outage of the queue costs seconds, not the reaper's grace. Within the process function's 30 s
/// timeout with the attempt before it.
pub const QUEUE_PATIENCE: Duration = Duration::from_secs(12);

/// Runs `op` until it succeeds or `patience` has passed since the first try, waiting between
/// tries an eighth of `patience` (at most 500 ms) at first, doubling up to 2 s. The last error
/// is returned. `Duration::ZERO`: one try.
pub async fn patiently<T, F, Fut>(patience: Duration, mut op: F) -> Result<T, QueueError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, QueueError>>,
{
    let started = tokio::time::Instant::now();
    let mut wait = (patience / 8).min(Duration::from_millis(500));
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if started.elapsed() + wait > patience => return Err(e),
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(2));
            }
        }
    }
}

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

    /// Makes a received message (by its receipt handle) visible again `after` from now, instead of
    /// after the queue's visibility timeout: a retry that met an infrastructure error comes back
    /// soon, its receive count kept (the queue's `maxReceiveCount` still applies).
    fn redeliver_in(
        &self,
        receipt_handle: &str,
        after: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
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

    fn redeliver_in(
        &self,
        receipt_handle: &str,
        after: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).redeliver_in(receipt_handle, after)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn failing_until(ok_at: u32, tries: &AtomicU32) -> Result<u32, QueueError> {
        let n = tries.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= ok_at {
            Ok(n)
        } else {
            Err(QueueError("down".into()))
        }
    }

    #[tokio::test]
    async fn a_queue_request_is_retried_within_its_patience() {
        let tries = AtomicU32::new(0);
        let got = patiently(Duration::from_millis(400), || async {
            failing_until(3, &tries)
        })
        .await;
        assert_eq!(got.unwrap(), 3, "the third try succeeded");

        let tries = AtomicU32::new(0);
        let started = std::time::Instant::now();
        let got = patiently(Duration::from_millis(200), || async {
            failing_until(u32::MAX, &tries)
        })
        .await;
        assert!(got.is_err());
        assert!(tries.load(Ordering::SeqCst) >= 3, "retried");
        assert!(
            started.elapsed() < Duration::from_millis(800),
            "gave up in time"
        );

        let tries = AtomicU32::new(0);
        let got = patiently(Duration::ZERO, || async { failing_until(2, &tries) }).await;
        assert!(got.is_err());
        assert_eq!(tries.load(Ordering::SeqCst), 1, "no patience: one try");
    }
}
