//! The failed messages, newest first, from their open-index partitions (`FAILED#0..15`,
//! [`failed_shard`](crate::store::schema::failed_shard)): one `Query` per partition, newest
//! first, merged; no scan. What the console's Quarantine page and its bulk replay read.

use super::{classify, DynamoTable};
use crate::domain::{EventId, MessageKey, SourceName};
use crate::store::attr::{get_n, get_s, s};
use crate::store::schema::{failed_shards, EVENT_ID, OPEN_DUE, OPEN_INDEX, OPEN_SHARD, SOURCE};
use crate::store::StoreError;

/// A failed message as its index entry names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedEntry {
    pub key: MessageKey,
    /// When it failed, ms since the epoch.
    pub failed_at: i64,
}

/// The newest failed messages, at most the limit asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailedPage {
    /// Newest first.
    pub entries: Vec<FailedEntry>,
    /// Whether there are more than these.
    pub more: bool,
}

impl DynamoTable {
    /// The newest `limit` failed messages (and whether there are more): each partition read
    /// newest first until it gave `limit + 1` entries or ended, the whole merged. An entry whose
    /// key does not parse is skipped.
    pub async fn failed_newest(&self, limit: usize) -> Result<FailedPage, StoreError> {
        let mut all = Vec::new();
        for shard in failed_shards() {
            all.extend(self.failed_in(&shard, limit.saturating_add(1)).await?);
        }
        all.sort_by(|a: &FailedEntry, b| {
            b.failed_at
                .cmp(&a.failed_at)
                .then_with(|| a.key.event_id.as_str().cmp(b.key.event_id.as_str()))
        });
        let more = all.len() > limit;
        all.truncate(limit);
        Ok(FailedPage { entries: all, more })
    }

    async fn failed_in(&self, shard: &str, limit: usize) -> Result<Vec<FailedEntry>, StoreError> {
        let mut found = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(OPEN_INDEX)
                .key_condition_expression("#shard = :shard")
                .expression_attribute_names("#shard", OPEN_SHARD)
                .expression_attribute_values(":shard", s(shard))
                .scan_index_forward(false)
                .limit(
                    i32::try_from(limit.saturating_sub(found.len()).clamp(1, 1000)).unwrap_or(1000),
                )
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items.unwrap_or_default() {
                let text = |k: &str| get_s(&item, k).unwrap_or_default();
                if let (Ok(source), Ok(id), Some(at)) = (
                    SourceName::parse(text(SOURCE)),
                    EventId::parse(text(EVENT_ID)),
                    get_n(&item, OPEN_DUE),
                ) {
                    found.push(FailedEntry {
                        key: MessageKey::new(source, id),
                        failed_at: at,
                    });
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
