//! In-memory fakes of the queue roles for unit tests (the `test-util` feature):
//! [`MemoryRetryQueue`] records what was scheduled, re-driven and brought back early,
//! [`MemoryQuarantine`] the notices; each can be switched off.

use super::{Quarantine, QueueError, RetryQueue};
use crate::domain::MessageKey;
use crate::message::QuarantineNotice;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
#[error("the in-memory queue is switched off")]
struct SwitchedOff;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A switch shared by both fakes: while down, every operation fails.
#[derive(Debug, Default)]
struct Switch(AtomicBool);

impl Switch {
    fn set_down(&self, down: bool) {
        self.0.store(down, Ordering::SeqCst);
    }

    fn up(&self) -> Result<(), QueueError> {
        if self.0.load(Ordering::SeqCst) {
            return Err(QueueError(Box::new(SwitchedOff)));
        }
        Ok(())
    }
}

/// A fake retry queue: records retry requests (delay zero for re-drives) and early redeliveries.
#[derive(Debug, Default)]
pub struct MemoryRetryQueue {
    scheduled: Mutex<Vec<(MessageKey, Duration)>>,
    redeliveries: Mutex<Vec<(String, Duration)>>,
    switch: Switch,
}

impl MemoryRetryQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_down(&self, down: bool) {
        self.switch.set_down(down);
    }

    /// Retry requests so far (delay zero for re-drives).
    pub fn scheduled(&self) -> Vec<(MessageKey, Duration)> {
        lock(&self.scheduled).clone()
    }

    /// The early redeliveries asked for so far: (receipt handle, after).
    pub fn redeliveries(&self) -> Vec<(String, Duration)> {
        lock(&self.redeliveries).clone()
    }

    /// Takes the retry requests so far.
    pub fn take_scheduled(&self) -> Vec<(MessageKey, Duration)> {
        std::mem::take(&mut *lock(&self.scheduled))
    }
}

impl RetryQueue for MemoryRetryQueue {
    async fn schedule(&self, key: &MessageKey, delay: Duration) -> Result<(), QueueError> {
        self.switch.up()?;
        lock(&self.scheduled).push((key.clone(), delay));
        Ok(())
    }

    async fn redrive(&self, keys: &[MessageKey]) -> Result<usize, QueueError> {
        self.switch.up()?;
        lock(&self.scheduled).extend(keys.iter().map(|k| (k.clone(), Duration::ZERO)));
        Ok(keys.len())
    }

    async fn redeliver_in(&self, receipt_handle: &str, after: Duration) -> Result<(), QueueError> {
        self.switch.up()?;
        lock(&self.redeliveries).push((receipt_handle.to_owned(), after));
        Ok(())
    }
}

/// A fake quarantine queue: records the notices.
#[derive(Debug, Default)]
pub struct MemoryQuarantine {
    notices: Mutex<Vec<QuarantineNotice>>,
    switch: Switch,
}

impl MemoryQuarantine {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_down(&self, down: bool) {
        self.switch.set_down(down);
    }

    /// The notices so far.
    pub fn quarantined(&self) -> Vec<QuarantineNotice> {
        lock(&self.notices).clone()
    }
}

impl Quarantine for MemoryQuarantine {
    async fn quarantine(&self, notice: &QuarantineNotice) -> Result<(), QueueError> {
        self.switch.up()?;
        lock(&self.notices).push(notice.clone());
        Ok(())
    }
}
