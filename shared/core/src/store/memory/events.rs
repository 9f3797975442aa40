//! The events index in memory: the same pages as on DynamoDB (one partition holding every
//! message, read whole: the fake has no cost to bound), through the same arrangement.

use super::{lock, MemoryStore};
use crate::message::StoredMessage;
use crate::store::events::{arrange, EventIndex, EventPage, EventQuery, Position, ShardRead};
use crate::store::StoreError;
use std::collections::HashMap;

impl MemoryStore {
    fn page_once(&self, query: &EventQuery) -> Option<EventPage> {
        let mut rows: HashMap<Position, StoredMessage> = lock(&self.rows)
            .values()
            .map(|r| r.message())
            .filter(|m| query.matches(m))
            .map(|m| (Position::of(&m), m.into_owned()))
            .filter(|(p, _)| query.admits(p))
            .collect();
        let read = ShardRead {
            found: rows.keys().cloned().collect(),
            frontier: None,
        };
        let (shown, older, newer) = arrange(query, vec![read])?;
        Some(EventPage {
            messages: shown.iter().filter_map(|p| rows.remove(p)).collect(),
            older,
            newer,
            read_units: 0.0,
            requests: 0,
        })
    }
}

impl EventIndex for MemoryStore {
    async fn page(&self, query: &EventQuery) -> Result<EventPage, StoreError> {
        self.up()?;
        Ok(self
            .page_once(query)
            .or_else(|| self.page_once(&query.first_page()))
            .unwrap_or_default())
    }

    async fn estimate(&self) -> Result<Option<u64>, StoreError> {
        self.up()?;
        Ok(u64::try_from(self.message_count()).ok())
    }
}
