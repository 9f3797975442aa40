//! An in-memory [`Queues`] for unit tests: records what was scheduled and quarantined.

use super::{QueueError, Queues};
use crate::domain::MessageKey;
use crate::message::QuarantineNotice;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct MemoryQueues {
    scheduled: Mutex<Vec<(MessageKey, Duration)>>,
    quarantined: Mutex<Vec<QuarantineNotice>>,
    down: AtomicBool,
}

#[derive(Debug, thiserror::Error)]
#[error("the in-memory queue is switched off")]
struct SwitchedOff;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemoryQueues {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Retry requests so far (delay zero for re-drives).
    pub fn scheduled(&self) -> Vec<(MessageKey, Duration)> {
        lock(&self.scheduled).clone()
    }

    /// Takes the retry requests so far.
    pub fn take_scheduled(&self) -> Vec<(MessageKey, Duration)> {
        std::mem::take(&mut *lock(&self.scheduled))
    }

    pub fn quarantined(&self) -> Vec<QuarantineNotice> {
        lock(&self.quarantined).clone()
    }

    fn up(&self) -> Result<(), QueueError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(QueueError(Box::new(SwitchedOff)));
        }
        Ok(())
    }
}

impl Queues for MemoryQueues {
    async fn schedule(&self, key: &MessageKey, delay: Duration) -> Result<(), QueueError> {
        self.up()?;
        lock(&self.scheduled).push((key.clone(), delay));
        Ok(())
    }

    async fn redrive(&self, keys: &[MessageKey]) -> Result<usize, QueueError> {
        self.up()?;
        lock(&self.scheduled).extend(keys.iter().map(|k| (k.clone(), Duration::ZERO)));
        Ok(keys.len())
    }

    async fn quarantine(&self, notice: &QuarantineNotice) -> Result<(), QueueError> {
        self.up()?;
        lock(&self.quarantined).push(notice.clone());
        Ok(())
    }
}

impl<T: Queues> Queues for std::sync::Arc<T> {
    fn schedule(
        &self,
        key: &MessageKey,
        delay: Duration,
    ) -> impl std::future::Future<Output = Result<(), QueueError>> + Send {
        (**self).schedule(key, delay)
    }

    fn redrive(
        &self,
        keys: &[MessageKey],
    ) -> impl std::future::Future<Output = Result<usize, QueueError>> + Send {
        (**self).redrive(keys)
    }

    fn quarantine(
        &self,
        notice: &QuarantineNotice,
    ) -> impl std::future::Future<Output = Result<(), QueueError>> + Send {
        (**self).quarantine(notice)
    }
}
