//! The in-memory store's repeated deliveries: the journal and the counters, and what tests read
//! or set of them.

use super::{lock, MemoryStore};
use crate::domain::MessageKey;
use crate::store::{Repeat, RepeatCount, RepeatRecord};

impl MemoryStore {
    /// All journal records, in arrival order.
    pub fn journal(&self) -> Vec<Repeat> {
        lock(&self.deliveries).clone()
    }

    /// The journal of `key`, as [`crate::store::MessageStore::deliveries`] reads it back.
    pub(super) fn records_of(&self, key: &MessageKey) -> Vec<RepeatRecord> {
        lock(&self.deliveries)
            .iter()
            .filter(|d| &d.key == key)
            .map(|d| RepeatRecord {
                received_at: d.received_at_ms,
                body_sha256: d.body_digest.to_hex(),
                body_differs: d.body_differs,
            })
            .collect()
    }

    /// The repeated-delivery counter of a message, if any.
    pub fn delivery_counter(&self, key: &MessageKey) -> Option<u64> {
        lock(&self.delivery_counts).get(key).copied()
    }

    /// Sets a message's repeated-delivery counter behind the ingest path's back (tests: another
    /// delivery counted concurrently).
    pub fn set_delivery_counter(&self, key: &MessageKey, count: u64) {
        lock(&self.delivery_counts).insert(key.clone(), count);
    }

    /// [`crate::store::Inbox::count_repeat`]'s compare-and-set, once the write is counted.
    pub(super) fn count_now(&self, key: &MessageKey, expected: Option<u64>) -> RepeatCount {
        let mut counts = lock(&self.delivery_counts);
        let current = counts.get(key).copied();
        if current != expected {
            return RepeatCount::Conflict { current };
        }
        let next = expected.map_or(1, |c| c.saturating_add(1));
        counts.insert(key.clone(), next);
        RepeatCount::Counted(next)
    }
}
