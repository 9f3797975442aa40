//! A stored message as the processing side reads it, its history, and the small JSON documents
//! that travel through the queues (a retry request, a quarantine notice).

use crate::domain::{EventId, EventType, MessageKey, SourceName, Status};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One entry of a message's history, appended in the same write that changes its status.
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
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
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
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    #[serde(default)]
    pub expires_at: Option<i64>,
    /// The provider's id from a header its signature does not cover (the key's event id is then
    /// the body's hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Why a correctly signed event could not be identified (its type is then `unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_error: Option<String>,
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
    /// `exhausted` (too many transient failures) or `permanent`.
    pub reason: String,
    /// ms since the epoch.
    pub failed_at: i64,
}

impl QuarantineNotice {
    pub fn key(&self) -> MessageKey {
        MessageKey::new(self.source.clone(), self.event_id.clone())
    }
}
