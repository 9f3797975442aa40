//! [`DueIndex`]: the sparse open index read by shard, for an application that keeps its own due
//! items there (open attempts, next charges) under shard names of its own (the reaper reads only
//! `OPEN#…`, the outbox's sweep only `OUTBOX#…`). An item is in the index while it carries both
//! `open_shard` and `open_due` (ms); removing them takes it out.

use super::{Item, StoreError};
use crate::clock::Millis;
use std::future::Future;

/// What is due in one shard of the open index.
pub trait DueIndex: Send + Sync {
    /// The items of `shard` whose `open_due` is at or before `now`, oldest first, at most `limit`,
    /// as the index projects them: the keys (`pk`, `sk`), `open_shard`, `open_due` and the few
    /// attributes it includes (the in-memory store answers whole items). The index is eventually
    /// consistent: read the item itself before acting on it.
    fn due_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send;
}

impl<T: DueIndex> DueIndex for std::sync::Arc<T> {
    fn due_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Item>, StoreError>> + Send {
        (**self).due_items(shard, now, limit)
    }
}
