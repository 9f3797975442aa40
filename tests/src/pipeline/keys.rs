//! Read and write units attributed to the partition-key pattern each DynamoDB request touches:
//! an SDK interceptor ([`KeyMeter`]) records every request's keys (every element of a
//! transaction or batch; the index partition a `Query` of the open index reads), and
//! [`KeyMeter::attribute`] prices them by DynamoDB's item-size rules (`inbox_core::store::size`)
//! from the items as the emulator stored them before and after the measured step.
//!
//! Rules: a write costs 1 unit per started KB of the item (twice that inside
//! `TransactWriteItems`, a `ConditionCheck` included), on the larger of the item before and after
//! the step; a write that touches an item carrying `open_shard` also writes the open index: 1
//! unit to the index partition it leaves and 1 to the one it joins (1 when they are the same).
//! A strongly consistent read costs 1 unit per started 4 KB of the item (a `Query`: of the items
//! it returned together; at least 1), an eventually consistent one half of that, a
//! transactional one twice. An item written more than once in one step is sized, and its index
//! entry counted, from its state before and after the whole step: its index partition stays
//! what it was before through all its writes but the last, which moves it.

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::{
    batch_get_item::{BatchGetItemInput, BatchGetItemOutput},
    batch_write_item::BatchWriteItemInput,
    delete_item::DeleteItemInput,
    get_item::{GetItemInput, GetItemOutput},
    put_item::PutItemInput,
    query::{QueryInput, QueryOutput},
    transact_get_items::{TransactGetItemsInput, TransactGetItemsOutput},
    transact_write_items::TransactWriteItemsInput,
    update_item::UpdateItemInput,
};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use inbox_core::store::size::{item_size, strong_read_half_units};
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

/// The touches of the request in flight, from its input to its output.
#[derive(Debug, Clone, Default)]
struct Pending(Vec<Touch>);

impl Storable for Pending {
    type Storer = StoreReplace<Self>;
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

fn write(key: Option<&HashMap<String, AttributeValue>>, transactional: bool) -> Option<Touch> {
    let (pk, sk) = key_of(key?);
    Some(Touch::Write {
        pk,
        sk,
        transactional,
    })
}

/// The partition value of a `Query`'s key condition (`pk = :v`, `#a = :v`, `open_shard = :v`).
fn query_partition(q: &QueryInput) -> String {
    let names = q.expression_attribute_names.clone().unwrap_or_default();
    let values = q.expression_attribute_values.clone().unwrap_or_default();
    let wanted = if q.index_name.is_some() {
        "open_shard"
    } else {
        "pk"
    };
    for part in q
        .key_condition_expression()
        .unwrap_or_default()
        .split(" AND ")
    {
        let Some((left, right)) = part.split_once('=') else {
            continue;
        };
        let left = left.trim().trim_start_matches('(');
        let left = names.get(left).map_or(left, String::as_str);
        let right = right.trim().trim_end_matches(')');
        if left == wanted {
            if let Some(v) = values.get(right).and_then(|v| v.as_s().ok()) {
                return v.clone();
            }
        }
    }
    String::from("?")
}

/// What a request's input names (reads are sized later, from its output).
fn touches_of(input: &aws_smithy_runtime_api::client::interceptors::context::Input) -> Vec<Touch> {
    let read = |partition: String, sk: Option<String>, index: bool| Touch::Read {
        partition,
        sk,
        index,
        half_units: 0,
    };
    if let Some(i) = input.downcast_ref::<PutItemInput>() {
        return write(i.item.as_ref(), false).into_iter().collect();
    }
    if let Some(i) = input.downcast_ref::<UpdateItemInput>() {
        return write(i.key.as_ref(), false).into_iter().collect();
    }
    if let Some(i) = input.downcast_ref::<DeleteItemInput>() {
        return write(i.key.as_ref(), false).into_iter().collect();
    }
    if let Some(i) = input.downcast_ref::<TransactWriteItemsInput>() {
        return i
            .transact_items()
            .iter()
            .filter_map(|t| {
                let key = t
                    .put
                    .as_ref()
                    .map(|p| &p.item)
                    .or(t.update.as_ref().map(|u| &u.key))
                    .or(t.delete.as_ref().map(|d| &d.key))
                    .or(t.condition_check.as_ref().map(|c| &c.key));
                write(key, true)
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<BatchWriteItemInput>() {
        return i
            .request_items
            .iter()
            .flat_map(|m| m.values().flatten())
            .filter_map(|r| {
                write(
                    r.put_request
                        .as_ref()
                        .map(|p| &p.item)
                        .or(r.delete_request.as_ref().map(|d| &d.key)),
                    false,
                )
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<GetItemInput>() {
        let (pk, sk) = key_of(i.key.as_ref().unwrap_or(&HashMap::new()));
        return vec![read(pk, Some(sk), false)];
    }
    if let Some(i) = input.downcast_ref::<TransactGetItemsInput>() {
        return i
            .transact_items()
            .iter()
            .filter_map(|t| t.get.as_ref())
            .map(|g| {
                let (pk, sk) = key_of(&g.key);
                read(pk, Some(sk), false)
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<BatchGetItemInput>() {
        return i
            .request_items
            .iter()
            .flat_map(|m| m.values())
            .flat_map(|k| k.keys.iter())
            .map(|k| {
                let (pk, sk) = key_of(k);
                read(pk, Some(sk), false)
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<QueryInput>() {
        return vec![read(query_partition(i), None, i.index_name.is_some())];
    }
    Vec::new()
}

/// Sizes the reads of `pending` from the request's output.
fn size_reads(
    pending: &mut [Touch],
    output: &aws_smithy_runtime_api::client::interceptors::context::Output,
) {
    let sized = |items: &[Item]| items.iter().map(item_size).sum::<usize>();
    let mut set = |i: usize, half: u64| {
        if let Some(Touch::Read { half_units, .. }) = pending.get_mut(i) {
            *half_units = half;
        }
    };
    if let Some(o) = output.downcast_ref::<GetItemOutput>() {
        let bytes = o.item.as_ref().map_or(0, item_size);
        set(0, strong_read_half_units(bytes));
    } else if let Some(o) = output.downcast_ref::<QueryOutput>() {
        set(0, strong_read_half_units(sized(o.items())));
    } else if let Some(o) = output.downcast_ref::<TransactGetItemsOutput>() {
        for (i, r) in o.responses().iter().enumerate() {
            set(
                i,
                2 * strong_read_half_units(r.item.as_ref().map_or(0, item_size)),
            );
        }
    } else if let Some(o) = output.downcast_ref::<BatchGetItemOutput>() {
        let items: Vec<&Item> = o
            .responses
            .iter()
            .flat_map(|m| m.values().flatten())
            .collect();
        for (i, item) in items.iter().enumerate() {
            set(i, strong_read_half_units(item_size(item)));
        }
    }
}

/// The consistency each read asked for, halving an eventually consistent read's units.
fn consistency(input: &aws_smithy_runtime_api::client::interceptors::context::Input) -> bool {
    if let Some(i) = input.downcast_ref::<GetItemInput>() {
        return i.consistent_read == Some(true);
    }
    if let Some(i) = input.downcast_ref::<QueryInput>() {
        return i.consistent_read == Some(true);
    }
    if let Some(i) = input.downcast_ref::<BatchGetItemInput>() {
        return i
            .request_items
            .iter()
            .flat_map(|m| m.values())
            .all(|k| k.consistent_read == Some(true));
    }
    true
}

/// Whether `pending` came from a strongly consistent request.
#[derive(Debug, Clone, Copy)]
struct Consistent(bool);

impl Storable for Consistent {
    type Storer = StoreReplace<Self>;
}

impl KeyMeter {
    pub fn reset(&self) {
        if let Ok(mut t) = self.0.lock() {
            t.clear();
        }
    }

    fn touches(&self) -> Vec<Touch> {
        self.0.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The units of every request since the last [`reset`](Self::reset), by partition-key
    /// pattern, writes sized from the items `before` and `after` the step.
    pub fn attribute(&self, before: &Snapshot, after: &Snapshot) -> KeyUnits {
        let mut out = KeyUnits::new();
        let touches = self.touches();
        // How many writes each item takes in the step: all but its last keep its index
        // partition as it was before the step, the last one moves it where it is after.
        let mut writes_left: BTreeMap<(String, String), usize> = BTreeMap::new();
        for t in &touches {
            if let Touch::Write { pk, sk, .. } = t {
                *writes_left.entry((pk.clone(), sk.clone())).or_default() += 1;
            }
        }
        for touch in touches {
            match touch {
                Touch::Write {
                    pk,
                    sk,
                    transactional,
                } => {
                    let key = (pk.clone(), sk.clone());
                    let (b, a) = (before.get(&key), after.get(&key));
                    let bytes = b.map_or(0, item_size).max(a.map_or(0, item_size));
                    let units = inbox_core::store::size::write_units(bytes)
                        * if transactional { 2 } else { 1 };
                    let entry = out.entry(pattern(&pk)).or_default();
                    entry.write_units += units;
                    entry.touches += 1;
                    *entry.writes_by_sort_key.entry(sort_group(&sk)).or_default() += units;
                    let shard = |i: Option<&Item>| {
                        i.map(|i| text(i, "open_shard")).filter(|s| !s.is_empty())
                    };
                    let left = writes_left.entry(key).or_default();
                    *left = left.saturating_sub(1);
                    let (old, new) = match (shard(b), shard(a)) {
                        (Some(o), _) if *left > 0 => (Some(o.clone()), Some(o)),
                        (None, Some(n)) if *left > 0 => (Some(n.clone()), Some(n)),
                        other => other,
                    };
                    let moved: Vec<String> = match (old, new) {
                        (Some(o), Some(n)) if o == n => vec![o],
                        (o, n) => o.into_iter().chain(n).collect(),
                    };
                    for s in moved {
                        let entry = out.entry(index_pattern(&s)).or_default();
                        entry.write_units += 1;
                        entry.touches += 1;
                        *entry
                            .writes_by_sort_key
                            .entry("(index entry)".into())
                            .or_default() += 1;
                    }
                }
                Touch::Read {
                    partition,
                    sk,
                    index,
                    half_units,
                } => {
                    let name = if index {
                        index_pattern(&partition)
                    } else {
                        pattern(&partition)
                    };
                    let entry = out.entry(name).or_default();
                    entry.read_half_units += half_units;
                    entry.touches += 1;
                    let group = sk.as_deref().map_or("(query)".to_owned(), sort_group);
                    *entry.reads_by_sort_key.entry(group).or_default() += half_units;
                }
            }
        }
        out
    }
}

impl Intercept for KeyMeter {
    fn name(&self) -> &'static str {
        "KeyMeter"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input();
        cfg.interceptor_state()
            .store_put(Pending(touches_of(input)));
        cfg.interceptor_state()
            .store_put(Consistent(consistency(input)));
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(mut pending) = cfg.load::<Pending>().cloned() else {
            return Ok(());
        };
        let consistent = cfg.load::<Consistent>().is_none_or(|c| c.0);
        if let Ok(output) = context.output_or_error() {
            size_reads(&mut pending.0, output);
        } else {
            // A failed request: a write whose condition failed still costs its item's units;
            // a failed read costs its minimum.
            for t in &mut pending.0 {
                if let Touch::Read { half_units, .. } = t {
                    *half_units = 2;
                }
            }
        }
        if !consistent {
            for t in &mut pending.0 {
                if let Touch::Read { half_units, .. } = t {
                    *half_units = (*half_units).div_ceil(2);
                }
            }
        }
        if let Ok(mut all) = self.0.lock() {
            all.extend(pending.0);
        }
        Ok(())
    }
}

/// The partition-key pattern of a table key: one per event (`MSG#{source}#{event_id}`), per
/// tenant (`WALLET#{tenant}`), one for the stack (`DESTINATIONS`), ….
pub fn pattern(pk: &str) -> String {
    const PATTERNS: [(&str, &str); 10] = [
        ("MSG#", "MSG#{source}#{event_id}"),
        ("OUT#", "OUT#{destination}#{source}#{event_id}"),
        ("FAN#", "FAN#{source}#{event_id}"),
        ("DEST#", "DEST#{id}"),
        ("PROVIDER#", "PROVIDER#{provider}"),
        ("PAYMENT_METHOD#", "PAYMENT_METHOD#{payment method}"),
        ("PAYMENT#", "PAYMENT#{payment intent}"),
        ("EFFECT#", "EFFECT#{event id} (test handler)"),
        ("DESTINATIONS", "DESTINATIONS"),
        ("WALLETS", "WALLETS"),
    ];
    if let Some(rest) = pk.strip_prefix("WALLET#") {
        // A shard item of the balance: a number after the tenant.
        let shard = rest
            .rsplit_once('#')
            .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        return if shard {
            "WALLET#{tenant}#{shard}".into()
        } else {
            "WALLET#{tenant}".into()
        };
    }
    PATTERNS
        .iter()
        .find(|(prefix, _)| pk.starts_with(prefix))
        .map_or_else(|| format!("other: {pk}"), |(_, p)| (*p).to_owned())
}

/// The pattern of an open-index partition (`open_shard`).
pub fn index_pattern(shard: &str) -> String {
    const SHARDED: [&str; 5] = [
        "OUTBOX#DONE#",
        "OUTBOX#",
        "OPEN#",
        "AUTOPAY#ATTEMPT#",
        "AUTOPAY#RECURRING#",
    ];
    match SHARDED.iter().find(|p| {
        shard
            .strip_prefix(**p)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }) {
        Some(p) => format!("open-index {p}{{shard}}"),
        None => format!("open-index {shard}"),
    }
}

/// The group of a sort key: the item itself when it has no `#` (`WALLET`, `STATE`, `MSG`),
/// `ENTRY#{ms}…` (time-ordered: a 13-digit time first), or `EMAIL#{id}` (one per id).
pub fn sort_group(sk: &str) -> String {
    match sk.split_once('#') {
        None => sk.to_owned(),
        Some((prefix, rest)) => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits >= 13 {
                format!("{prefix}#{{ms}}…")
            } else {
                format!("{prefix}#{{id}}")
            }
        }
    }
}

/// `more` added into `into` (two steps of one flow).
pub fn merge(into: &mut KeyUnits, more: KeyUnits) {
    for (k, u) in more {
        let e = into.entry(k).or_default();
        e.read_half_units += u.read_half_units;
        e.write_units += u.write_units;
        e.touches += u.touches;
        for (g, n) in u.writes_by_sort_key {
            *e.writes_by_sort_key.entry(g).or_default() += n;
        }
        for (g, n) in u.reads_by_sort_key {
            *e.reads_by_sort_key.entry(g).or_default() += n;
        }
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
        "open-index AUTOPAY#ATTEMPT#{shard}": shards(wallet_ledger::items::AUTOPAY_SHARDS),
        "open-index AUTOPAY#RECURRING#{shard}": shards(wallet_ledger::items::AUTOPAY_SHARDS),
    }});
    if let Err(e) = std::fs::write(dir.join(format!("keys-{flow}.json")), body.to_string()) {
        eprintln!("keys-{flow}.json: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_their_patterns() {
        for (pk, want) in [
            ("MSG#mailer#msg_1", "MSG#{source}#{event_id}"),
            (
                "OUT#bench#stripe#evt_1",
                "OUT#{destination}#{source}#{event_id}",
            ),
            ("DEST#bench", "DEST#{id}"),
            ("DESTINATIONS", "DESTINATIONS"),
            ("WALLET#acme", "WALLET#{tenant}"),
            ("WALLET#acme#3", "WALLET#{tenant}#{shard}"),
            ("WALLET#a#b", "WALLET#{tenant}"),
            ("WALLETS", "WALLETS"),
            ("PAYMENT#pi_1", "PAYMENT#{payment intent}"),
            ("PAYMENT_METHOD#pm_1", "PAYMENT_METHOD#{payment method}"),
            ("PROVIDER#stripe", "PROVIDER#{provider}"),
            ("ZZZ", "other: ZZZ"),
        ] {
            assert_eq!(pattern(pk), want, "{pk}");
        }
        assert_eq!(index_pattern("OPEN#7"), "open-index OPEN#{shard}");
        assert_eq!(index_pattern("OUTBOX#15"), "open-index OUTBOX#{shard}");
        assert_eq!(
            index_pattern("OUTBOX#DONE#2"),
            "open-index OUTBOX#DONE#{shard}"
        );
        assert_eq!(index_pattern("OUTBOX#DONE"), "open-index OUTBOX#DONE");
        assert_eq!(index_pattern("UNMATCHED"), "open-index UNMATCHED");
        assert_eq!(sort_group("WALLET"), "WALLET");
        assert_eq!(sort_group("ENTRY#1764547200000#ab12"), "ENTRY#{ms}…");
        assert_eq!(sort_group("EMAIL#m-1"), "EMAIL#{id}");
        assert_eq!(sort_group("DLV#count"), "DLV#{id}");
    }

    #[test]
    fn a_transaction_is_priced_per_element_and_the_index_per_partition_it_leaves_and_joins() {
        let item = |pk: &str, sk: &str, shard: Option<&str>, pad: usize| {
            let mut i = Item::from([
                ("pk".to_string(), AttributeValue::S(pk.into())),
                ("sk".to_string(), AttributeValue::S(sk.into())),
                ("pad".to_string(), AttributeValue::S("x".repeat(pad))),
            ]);
            if let Some(s) = shard {
                i.insert("open_shard".into(), AttributeValue::S(s.into()));
            }
            ((pk.to_owned(), sk.to_owned()), i)
        };
        let before = Snapshot::from([item("MSG#a#1", "MSG", Some("OPEN#3"), 1500)]);
        let after = Snapshot::from([
            item("MSG#a#1", "MSG", None, 1500),
            item("WALLET#acme", "WALLET", None, 100),
            item("WALLET#acme", "ENTRY#1764547200000#x", None, 100),
        ]);
        let meter = KeyMeter::default();
        meter.0.lock().unwrap().extend([
            Touch::Write {
                pk: "MSG#a#1".into(),
                sk: "MSG".into(),
                transactional: true,
            },
            Touch::Write {
                pk: "WALLET#acme".into(),
                sk: "WALLET".into(),
                transactional: true,
            },
            Touch::Write {
                pk: "WALLET#acme".into(),
                sk: "ENTRY#1764547200000#x".into(),
                transactional: true,
            },
            Touch::Read {
                partition: "WALLET#acme".into(),
                sk: Some("WALLET".into()),
                index: false,
                half_units: 2,
            },
        ]);
        let units = meter.attribute(&before, &after);
        assert_eq!(
            units["MSG#{source}#{event_id}"].write_units, 4,
            "1.5 KB, twice"
        );
        assert_eq!(
            units["open-index OPEN#{shard}"].write_units, 1,
            "left the index"
        );
        let wallet = &units["WALLET#{tenant}"];
        assert_eq!(wallet.write_units, 4);
        assert_eq!(wallet.writes_by_sort_key["WALLET"], 2);
        assert_eq!(wallet.writes_by_sort_key["ENTRY#{ms}…"], 2);
        assert_eq!(wallet.read_half_units, 2);
        meter.reset();
        assert!(meter.attribute(&before, &after).is_empty());

        // A delivery claimed, then recorded: two writes of one item, the second moving it.
        let before = Snapshot::from([item("OUT#d#a#1", "OUT", Some("OUTBOX#4"), 10)]);
        let after = Snapshot::from([item("OUT#d#a#1", "OUT", Some("OUTBOX#DONE#4"), 10)]);
        let write = Touch::Write {
            pk: "OUT#d#a#1".into(),
            sk: "OUT".into(),
            transactional: false,
        };
        meter.0.lock().unwrap().extend([write.clone(), write]);
        let units = meter.attribute(&before, &after);
        assert_eq!(
            units["OUT#{destination}#{source}#{event_id}"].write_units,
            2
        );
        assert_eq!(
            units["open-index OUTBOX#{shard}"].write_units, 2,
            "updated, then left"
        );
        assert_eq!(
            units["open-index OUTBOX#DONE#{shard}"].write_units, 1,
            "joined once"
        );
    }
}
