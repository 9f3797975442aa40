//! The storage boundary: small capability traits, the records they take, and their errors.
//!
//! - [`Inbox`]: the ingest path's one conditional write (and, for repeated deliveries, their
//!   counter and their bounded journal).
//! - [`MessageStore`]: the processing side: read a message, move it to its next status under an
//!   optimistic-concurrency condition together with a handler's effects (one transaction), find
//!   the messages that are due, and list them for operators. A status change is a [`Transition`]
//!   (`transition.rs`).
//! - [`ItemStore`] and [`ItemWriter`]: an application's own items in the same table: reads, and
//!   [`Effect`]s committed atomically outside a message transition (e.g. creating an account).
//! - [`DueIndex`]: an application's own due items in the open index, by shard (`due_index.rs`).
//! - [`EventIndex`]: messages by time, a bounded page at a time, for operators (`events.rs`).
//!
//! [`dynamo`] implements them on DynamoDB (one table, see [`schema`]); `memory` is an in-memory
//! fake with the same semantics, for unit tests and benchmarks only: it exists with the
//! `test-util` feature (or in this crate's tests), never in a Lambda. [`attr`] builds and reads
//! attribute values; [`size`] is what DynamoDB bills for an item; [`fair`] spreads a run's budget
//! over the open index's shards (the reaper's, the outbox sweep's). The records of repeated
//! deliveries are in `journal.rs`; [`MessageStore`] in `messages.rs`. How a body is stored (inline
//! and compressed, or in S3) is the DynamoDB adapter's business (`dynamo/body.rs`): the traits
//! carry raw bodies.

pub mod attr;
mod circuit;
mod due_index;
pub mod dynamo;
pub mod events;
pub mod fair;
mod journal;
mod listing;
#[cfg(any(test, feature = "test-util"))]
pub mod memory;
mod messages;
pub mod schema;
pub mod size;
mod transition;
mod writer;

pub use due_index::DueIndex;
pub use events::{EventIndex, EventPage, EventQuery};
pub use journal::{Repeat, RepeatCount, RepeatRecord, MAX_JOURNALED_REPEATS};
pub use listing::{DueMessage, ListFilter};
pub use messages::MessageStore;
pub use transition::{Applied, Transition};
pub use writer::{ItemWriter, TooManyEffects, MAX_COMMIT_EFFECTS};

use crate::clock::Millis;
use crate::domain::{BodyDigest, EventId, EventType, MessageKey};
use std::future::Future;

/// An item: attribute name → value (the DynamoDB SDK's types, also used by the in-memory store).
pub type Item = std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>;

/// A write a handler wants committed atomically with the message's transition (one element of
/// the same `TransactWriteItems`). Both stores apply every kind but `Raw` with the same
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
    /// Like [`Effect::Adjust`], on an item that must exist and only if every bound holds on the
    /// item as stored before the adds (an absent attribute fails its bound): else the whole
    /// commit fails with [`Applied::EffectConflict`]. Concurrent adjustments whose bounds still
    /// hold after each other's adds do not conflict (an account's holds: `held` added atomically,
    /// bounded by what the balance affords). On DynamoDB an `UpdateItem` with a
    /// `ConditionExpression`.
    AdjustIf {
        pk: String,
        sk: String,
        add: Vec<(String, i64)>,
        set: Vec<(String, aws_sdk_dynamodb::types::AttributeValue)>,
        bounds: Vec<Bound>,
    },
    /// Creates the item (it carries `pk` and `sk`) unless one with that key exists: never a
    /// conflict. For writes that a re-run or a replay repeats and that must happen at most once
    /// (the outbox's deliveries). On DynamoDB an `UpdateItem` setting each attribute with
    /// `if_not_exists`: a new item is a stream `INSERT`; an existing one keeps every value it has,
    /// so it is unchanged (no stream record) PROVIDED it still has every attribute the ensured
    /// item sets (one it lacks would be added): items written this way must never lose an
    /// attribute (the outbox moves finished items to a done shard instead of removing keys).
    /// An item that loses attributes later (a message leaves the open index) takes
    /// [`Effect::CreateIfAbsent`].
    Ensure(Item),
    /// Creates the item (it carries `pk` and `sk`) unless one with that key exists, which is then
    /// left exactly as it is: never a conflict, and never a change to an existing item whatever
    /// became of it since (a message written this way that was processed meanwhile stays out of
    /// the open index). For an item written once per fact by writers that may repeat it, such as
    /// an application's own events. On DynamoDB a conditional `PutItem`; in a transaction, an
    /// element cancelled only because its item exists is dropped and the rest sent again.
    CreateIfAbsent(Item),
    /// Any DynamoDB transaction element (only the DynamoDB adapter applies it; the in-memory
    /// store records it).
    Raw(Box<aws_sdk_dynamodb::types::TransactWriteItem>),
}

/// A condition on a numeric attribute of the item an [`Effect::AdjustIf`] adjusts, as stored
/// before the adjustment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// `attribute >= value`.
    AtLeast(String, i64),
    /// `attribute <= value`.
    AtMost(String, i64),
}

impl Bound {
    /// Whether `current` (the attribute's value; `None`: absent) satisfies the bound.
    pub fn holds(&self, current: Option<i64>) -> bool {
        match (self, current) {
            (Self::AtLeast(_, min), Some(v)) => v >= *min,
            (Self::AtMost(_, max), Some(v)) => v <= *max,
            (_, None) => false,
        }
    }

    /// The attribute it bounds.
    pub fn attr(&self) -> &str {
        match self {
            Self::AtLeast(a, _) | Self::AtMost(a, _) => a,
        }
    }
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
    /// The body's SHA-256 when something already computed it (an id that is the body's hash);
    /// the accepted path does not hash the body otherwise (stores compute it where they need it,
    /// e.g. the S3 key of a large body).
    pub body_digest: Option<BodyDigest>,
    /// The headers needed to re-verify the signature and re-derive the identity (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The provider's id from a header its signature does not cover, kept as metadata (the key's
    /// event id is then the body's hash: see [`crate::identity`]).
    pub provider_id: Option<EventId>,
    /// Why a correctly signed event could not be identified (its type is then `unknown`).
    pub unidentified: Option<String>,
    /// For an event split from a batch: where in the signed body it was ([`crate::batch`]).
    pub batch: Option<crate::batch::BatchPart>,
}

/// What a conditional insert found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// The message was new and is now durably stored.
    Inserted,
    /// A message with that key already exists and was left untouched; `original` is what the
    /// failed condition's old image says of its body (no second request).
    AlreadyExists { original: Original },
}

/// What a duplicate's stored original tells of its body, to say whether a repeat differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Original {
    /// The stored body itself (an inline body comes back with the old image).
    Body(Vec<u8>),
    /// Its SHA-256 (a body kept in S3, or an item written before bodies were compressed).
    Digest(BodyDigest),
    /// Nothing to compare with.
    Unknown,
}

impl Original {
    /// Whether `body` differs from the original (`false` when nothing can tell).
    pub fn differs_from(&self, body: &[u8]) -> bool {
        match self {
            Self::Body(original) => original.as_slice() != body,
            Self::Digest(d) => *d != BodyDigest::of(body),
            Self::Unknown => false,
        }
    }
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
    /// What is stored cannot be read back: a body kept in S3 that is gone (expired or deleted),
    /// a damaged compressed body. Reading again gives the same answer, so whoever needs the body
    /// ends the work with the reason instead of retrying.
    #[error("the stored body cannot be read")]
    Unreadable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// A short name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Throttled(_) => "throttled",
            Self::Unavailable(_) => "unavailable",
            Self::Rejected(_) => "rejected",
            Self::Invalid(_) => "invalid",
            Self::Unreadable(_) => "unreadable",
        }
    }

    /// The error with its causes, one line (`a: b: c`), for a message's history and logs
    /// ([`crate::error::one_line`]).
    pub fn chain(&self) -> String {
        crate::error::one_line(self)
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
    fn journal_repeat(
        &self,
        repeat: &Repeat,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Counts one more repeated delivery of `key`: sets its counter to `expected + 1` (1 when
    /// `expected` is `None`: no counter yet) if the counter is still at `expected`, noting `at`
    /// and refreshing its expiry to `expires_at`. One conditional write and no read: a
    /// [`RepeatCount::Conflict`] brings the current value back for the next try.
    fn count_repeat(
        &self,
        key: &MessageKey,
        expected: Option<u64>,
        at: Millis,
        expires_at: Millis,
    ) -> impl Future<Output = Result<RepeatCount, StoreError>> + Send;
}

impl<T: Inbox> Inbox for std::sync::Arc<T> {
    fn put_if_absent(
        &self,
        msg: &NewMessage,
    ) -> impl Future<Output = Result<PutOutcome, StoreError>> + Send {
        (**self).put_if_absent(msg)
    }

    fn journal_repeat(
        &self,
        repeat: &Repeat,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).journal_repeat(repeat)
    }

    fn count_repeat(
        &self,
        key: &MessageKey,
        expected: Option<u64>,
        at: Millis,
        expires_at: Millis,
    ) -> impl Future<Output = Result<RepeatCount, StoreError>> + Send {
        (**self).count_repeat(key, expected, at, expires_at)
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
