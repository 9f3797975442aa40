//! A stored message as the processing side reads it, its bounded history, and the small JSON
//! documents that travel through the queues (a retry request, a quarantine notice).
//!
//! A message keeps its last [`HISTORY_LIMIT`] history entries and the count of all it ever had
//! ([`StoredMessage::history_total`]): retries and replays can never grow an item towards
//! DynamoDB's 400 KB. Every transition is conditioned on the version it read, so the new list is
//! computed here, from that read ([`StoredMessage::history_after`]), and written whole.

use crate::domain::{EventId, EventType, MessageKey, SourceName, Status};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How many history entries a message keeps (the newest; older ones are counted, not kept).
pub const HISTORY_LIMIT: usize = 20;

/// The longest error text kept in a history entry or `last_error`, in bytes (cut at a character
/// boundary): 20 entries of errors stay far below the room a maximal body leaves in an item.
pub const MAX_ERROR_BYTES: usize = 1000;

/// `text` cut to at most `max` bytes at a character boundary.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// One entry of a message's history, written in the same write that changes its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// When, ms since the epoch.
    pub at: i64,
    /// The status the message moved to.
    pub status: Status,
    /// What happened (`received`, `claimed`, `processed`, `retry scheduled`, `replayed by …`).
    pub note: String,
    /// The attempt this entry closes, if it closes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The attempt's error, for failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the attempt took, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl HistoryEntry {
    /// An entry without attempt details.
    pub fn new(at: i64, status: Status, note: impl Into<String>) -> Self {
        Self {
            at,
            status,
            note: note.into(),
            attempt: None,
            error: None,
            duration_ms: None,
        }
    }
}

/// A message item, read back (from `GetItem` or a stream record's new image).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub source: SourceName,
    pub event_id: EventId,
    #[serde(default)]
    pub event_type: Option<EventType>,
    pub status: Status,
    /// ms since the epoch.
    pub received_at: i64,
    /// The raw body (the DynamoDB adapter decompresses it, or fetches it from S3).
    #[serde(with = "serde_bytes", default)]
    pub body: Vec<u8>,
    /// Lower-case hex SHA-256 of the body when it was stored (messages written before bodies were
    /// compressed, bodies kept in S3, ids that are the body's hash); empty otherwise.
    #[serde(default)]
    pub body_sha256: String,
    #[serde(default)]
    pub headers: HashMap<String, String>,
    #[serde(default)]
    pub attempts: u32,
    /// Optimistic-concurrency version: every transition is conditioned on it and increments it.
    #[serde(default)]
    pub version: u64,
    #[serde(default)]
    pub lease_until: Option<i64>,
    #[serde(default)]
    pub next_attempt_at: Option<i64>,
    #[serde(default)]
    pub last_error: Option<String>,
    /// The newest [`HISTORY_LIMIT`] entries, oldest first.
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    /// How many entries the history ever had (absent on items written before it was bounded:
    /// see [`StoredMessage::history_count`]).
    #[serde(default)]
    pub history_total: u64,
    #[serde(default)]
    pub expires_at: Option<i64>,
    /// The provider's id from a header its signature does not cover (the key's event id is then
    /// the body's hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Why a correctly signed event could not be identified (its type is then `unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_error: Option<String>,
    /// For an event split from a batch: where in the signed body it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<crate::batch::BatchPart>,
    /// When the open index says the message is due (a delivery's deadline), ms; `None` once it
    /// left the index, and for a failed message whose entry is among the `FAILED#` partitions
    /// (not a due: the stores read it back as `None`).
    #[serde(default)]
    pub open_due: Option<i64>,
    /// A failed message whose quarantine notice is not yet known to be sent: it stays in the open
    /// index until the notice is sent (by the processor that failed it, else by the reaper).
    #[serde(default)]
    pub notice_pending: Option<PendingNotice>,
}

/// Why a message failed for good, as its quarantine notice says it (`"exhausted"`,
/// `"permanent"` on the wire and in the item).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureReason {
    /// Its last attempt failed, each one a transient failure.
    Exhausted,
    /// A failure that fails the same way every time: quarantined at once.
    Permanent,
}

impl FailureReason {
    /// The name the notice carries.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exhausted => "exhausted",
            Self::Permanent => "permanent",
        }
    }
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The part of a quarantine notice that is decided when a message fails (the rest is the
/// message's): kept in the item until the notice is sent, so whoever sends it sends the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingNotice {
    pub reason: FailureReason,
    /// ms since the epoch.
    pub failed_at: i64,
}

impl StoredMessage {
    /// The message's key.
    pub fn key(&self) -> MessageKey {
        MessageKey::new(self.source.clone(), self.event_id.clone())
    }

    /// The idempotency key for effects outside DynamoDB (an HTTP call with an `Idempotency-Key`):
    /// stable for the message's whole life, replays included.
    pub fn idempotency_key(&self) -> String {
        format!("{}:{}", self.source, self.event_id)
    }

    /// How many history entries the message ever had (kept or not).
    pub fn history_count(&self) -> u64 {
        self.history_total.max(self.history.len() as u64)
    }

    /// The history after appending `entry`: the newest [`HISTORY_LIMIT`] entries and the new
    /// total, to be written whole by a transition conditioned on this message's version.
    pub fn history_after(&self, entry: HistoryEntry) -> (Vec<HistoryEntry>, u64) {
        let keep = HISTORY_LIMIT.saturating_sub(1);
        let skip = self.history.len().saturating_sub(keep);
        let mut history: Vec<HistoryEntry> = self.history[skip..].to_vec();
        history.push(entry);
        (history, self.history_count() + 1)
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

/// The body of a retry-queue message: which message to (re)process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryRequest {
    pub source: SourceName,
    pub event_id: EventId,
}

impl From<&MessageKey> for RetryRequest {
    fn from(k: &MessageKey) -> Self {
        Self {
            source: k.source.clone(),
            event_id: k.event_id.clone(),
        }
    }
}

impl RetryRequest {
    pub fn key(&self) -> MessageKey {
        MessageKey::new(self.source.clone(), self.event_id.clone())
    }
}

/// The body of a quarantine-queue message: enough to find, understand and replay the message
/// (its payload stays in the table while it is failed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineNotice {
    pub source: SourceName,
    pub event_id: EventId,
    #[serde(default)]
    pub event_type: Option<EventType>,
    pub attempts: u32,
    pub last_error: String,
    pub reason: FailureReason,
    /// ms since the epoch.
    pub failed_at: i64,
}

impl QuarantineNotice {
    /// The notice a failed message is waiting to have sent, if any.
    pub fn pending_of(m: &StoredMessage) -> Option<Self> {
        let pending = m.notice_pending.as_ref()?;
        Some(Self {
            source: m.source.clone(),
            event_id: m.event_id.clone(),
            event_type: m.event_type.clone(),
            attempts: m.attempts,
            last_error: m.last_error.clone().unwrap_or_default(),
            reason: pending.reason,
            failed_at: pending.failed_at,
        })
    }

    pub fn key(&self) -> MessageKey {
        MessageKey::new(self.source.clone(), self.event_id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(entries: usize) -> StoredMessage {
        StoredMessage {
            source: SourceName::parse("stripe").unwrap(),
            event_id: EventId::parse("evt_1").unwrap(),
            event_type: None,
            status: Status::Pending,
            received_at: 0,
            body: Vec::new(),
            body_sha256: String::new(),
            headers: HashMap::new(),
            attempts: 0,
            version: 0,
            lease_until: None,
            next_attempt_at: None,
            last_error: None,
            history: (0..entries)
                .map(|i| HistoryEntry::new(i as i64, Status::Retrying, format!("entry {i}")))
                .collect(),
            history_total: 0,
            expires_at: None,
            open_due: None,
            notice_pending: None,
            provider_id: None,
            identity_error: None,
            batch: None,
        }
    }

    #[test]
    fn history_keeps_the_newest_entries_and_counts_all() {
        let m = message(3);
        let (h, total) = m.history_after(HistoryEntry::new(9, Status::Processed, "done"));
        assert_eq!((h.len(), total), (4, 4));
        let mut m = message(HISTORY_LIMIT);
        m.history_total = 57;
        let (h, total) = m.history_after(HistoryEntry::new(99, Status::Processed, "done"));
        assert_eq!((h.len(), total), (HISTORY_LIMIT, 58));
        assert_eq!(h[0].note, "entry 1", "the oldest entry went");
        assert_eq!(h.last().unwrap().note, "done", "the new one is last");
        // 1,000 transitions later the history is still bounded.
        for i in 0..1000 {
            let (h, total) = m.history_after(HistoryEntry::new(i, Status::Retrying, "again"));
            m.history = h;
            m.history_total = total;
        }
        assert_eq!((m.history.len(), m.history_count()), (HISTORY_LIMIT, 1057));
        assert_eq!(
            message(5).history_count(),
            5,
            "items written before the count existed"
        );
    }

    #[test]
    fn clip_cuts_at_a_character_boundary() {
        assert_eq!(clip("abc", 10), "abc");
        assert_eq!(clip("abcdef", 3), "abc");
        assert_eq!(clip("ééé", 3), "é", "2-byte characters: never half of one");
        assert!(clip(&"€".repeat(1000), MAX_ERROR_BYTES).len() <= MAX_ERROR_BYTES);
    }

    #[test]
    fn a_pending_notice_is_the_notice_whoever_sends_it() {
        let mut m = message(1);
        assert_eq!(QuarantineNotice::pending_of(&m), None);
        m.attempts = 5;
        m.last_error = Some("boom".into());
        m.notice_pending = Some(PendingNotice {
            reason: FailureReason::Exhausted,
            failed_at: 42,
        });
        let n = QuarantineNotice::pending_of(&m).unwrap();
        assert_eq!(
            (n.attempts, n.last_error.as_str(), n.reason, n.failed_at),
            (5, "boom", FailureReason::Exhausted, 42)
        );
        assert_eq!(n.key(), m.key());
    }

    #[test]
    fn a_notice_on_the_wire_names_its_reason_as_before() {
        let notice = |reason| QuarantineNotice {
            source: SourceName::parse("stripe").unwrap(),
            event_id: EventId::parse("evt_1").unwrap(),
            event_type: None,
            attempts: 5,
            last_error: "boom".into(),
            reason,
            failed_at: 42,
        };
        for (reason, name) in [
            (FailureReason::Exhausted, "exhausted"),
            (FailureReason::Permanent, "permanent"),
        ] {
            let json = serde_json::to_string(&notice(reason)).unwrap();
            assert_eq!(
                json,
                format!(
                    r#"{{"source":"stripe","event_id":"evt_1","event_type":null,"attempts":5,"last_error":"boom","reason":"{name}","failed_at":42}}"#
                )
            );
            assert_eq!(
                serde_json::from_str::<QuarantineNotice>(&json).unwrap(),
                notice(reason)
            );
            assert_eq!((reason.as_str(), reason.to_string()), (name, name.into()));
            // The pending notice kept in the message item: the same string attribute.
            let pending = PendingNotice {
                reason,
                failed_at: 42,
            };
            assert_eq!(
                serde_dynamo::to_attribute_value::<_, serde_dynamo::AttributeValue>(&pending)
                    .unwrap(),
                serde_dynamo::AttributeValue::M(HashMap::from([
                    (
                        "reason".into(),
                        serde_dynamo::AttributeValue::S(name.into())
                    ),
                    (
                        "failed_at".into(),
                        serde_dynamo::AttributeValue::N("42".into())
                    ),
                ]))
            );
        }
        assert!(
            serde_json::from_str::<FailureReason>(r#""tired""#).is_err(),
            "only the two reasons"
        );
    }
}
