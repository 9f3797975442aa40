//! Read and write units attributed to the partition-key pattern each DynamoDB request touches:
//! an SDK interceptor ([`KeyMeter`]) records every request's keys (every element of a
//! transaction or batch; the index partition a `Query` of the open index reads), and
//! [`KeyMeter::attribute`] prices them by DynamoDB's item-size rules (`inbox_core::store::size`)
//! from the items as the emulator stored them before and after the measured step.
//!
//! Here: the meter, what it records and the units it yields ([`KeyUse`], [`KeyUnits`]), the
//! table's [`snapshot`] and the flow's [`record`] for `bench-tools capacity`. The interceptor
//! (what each request touches) is in `interceptor`, the key patterns in `patterns`, the pricing
//! rules and merging in `sizing`.

mod interceptor;
mod patterns;
mod sizing;

pub use patterns::{index_pattern, pattern, sort_group};
pub use sizing::merge;

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::store::Item;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// A table's items by (`pk`, `sk`).
pub type Snapshot = BTreeMap<(String, String), Item>;

/// What one request (or one element of a transaction or batch) touched.
#[derive(Debug, Clone, PartialEq)]
enum Touch {
    Write {
        pk: String,
        sk: String,
        transactional: bool,
    },
    Read {
        /// The partition read: a table's `pk`, or an index's partition value.
        partition: String,
        /// The item read (`GetItem`), none for a `Query`.
        sk: Option<String>,
        index: bool,
        half_units: u64,
    },
}

/// Records the keys every request of a client touches (add it with `.interceptor(meter.clone())`).
#[derive(Debug, Default, Clone)]
pub struct KeyMeter(Arc<Mutex<Vec<Touch>>>);

/// Units one partition-key pattern took, by the sort-key group of its items.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KeyUse {
    /// Read units ×2 (eventually consistent reads are half units).
    pub read_half_units: u64,
    pub write_units: u64,
    /// Requests (or elements of one) that touched it.
    pub touches: u64,
    /// Write units by sort-key group (`WALLET`, `ENTRY#…`, `EMAIL#…`).
    pub writes_by_sort_key: BTreeMap<String, u64>,
    /// Read units ×2 by sort-key group (`Query`: `(query)`).
    pub reads_by_sort_key: BTreeMap<String, u64>,
}

/// Units by partition-key pattern (see [`pattern`]).
pub type KeyUnits = BTreeMap<String, KeyUse>;

fn text(item: &HashMap<String, AttributeValue>, name: &str) -> String {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

fn key_of(item: &HashMap<String, AttributeValue>) -> (String, String) {
    (text(item, "pk"), text(item, "sk"))
}

impl KeyMeter {
    pub fn reset(&self) {
        if let Ok(mut t) = self.0.lock() {
            t.clear();
        }
    }

    /// The table items read one by one (`GetItem`) since the last reset, in order: their key
    /// and the read's half units (2 for a strongly consistent read of an item up to 4 KB).
    pub fn items_read(&self) -> Vec<(String, String, u64)> {
        self.touches()
            .into_iter()
            .filter_map(|t| match t {
                Touch::Read {
                    partition,
                    sk: Some(sk),
                    index: false,
                    half_units,
                } => Some((partition, sk, half_units)),
                _ => None,
            })
            .collect()
    }

    fn touches(&self) -> Vec<Touch> {
        self.0.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

/// Every item of the table, by key (strongly consistent scan).
pub async fn snapshot(client: &aws_sdk_dynamodb::Client, table: &str) -> Snapshot {
    crate::scan_all(client, table)
        .await
        .into_iter()
        .map(|i| (key_of(&i), i))
        .collect()
}

/// Writes one measured flow's units per operation to `target/bench-figures/keys-{flow}.json`
/// (`bench-tools capacity` reads them): `units` over `count` operations.
pub fn record(flow: &str, what: &str, count: usize, units: &KeyUnits) {
    let dir = crate::root().join("target/bench-figures");
    let _ = std::fs::create_dir_all(&dir);
    let shards = |n: u8| serde_json::json!(n);
    // How many partitions each sharded index family spreads over, as the code has it.
    let body = serde_json::json!({"flow": flow, "what": what, "count": count, "keys": units,
    "shards": {
        "open-index OPEN#{shard}": shards(inbox_core::store::schema::OPEN_SHARDS),
        "open-index OUTBOX#{shard}": shards(inbox_core::outbox::schema::OUTBOX_SHARDS),
        "open-index OUTBOX#DONE#{shard}": shards(inbox_core::outbox::schema::OUTBOX_SHARDS),
        "open-index AUTOPAY#ATTEMPT#{shard}": shards(wallet_ledger::autopay::items::AUTOPAY_SHARDS),
        "open-index AUTOPAY#RECURRING#{shard}": shards(wallet_ledger::autopay::items::AUTOPAY_SHARDS),
        "open-index WALLET#HOLDS#{shard}": shards(wallet_ledger::balance::items::HOLD_SHARDS),
    }});
    if let Err(e) = std::fs::write(dir.join(format!("keys-{flow}.json")), body.to_string()) {
        eprintln!("keys-{flow}.json: {e}");
    }
}
