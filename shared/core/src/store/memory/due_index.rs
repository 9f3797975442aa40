//! The in-memory store's open index for applications' items ([`DueIndex`]): the items carrying
//! `open_shard` and `open_due`, read by shard as the DynamoDB adapter's `Query` reads them (the
//! outbox's due work is read the same way).

use super::{lock, MemoryStore};
use crate::clock::Millis;
use crate::store::attr::{get_n, get_s};
use crate::store::schema::{OPEN_DUE, OPEN_SHARD};
use crate::store::{DueIndex, Item, StoreError};
use std::collections::BTreeMap;

/// The items of `shard` due at or before `now`, oldest first, at most `limit`, each with its due
/// time.
pub(super) fn due_in(
    items: &BTreeMap<(String, String), Item>,
    shard: &str,
    now: Millis,
    limit: usize,
) -> Vec<(Millis, Item)> {
    let mut due: Vec<(Millis, Item)> = items
        .values()
        .filter(|i| get_s(i, OPEN_SHARD) == Some(shard))
        .filter_map(|i| {
            let due = Millis::new(get_n(i, OPEN_DUE)?);
            (due <= now).then(|| (due, i.clone()))
        })
        .collect();
    due.sort_by_key(|(due, _)| *due);
    due.truncate(limit);
    due
}

impl DueIndex for MemoryStore {
    async fn due_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Item>, StoreError> {
        self.up()?;
        Ok(due_in(&lock(&self.items), shard, now, limit)
            .into_iter()
            .map(|(_, item)| item)
            .collect())
    }
}
