//! [`MessageStore`]: the processing side's view of the store (read a message, with or without its
//! body, or its body alone; transitions; the due messages; listing, repeats and purging), and its
//! forwarding through an `Arc`.

use super::{Applied, DueMessage, Effect, ListFilter, RepeatRecord, StoreError, Transition};
use crate::domain::MessageKey;
use crate::message::StoredMessage;
use std::future::Future;

/// The processing side's view of the store.
pub trait MessageStore: Send + Sync {
    /// Reads a message (strongly consistent).
    fn get(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<StoredMessage>, StoreError>> + Send;

    /// Reads a message without its body (left empty): for those that decide on its status alone
    /// (the reaper), so a body kept elsewhere is never fetched.
    fn get_head(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<StoredMessage>, StoreError>> + Send {
        self.get(key)
    }

    /// The raw body of a message, shareable without a copy (`None`: no such message). A body
    /// that is gone or damaged is [`StoreError::Unreadable`].
    fn read_body(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<bytes::Bytes>, StoreError>> + Send {
        async move { Ok(self.get(key).await?.map(|m| bytes::Bytes::from(m.body))) }
    }

    /// The bodies of several messages read ahead in as few requests as the store can (DynamoDB:
    /// one `BatchGetItem` per 100), each as [`Self::read_body`] would answer it, in `keys`' order;
    /// `None` for one not read here (a body kept in S3 is left to [`Self::read_body`], which
    /// shares it between the deliveries in flight, and so is one the store did not answer). The
    /// default reads nothing ahead.
    fn read_bodies_ahead(
        &self,
        keys: &[MessageKey],
    ) -> impl Future<Output = Result<Vec<Option<Option<bytes::Bytes>>>, StoreError>> + Send {
        let none = vec![None; keys.len()];
        async move { Ok(none) }
    }

    /// Makes a message's body live a whole retention again from now (a replay or a resend needs
    /// it later than its first life allows). A body kept in the item lives with it: nothing to
    /// do; one kept in S3 is renewed ([`StoreError::Unreadable`] when it is already gone).
    fn renew_body(&self, key: &MessageKey) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = key;
        async { Ok(()) }
    }

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

    /// The journal of repeated deliveries of a message (time, digest, whether the body differed):
    /// the first [`MAX_JOURNALED_REPEATS`] of them.
    fn deliveries(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Vec<RepeatRecord>, StoreError>> + Send;

    /// How many repeated deliveries of a message were counted (journaled or not; 0 when none,
    /// or when the counter expired with its journal).
    fn repeat_count(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes a terminal message and its journal, if it is still at `expected_version`.
    fn purge(
        &self,
        key: &MessageKey,
        expected_version: u64,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;
}

impl<T: MessageStore> MessageStore for std::sync::Arc<T> {
    fn get(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<StoredMessage>, StoreError>> + Send {
        (**self).get(key)
    }

    fn get_head(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<StoredMessage>, StoreError>> + Send {
        (**self).get_head(key)
    }

    fn read_body(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<bytes::Bytes>, StoreError>> + Send {
        (**self).read_body(key)
    }

    fn read_bodies_ahead(
        &self,
        keys: &[MessageKey],
    ) -> impl Future<Output = Result<Vec<Option<Option<bytes::Bytes>>>, StoreError>> + Send {
        (**self).read_bodies_ahead(keys)
    }

    fn renew_body(&self, key: &MessageKey) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).renew_body(key)
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
    ) -> impl Future<Output = Result<Vec<RepeatRecord>, StoreError>> + Send {
        (**self).deliveries(key)
    }

    fn repeat_count(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        (**self).repeat_count(key)
    }

    fn purge(
        &self,
        key: &MessageKey,
        expected_version: u64,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send {
        (**self).purge(key, expected_version)
    }
}
