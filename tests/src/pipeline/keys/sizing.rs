//! The pricing: a step's recorded touches turned into units by partition-key pattern
//! ([`KeyMeter::attribute`]), and two steps of one flow added together ([`merge`]).
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

use super::patterns::{index_pattern, pattern, sort_group};
use super::{text, KeyMeter, KeyUnits, Snapshot, Touch};
use inbox_core::store::size::item_size;
use inbox_core::store::Item;
use std::collections::BTreeMap;

impl KeyMeter {
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

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

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
