//! The model of the measured flows: DynamoDB's per-partition limits, who shares each
//! partition-key pattern ([`Spread`]), one key's units per operation ([`Use`]) and a flow's units
//! by key ([`Flow`]), read from `keys-*.json`, mixed into workloads, and the rate at which units
//! fill partitions ([`cap`]).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// DynamoDB's documented per-partition limits (Developer Guide, "Best practices for designing
/// and using partition keys effectively" / "Partitions"): 3,000 read and 1,000 write units per
/// second, for a table's partitions and a global secondary index's alike.
pub const PARTITION_RCU: f64 = 3000.0;
pub const PARTITION_WCU: f64 = 1000.0;
/// The open index's shards of a sharded family the measured flows did not name (each flow's
/// file names the code's `OPEN_SHARDS`, `OUTBOX_SHARDS`, `AUTOPAY_SHARDS`).
pub const INDEX_SHARDS: f64 = 16.0;

/// Partitions of each sharded index family, as the flows' files name them.
pub type Shards = BTreeMap<String, f64>;

/// Who shares a key, and over how many partitions it spreads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spread {
    /// One key per event, delivery or payment: its rate is one event's, it never caps.
    PerEvent,
    /// Shared by the whole stack, over this many partition keys.
    Stack(f64),
    /// Shared by one tenant's traffic (over K wallet shards).
    Tenant,
    /// Shared by one destination's deliveries.
    Destination,
}

pub fn spread(pattern: &str, shards: &Shards) -> Spread {
    let sharded = pattern.starts_with("open-index ") && pattern.ends_with("{shard}");
    if sharded {
        Spread::Stack(shards.get(pattern).copied().unwrap_or(INDEX_SHARDS))
    } else if pattern.starts_with("WALLET#{tenant}") {
        Spread::Tenant
    } else if pattern == "DEST#{id}" {
        Spread::Destination
    } else if [
        "MSG#",
        "OUT#",
        "FAN#",
        "PAYMENT#",
        "PAYMENT_METHOD#",
        "EFFECT#",
    ]
    .iter()
    .any(|p| pattern.starts_with(p))
    {
        Spread::PerEvent
    } else {
        Spread::Stack(1.0)
    }
}

/// One key's units in one flow, per operation: read units, write units, and write units by
/// sort-key group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Use {
    pub rcu: f64,
    pub wcu: f64,
    pub by_sort_key: BTreeMap<String, f64>,
    /// Read units by sort-key group (`(query)` for a `Query`).
    pub reads_by_sort_key: BTreeMap<String, f64>,
}

impl Use {
    pub fn add(&mut self, other: &Use, times: f64) {
        self.rcu += other.rcu * times;
        self.wcu += other.wcu * times;
        for (g, w) in &other.by_sort_key {
            *self.by_sort_key.entry(g.clone()).or_default() += w * times;
        }
        for (g, r) in &other.reads_by_sort_key {
            *self.reads_by_sort_key.entry(g.clone()).or_default() += r * times;
        }
    }

    /// Whether split for heat can spread a sort-key group's items apart: not one item (a sort
    /// key without `#`) nor items in increasing sort-key order (`…#{ms}…`); items by id can be.
    /// None for what is not a group of items (`(query)`, `(index entry)`).
    pub fn splits_for_heat(group: &str) -> Option<bool> {
        if group.starts_with('(') {
            None
        } else {
            Some(group.contains('#') && !group.contains("{ms}"))
        }
    }
}

/// One measured flow: its units by key, per operation.
pub type Flow = BTreeMap<String, Use>;

pub fn flow(v: &Value) -> Result<Flow, String> {
    let count = v["count"].as_f64().filter(|c| *c > 0.0).ok_or("no count")?;
    let keys = v["keys"].as_object().ok_or("no keys")?;
    keys.iter()
        .map(|(k, u)| {
            let num = |f: &str| u[f].as_f64().unwrap_or_default();
            let groups = |field: &str, per: f64| -> BTreeMap<String, f64> {
                u[field]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(g, w)| (g.clone(), w.as_f64().unwrap_or_default() / per))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let by_sort_key = groups("writes_by_sort_key", count);
            let reads_by_sort_key = groups("reads_by_sort_key", 2.0 * count);
            Ok((
                k.clone(),
                Use {
                    rcu: num("read_half_units") / 2.0 / count,
                    wcu: num("write_units") / count,
                    by_sort_key,
                    reads_by_sort_key,
                },
            ))
        })
        .collect()
}

/// `a` (times `x`) and `b` (times `y`), by key.
pub fn mix(parts: &[(&Flow, f64)]) -> Flow {
    let mut out = Flow::new();
    for (f, times) in parts {
        for (k, u) in *f {
            out.entry(k.clone()).or_default().add(u, *times);
        }
    }
    out
}

/// Operations/s at which `units` per operation fill `partitions` partitions of `limit`.
pub fn cap(limit: f64, partitions: f64, units: f64) -> f64 {
    if units <= 0.0 {
        f64::INFINITY
    } else {
        limit * partitions / units
    }
}

pub fn read_flow(dir: &Path, name: &str, shards: &mut Shards) -> Result<(Flow, String), String> {
    let path = dir.join(format!("keys-{name}.json"));
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e}; run pipeline_figures and outbox_figures first (make bench)",
            path.display()
        )
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if let Some(m) = v["shards"].as_object() {
        shards.extend(m.iter().filter_map(|(k, n)| Some((k.clone(), n.as_f64()?))));
    }
    Ok((flow(&v)?, v["what"].as_str().unwrap_or(name).to_owned()))
}
