//! The in-memory store's message rows. The ingest path's insert keeps the [`NewMessage`] as it
//! came; the full [`StoredMessage`] (its header map, its history) is built from it the first time
//! something reads or changes the message — the same value, but not on every insert, where the
//! DynamoDB adapter only sends the item.

use super::super::schema::PENDING_GRACE_MS;
use super::super::NewMessage;
use crate::domain::Status;
use crate::message::{HistoryEntry, StoredMessage};
use std::borrow::Cow;

/// A message and its place in the open index.
#[derive(Debug, Clone)]
pub(super) struct Row {
    /// The message as inserted (status `pending`, version 0).
    new: NewMessage,
    /// The message as stored, once something read it to change it (`None`: still as inserted).
    stored: Option<StoredMessage>,
    /// `Some(due)` while in the open index (its `OPEN#` shard).
    pub(super) open_due: Option<i64>,
    /// `Some((partition, failed at))` while failed: its entry among the `FAILED#` partitions.
    pub(super) failed: Option<(String, i64)>,
}

impl Row {
    /// The row a conditional insert of `msg` writes.
    pub(super) fn new(msg: &NewMessage) -> Self {
        Self {
            new: msg.clone(),
            stored: None,
            open_due: Some(msg.received_at_ms + PENDING_GRACE_MS),
            failed: None,
        }
    }

    /// The message as stored.
    pub(super) fn message(&self) -> Cow<'_, StoredMessage> {
        match &self.stored {
            Some(m) => Cow::Borrowed(m),
            None => Cow::Owned(stored(&self.new)),
        }
    }

    /// The message as stored, to change it.
    pub(super) fn message_mut(&mut self) -> &mut StoredMessage {
        let new = &self.new;
        self.stored.get_or_insert_with(|| stored(new))
    }

    /// `t` applied: the message, and its open-index entry moved (`OPEN#…`, `FAILED#…` or none).
    pub(super) fn apply(&mut self, key: &crate::domain::MessageKey, t: &super::super::Transition) {
        t.apply_to(self.message_mut());
        self.open_due = t.open_due;
        self.failed = t
            .index_entry(key)
            .filter(|(shard, _)| shard.starts_with(super::super::schema::FAILED_SHARD_PREFIX));
    }

    pub(super) fn body(&self) -> &[u8] {
        self.stored.as_ref().map_or(&self.new.body, |m| &m.body)
    }

    pub(super) fn status(&self) -> Status {
        self.stored.as_ref().map_or(Status::Pending, |m| m.status)
    }

    pub(super) fn version(&self) -> u64 {
        self.stored.as_ref().map_or(0, |m| m.version)
    }
}

impl super::MemoryStore {
    /// A message's `FAILED#…` entry (partition, time failed), if any (test assertions).
    pub fn failed_entry(&self, key: &crate::domain::MessageKey) -> Option<(String, i64)> {
        super::lock(&self.rows)
            .get(key)
            .and_then(|r| r.failed.clone())
    }
}

/// The message a conditional insert of `msg` stores.
pub(super) fn stored(msg: &NewMessage) -> StoredMessage {
    StoredMessage {
        source: msg.key.source.clone(),
        event_id: msg.key.event_id.clone(),
        event_type: msg.event_type.clone(),
        status: Status::Pending,
        received_at: msg.received_at_ms,
        body: msg.body.clone(),
        body_sha256: msg.body_digest.map(|d| d.to_hex()).unwrap_or_default(),
        headers: msg.headers.iter().cloned().collect(),
        attempts: 0,
        version: 0,
        lease_until: None,
        next_attempt_at: None,
        last_error: None,
        history: vec![HistoryEntry::new(
            msg.received_at_ms,
            Status::Pending,
            "received",
        )],
        history_total: 0,
        expires_at: None,
        provider_id: msg.provider_id.as_ref().map(|id| id.as_str().to_owned()),
        identity_error: msg.unidentified.clone(),
        batch: msg.batch.clone(),
        open_due: Some(msg.received_at_ms + PENDING_GRACE_MS),
        notice_pending: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventId, EventType, MessageKey, SourceName};

    fn message() -> NewMessage {
        NewMessage {
            key: MessageKey::new(
                SourceName::parse("stripe").unwrap(),
                EventId::parse("evt_1").unwrap(),
            ),
            event_type: Some(EventType::parse("a.b").unwrap()),
            received_at_ms: 1_000,
            body: b"{}".to_vec(),
            body_digest: None,
            headers: vec![("content-type".into(), "application/json".into())],
            provider_id: None,
            unidentified: None,
            batch: None,
        }
    }

    /// A row reads as the stored message of its insert until changed, and then as changed.
    #[test]
    fn a_row_is_its_insert_until_changed() {
        let msg = message();
        let mut row = Row::new(&msg);
        assert_eq!(*row.message(), stored(&msg));
        assert_eq!((row.status(), row.version()), (Status::Pending, 0));
        assert_eq!(row.body(), b"{}");
        assert_eq!(row.open_due, Some(1_000 + PENDING_GRACE_MS));

        let m = row.message_mut();
        m.status = Status::Processed;
        m.version = 3;
        m.body = b"[]".to_vec();
        assert_eq!((row.status(), row.version()), (Status::Processed, 3));
        assert_eq!(row.body(), b"[]");
        let mut expected = stored(&msg);
        expected.status = Status::Processed;
        expected.version = 3;
        expected.body = b"[]".to_vec();
        assert_eq!(*row.message(), expected);
        assert_eq!(*row.clone().message_mut(), expected);
    }
}
