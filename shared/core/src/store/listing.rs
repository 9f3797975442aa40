//! Finding messages: what the open index says is due, and the filter operators list by.

use crate::domain::{MessageKey, Status};
use crate::message::StoredMessage;

/// A message the open index says is due (pending too long, retry due, or lease expired).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueMessage {
    pub key: MessageKey,
    pub status: Status,
    pub due: i64,
}

/// A filter for listing messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub status: Option<Status>,
    pub source: Option<String>,
    pub event_type: Option<String>,
    /// Received at or after, ms.
    pub since: Option<i64>,
    /// Received before, ms.
    pub until: Option<i64>,
}

impl ListFilter {
    /// Whether `m` passes the filter.
    pub fn matches(&self, m: &StoredMessage) -> bool {
        self.status.is_none_or(|s| s == m.status)
            && self
                .source
                .as_deref()
                .is_none_or(|s| s == m.source.as_str())
            && self
                .event_type
                .as_deref()
                .is_none_or(|t| m.event_type.as_ref().is_some_and(|e| e.as_str() == t))
            && self.since.is_none_or(|t| m.received_at >= t)
            && self.until.is_none_or(|t| m.received_at < t)
    }
}
