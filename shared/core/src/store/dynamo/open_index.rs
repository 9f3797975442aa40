//! The one query of the sparse open index (`open-index`): what is due in one shard, page by
//! page, shared by the reaper's messages and the outbox's due work.

use super::{classify, DynamoTable};
use crate::store::attr::{n, s};
use crate::store::schema::{OPEN_DUE, OPEN_INDEX, OPEN_SHARD};
use crate::store::{Item, StoreError};

impl DynamoTable {
    /// The items of `shard` due at `now` (oldest first), at most `limit`, each mapped by `keep`
    /// (`None`: skipped, not counted).
    pub(super) async fn due_in_shard<T>(
        &self,
        shard: &str,
        now: i64,
        limit: usize,
        mut keep: impl FnMut(&Item) -> Result<Option<T>, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut found = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(OPEN_INDEX)
                .key_condition_expression("#shard = :shard AND #due <= :now")
                .expression_attribute_names("#shard", OPEN_SHARD)
                .expression_attribute_names("#due", OPEN_DUE)
                .expression_attribute_values(":shard", s(shard))
                .expression_attribute_values(":now", n(now))
                .limit(
                    i32::try_from(limit.saturating_sub(found.len()).clamp(1, 1000)).unwrap_or(1000),
                )
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items.unwrap_or_default() {
                if let Some(t) = keep(&item)? {
                    found.push(t);
                }
            }
            start = page.last_evaluated_key;
            if start.is_none() || found.len() >= limit {
                found.truncate(limit);
                return Ok(found);
            }
        }
    }
}

impl crate::store::DueIndex for DynamoTable {
    async fn due_items(
        &self,
        shard: &str,
        now: crate::clock::Millis,
        limit: usize,
    ) -> Result<Vec<Item>, StoreError> {
        self.due_in_shard(shard, now.get(), limit, |item| Ok(Some(item.clone())))
            .await
    }
}
