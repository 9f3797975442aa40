//! The events index on DynamoDB: one `Query` per partition (`EVT#0`..`EVT#15`, at once), each
//! newest first and at most a page and one entries long, then one eventually consistent
//! `BatchGetItem` of the rows shown (without their bodies). Every request asks for its consumed
//! capacity, which the page reports.

use super::{classify, corrupt, DynamoTable};
use crate::message::StoredMessage;
use crate::store::attr::{get_s, s};
use crate::store::events::{
    arrange, Direction, EventIndex, EventPage, EventQuery, Position, ShardRead, MAX_ROWS,
};
use crate::store::schema::*;
use crate::store::{Item, StoreError};
use aws_sdk_dynamodb::types::{ConsumedCapacity, KeysAndAttributes, ReturnConsumedCapacity};
use std::collections::HashMap;

/// The attributes a row shows (a projection: the body is never sent, though DynamoDB bills the
/// whole item's size).
const ROW_ATTRIBUTES: [&str; 9] = [
    SOURCE,
    EVENT_ID,
    EVENT_TYPE,
    STATUS,
    RECEIVED_AT,
    ATTEMPTS,
    LAST_ERROR,
    PROVIDER_ID,
    VERSION,
];

fn units(c: Option<&ConsumedCapacity>) -> f64 {
    c.and_then(ConsumedCapacity::capacity_units).unwrap_or(0.0)
}

impl DynamoTable {
    /// One partition's answer to `query`: at most `rows + 1` entries evaluated.
    async fn read_shard(
        &self,
        shard: String,
        query: &EventQuery,
    ) -> Result<(ShardRead, f64), StoreError> {
        let dir = query.direction();
        let (lo, hi) = query.key_range();
        let mut req = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(EVENTS_INDEX)
            .expression_attribute_names("#shard", LIST_SHARD)
            .expression_attribute_values(":shard", s(&shard))
            .scan_index_forward(dir == Direction::Newer)
            .limit(i32::try_from(query.rows.clamp(1, MAX_ROWS) + 1).unwrap_or(101))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        let key = match (&lo, &hi) {
            (Some(l), Some(h)) => {
                req = req
                    .expression_attribute_values(":lo", s(l))
                    .expression_attribute_values(":hi", s(h));
                "#shard = :shard AND #at BETWEEN :lo AND :hi"
            }
            (Some(l), None) => {
                req = req.expression_attribute_values(":lo", s(l));
                "#shard = :shard AND #at >= :lo"
            }
            (None, Some(h)) => {
                req = req.expression_attribute_values(":hi", s(h));
                "#shard = :shard AND #at <= :hi"
            }
            (None, None) => "#shard = :shard",
        };
        if lo.is_some() || hi.is_some() {
            req = req.expression_attribute_names("#at", LIST_AT);
        }
        let mut filters = Vec::new();
        if let Some(source) = &query.source {
            filters.push("#source = :source");
            req = req
                .expression_attribute_names("#source", SOURCE)
                .expression_attribute_values(":source", s(source));
        }
        if let Some(t) = &query.event_type {
            filters.push("#type = :type");
            req = req
                .expression_attribute_names("#type", EVENT_TYPE)
                .expression_attribute_values(":type", s(t));
        }
        if let Some(q) = &query.search {
            filters.push("(contains(#id, :q) OR #pid = :q)");
            req = req
                .expression_attribute_names("#id", EVENT_ID)
                .expression_attribute_names("#pid", PROVIDER_ID)
                .expression_attribute_values(":q", s(q));
        }
        if !filters.is_empty() {
            req = req.filter_expression(filters.join(" AND "));
        }
        let out = req
            .key_condition_expression(key)
            .send()
            .await
            .map_err(classify)?;
        let position = |item: &Item| -> Result<Position, StoreError> {
            get_s(item, LIST_AT)
                .ok_or_else(|| corrupt("an events-index entry without its list_at"))
                .and_then(|t| Position::parse(t).map_err(corrupt))
        };
        let found = out
            .items()
            .iter()
            .map(position)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|p| query.admits(p))
            .collect();
        let frontier = out.last_evaluated_key().map(position).transpose()?;
        Ok((
            ShardRead { found, frontier },
            units(out.consumed_capacity()),
        ))
    }

    /// The rows at `shown` (those still stored), in that order: (rows, units, requests).
    async fn read_rows(
        &self,
        shown: &[Position],
    ) -> Result<(Vec<StoredMessage>, f64, usize), StoreError> {
        let mut keys = Vec::with_capacity(shown.len());
        for p in shown {
            keys.push(message_key_attrs(&p.key().map_err(corrupt)?));
        }
        let names: HashMap<String, String> = ROW_ATTRIBUTES
            .iter()
            .enumerate()
            .map(|(i, a)| (format!("#a{i}"), (*a).to_owned()))
            .collect();
        let projection = (0..ROW_ATTRIBUTES.len())
            .map(|i| format!("#a{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut found: HashMap<Position, StoredMessage> = HashMap::new();
        let (mut read_units, mut requests) = (0.0, 0);
        let mut pending = keys;
        // Keys DynamoDB leaves unprocessed (throttling) are asked again, a few times.
        for _ in 0..5 {
            if pending.is_empty() {
                break;
            }
            let ask = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .projection_expression(&projection)
                .set_expression_attribute_names(Some(names.clone()))
                .consistent_read(false)
                .build()
                .map_err(corrupt)?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, ask)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(classify)?;
            requests += 1;
            read_units += out
                .consumed_capacity()
                .iter()
                .map(|c| units(Some(c)))
                .sum::<f64>();
            for item in out
                .responses
                .unwrap_or_default()
                .remove(&self.table)
                .unwrap_or_default()
            {
                let m: StoredMessage = serde_dynamo::from_item(item).map_err(corrupt)?;
                found.insert(Position::of(&m), m);
            }
            if let Some(mut left) = out.unprocessed_keys {
                pending = left.remove(&self.table).map(|k| k.keys).unwrap_or_default();
            }
        }
        let rows = shown.iter().filter_map(|p| found.remove(p)).collect();
        Ok((rows, read_units, requests))
    }

    /// The page of `query`, or, when it went newer past the newest, what reading that cost
    /// (units, requests).
    async fn page_once(
        &self,
        query: &EventQuery,
    ) -> Result<Result<EventPage, (f64, usize)>, StoreError> {
        let reads = futures_util::future::try_join_all(
            list_shards().map(|shard| self.read_shard(shard, query)),
        )
        .await?;
        let requests = reads.len();
        let index_units: f64 = reads.iter().map(|(_, u)| u).sum();
        let Some((shown, older, newer)) =
            arrange(query, reads.into_iter().map(|(r, _)| r).collect())
        else {
            return Ok(Err((index_units, requests)));
        };
        let (messages, row_units, row_requests) = self.read_rows(&shown).await?;
        Ok(Ok(EventPage {
            messages,
            older,
            newer,
            read_units: index_units + row_units,
            requests: requests + row_requests,
        }))
    }
}

impl EventIndex for DynamoTable {
    async fn page(&self, query: &EventQuery) -> Result<EventPage, StoreError> {
        let query = EventQuery {
            rows: query.rows.clamp(1, MAX_ROWS),
            ..query.clone()
        };
        let (units, requests) = match self.page_once(&query).await? {
            Ok(page) => return Ok(page),
            Err(spent) => spent,
        };
        let mut first = self
            .page_once(&query.first_page())
            .await?
            .unwrap_or_else(|_| EventPage::default());
        first.read_units += units;
        first.requests += requests;
        Ok(first)
    }

    async fn estimate(&self) -> Result<Option<u64>, StoreError> {
        let out = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
            .map_err(classify)?;
        Ok(out.table().and_then(|t| {
            t.global_secondary_indexes()
                .iter()
                .find(|i| i.index_name() == Some(EVENTS_INDEX))
                .and_then(|i| i.item_count())
                .and_then(|n| u64::try_from(n).ok())
        }))
    }
}
