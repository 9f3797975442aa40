//! An in-memory inbox with the DynamoDB adapter's semantics: for unit tests and benchmarks only.

use super::{Delivery, Inbox, NewMessage, PutOutcome, StoreError};
use crate::domain::MessageKey;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Messages and journal records held in memory, with a switch to simulate an outage and a count
/// of write requests (what the DynamoDB adapter would send).
#[derive(Debug, Default)]
pub struct MemoryInbox {
    messages: Mutex<HashMap<MessageKey, NewMessage>>,
    deliveries: Mutex<Vec<Delivery>>,
    down: AtomicBool,
    writes: AtomicUsize,
}

#[derive(Debug, thiserror::Error)]
#[error("the in-memory store is switched off")]
struct SwitchedOff;

impl MemoryInbox {
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every later request fail as `Unavailable` (or succeed again).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Write requests received so far (failed ones included).
    pub fn write_requests(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// A stored message, if any.
    pub fn message(&self, key: &MessageKey) -> Option<NewMessage> {
        lock(&self.messages).get(key).cloned()
    }

    /// How many messages are stored.
    pub fn message_count(&self) -> usize {
        lock(&self.messages).len()
    }

    /// All journal records, in arrival order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        lock(&self.deliveries).clone()
    }

    fn request(&self) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(Box::new(SwitchedOff)));
        }
        Ok(())
    }
}

/// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Inbox for MemoryInbox {
    async fn put_if_absent(&self, msg: &NewMessage) -> Result<PutOutcome, StoreError> {
        self.request()?;
        let mut messages = lock(&self.messages);
        if let Some(existing) = messages.get(&msg.key) {
            return Ok(PutOutcome::AlreadyExists {
                original_digest: Some(existing.body_digest),
            });
        }
        messages.insert(msg.key.clone(), msg.clone());
        Ok(PutOutcome::Inserted)
    }

    async fn journal_delivery(&self, delivery: &Delivery) -> Result<(), StoreError> {
        self.request()?;
        lock(&self.deliveries).push(delivery.clone());
        Ok(())
    }
}
