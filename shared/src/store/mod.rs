//! The storage boundary: small capability traits, the records they take, and their errors.
//!
//! [`dynamo`] implements them on DynamoDB (one table, see [`schema`]); [`memory`] is an in-memory
//! fake with the same semantics, for unit tests and benchmarks only.

pub mod dynamo;
pub mod memory;
pub mod schema;

use crate::domain::{BodyDigest, EventType, MessageKey};
use std::future::Future;

/// A message as first stored by the ingest path (status `pending`, no attempts yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    pub key: MessageKey,
    pub event_type: Option<EventType>,
    /// When the delivery arrived, milliseconds since the epoch.
    pub received_at_ms: i64,
    /// The raw body exactly as received (after API Gateway's base64, if any, is undone).
    pub body: Vec<u8>,
    pub body_digest: BodyDigest,
    /// The headers needed to re-verify the signature and re-derive the identity (lower-case names).
    pub headers: Vec<(String, String)>,
}

/// A repeated delivery of a message that is already stored, journaled beside it for audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub key: MessageKey,
    pub received_at_ms: i64,
    pub body_digest: BodyDigest,
    /// Whether this delivery's body differs from the stored message's body.
    pub body_differs: bool,
    /// The body, kept only when it differs (the original is in the message item).
    pub differing_body: Option<Vec<u8>>,
    pub headers: Vec<(String, String)>,
    /// When the journal record may be removed by TTL, seconds since the epoch.
    pub expires_at_secs: i64,
}

/// What a conditional insert found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// The message was new and is now durably stored.
    Inserted,
    /// A message with that key already exists and was left untouched; `original_digest` is its
    /// stored body hash (read from the failed condition's old image, not from a second request).
    AlreadyExists { original_digest: Option<BodyDigest> },
}

/// Why the store could not do what was asked. Every kind means "not stored": callers answer 503.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store asked us to slow down.
    #[error("the store throttled the request")]
    Throttled(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The store could not be reached or did not answer in time.
    #[error("the store is unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The store refused the request (a bug or a misconfiguration, e.g. a missing table).
    #[error("the store rejected the request")]
    Rejected(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// A short name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Throttled(_) => "throttled",
            Self::Unavailable(_) => "unavailable",
            Self::Rejected(_) => "rejected",
        }
    }
}

/// The inbox: where the ingest path stores messages exactly once.
pub trait Inbox: Send + Sync {
    /// Stores `msg` unless a message with the same key exists: one conditional write, no read
    /// before it. An existing message is never overwritten.
    fn put_if_absent(
        &self,
        msg: &NewMessage,
    ) -> impl Future<Output = Result<PutOutcome, StoreError>> + Send;

    /// Journals a repeated delivery beside its message.
    fn journal_delivery(
        &self,
        delivery: &Delivery,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

impl<T: Inbox> Inbox for std::sync::Arc<T> {
    fn put_if_absent(
        &self,
        msg: &NewMessage,
    ) -> impl Future<Output = Result<PutOutcome, StoreError>> + Send {
        (**self).put_if_absent(msg)
    }

    fn journal_delivery(
        &self,
        delivery: &Delivery,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).journal_delivery(delivery)
    }
}
