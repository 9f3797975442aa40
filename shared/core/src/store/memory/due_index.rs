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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::attr::{n, s};
    use crate::store::{Effect, ItemWriter};

    fn item(pk: &str, shard: Option<&str>, due: i64) -> Item {
        let mut i = Item::from([("pk".to_string(), s(pk)), ("sk".to_string(), s("X"))]);
        if let Some(shard) = shard {
            i.insert(OPEN_SHARD.into(), s(shard));
            i.insert(OPEN_DUE.into(), n(due));
        }
        i
    }

    #[tokio::test]
    async fn due_items_are_one_shards_due_ones_oldest_first() {
        let store = MemoryStore::new();
        let effects = vec![
            Effect::Create(item("a", Some("APP#1"), 30)),
            Effect::Create(item("b", Some("APP#1"), 10)),
            Effect::Create(item("c", Some("APP#1"), 99)),
            Effect::Create(item("d", Some("APP#2"), 5)),
            Effect::Create(item("e", None, 0)),
        ];
        store.commit(effects).await.unwrap();
        let pks = |items: Vec<Item>| -> Vec<String> {
            items
                .iter()
                .map(|i| get_s(i, "pk").unwrap_or_default().to_owned())
                .collect()
        };
        let due = store.due_items("APP#1", Millis::new(50), 10).await.unwrap();
        assert_eq!(pks(due), ["b", "a"]);
        let one = store.due_items("APP#1", Millis::new(50), 1).await.unwrap();
        assert_eq!(pks(one), ["b"]);
        store.set_down(true);
        assert!(store.due_items("APP#1", Millis::new(50), 1).await.is_err());
    }
}
