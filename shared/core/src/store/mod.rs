//! The storage boundary: small capability traits, the records they take, and their errors.
//!
//! - [`Inbox`]: the ingest path's one conditional write (and the duplicate journal).
//! - [`MessageStore`]: the processing side: read a message, move it to its next status under an
//!   optimistic-concurrency condition together with a handler's effects (one transaction), find
//!   the messages that are due, and list them for operators. A status change is a [`Transition`]
//!   (`transition.rs`).
//! - [`ItemStore`] and [`ItemWriter`]: an application's own items in the same table: reads, and
//!   [`Effect`]s committed atomically outside a message transition (e.g. creating an account).
//!
//! [`dynamo`] implements them on DynamoDB (one table, see [`schema`]); [`memory`] is an in-memory
//! fake with the same semantics, for unit tests and benchmarks only. [`attr`] builds and reads
//! attribute values.

pub mod attr;
pub mod dynamo;
pub mod memory;
pub mod schema;
mod transition;
mod writer;

pub use transition::{Applied, Transition};
pub use writer::{ItemWriter, TooManyEffects, MAX_COMMIT_EFFECTS};

use crate::domain::{BodyDigest, EventType, MessageKey, Status};
use crate::message::StoredMessage;
use std::future::Future;

/// An item: attribute name → value (the DynamoDB SDK's types, also used by the in-memory store).
pub type Item = std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>;

/// A write a handler wants committed atomically with the message's transition (one element of
/// the same `TransactWriteItems`). Both stores apply the first three kinds with the same
/// semantics; `Raw` is for handlers that need a DynamoDB feature the others do not cover.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Creates the item (it carries `pk` and `sk`); the whole commit fails with
    /// [`Applied::EffectConflict`] if an item with that key exists.
    Create(Item),
    /// Writes the item in place of the one whose `version` is `expected_version` (`None`: there
    /// must be none), setting `version` to `expected_version + 1` (0 for a new item).
    Replace {
        item: Item,
        expected_version: Option<u64>,
    },
    /// Adds `add` to numeric attributes (absent counts as 0) and sets `set`, creating the item if
    /// absent. Unconditional and commutative: concurrent adjustments never conflict (balances).
    Adjust {
        pk: String,
        sk: String,
        add: Vec<(String, i64)>,
        set: Vec<(String, aws_sdk_dynamodb::types::AttributeValue)>,
    },
    /// Any DynamoDB transaction element (only the DynamoDB adapter applies it; the in-memory
    /// store records it).
    Raw(Box<aws_sdk_dynamodb::types::TransactWriteItem>),
}

/// The most effects one handler may commit with a transition (DynamoDB allows 100 items per
/// transaction; one is the message itself).
pub const MAX_EFFECTS: usize = 99;

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
    /// The store refused the request's content (an item above 400 KB, an attribute of the wrong
    /// type, a `ValidationError` cancelling a transaction): it fails the same way every time, so a
    /// message whose handler asked for it fails permanently, with the reason.
    #[error("the store refused the request as invalid")]
    Invalid(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// A short name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Throttled(_) => "throttled",
            Self::Unavailable(_) => "unavailable",
            Self::Rejected(_) => "rejected",
            Self::Invalid(_) => "invalid",
        }
    }

    /// The error with its causes, one line (`a: b: c`), for a message's history and logs.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        text
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

/// Plain item access for applications that keep their own items in the table: reads here,
/// writes as [`Effect`]s committed with a message's transition (or, outside one, through
/// [`ItemWriter`]).
pub trait ItemStore: Send + Sync {
    /// One item by key (strongly consistent).
    fn get_item(
        &self,
        pk: &str,
        sk: &str,
    ) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send;

    /// Every item of a partition whose sort key starts with `sk_prefix`, in sort-key order.
    fn query_items(
        &self,
        pk: &str,
        sk_prefix: &str,
    ) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send;

    /// Every item whose `kind` attribute is `kind` (a scan: for reports, not hot paths).
    fn items_of_kind(
        &self,
        kind: &str,
    ) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send;
}

impl<T: ItemStore> ItemStore for std::sync::Arc<T> {
    fn get_item(
        &self,
        pk: &str,
        sk: &str,
    ) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send {
        (**self).get_item(pk, sk)
    }

    fn query_items(
        &self,
        pk: &str,
        sk_prefix: &str,
    ) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send {
        (**self).query_items(pk, sk_prefix)
    }

    fn items_of_kind(
        &self,
        kind: &str,
    ) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send {
        (**self).items_of_kind(kind)
    }
}

/// The processing side's view of the store.
pub trait MessageStore: Send + Sync {
    /// Reads a message (strongly consistent).
    fn get(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<StoredMessage>, StoreError>> + Send;

    /// Applies `transition` if the message is still at `expected_version`, incrementing it, and
    /// commits `effects` in the same transaction: the effects and the status never disagree.
    fn transition(
        &self,
        key: &MessageKey,
        expected_version: u64,
        transition: &Transition,
        effects: Vec<Effect>,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Messages of one open-index shard whose due time is at or before `now`, oldest first.
    fn due(
        &self,
        shard: &str,
        now: i64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<DueMessage>, StoreError>> + Send;

    /// Messages passing `filter`, without their bodies' interpretation; at most `limit`.
    fn list(
        &self,
        filter: &ListFilter,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<StoredMessage>, StoreError>> + Send;

    /// The journal of repeated deliveries of a message (time, digest, whether the body differed).
    fn deliveries(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Vec<DeliveryRecord>, StoreError>> + Send;

    /// Deletes a terminal message and its journal, if it is still at `expected_version`.
    fn purge(
        &self,
        key: &MessageKey,
        expected_version: u64,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;
}

/// A journal record read back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeliveryRecord {
    pub received_at: i64,
    pub body_sha256: String,
    pub body_differs: bool,
}

impl<T: MessageStore> MessageStore for std::sync::Arc<T> {
    fn get(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<StoredMessage>, StoreError>> + Send {
        (**self).get(key)
    }

    fn transition(
        &self,
        key: &MessageKey,
        expected_version: u64,
        transition: &Transition,
        effects: Vec<Effect>,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send {
        (**self).transition(key, expected_version, transition, effects)
    }

    fn due(
        &self,
        shard: &str,
        now: i64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<DueMessage>, StoreError>> + Send {
        (**self).due(shard, now, limit)
    }

    fn list(
        &self,
        filter: &ListFilter,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<StoredMessage>, StoreError>> + Send {
        (**self).list(filter, limit)
    }

    fn deliveries(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Vec<DeliveryRecord>, StoreError>> + Send {
        (**self).deliveries(key)
    }

    fn purge(
        &self,
        key: &MessageKey,
        expected_version: u64,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send {
        (**self).purge(key, expected_version)
    }
}
