//! The table itself: the [`Row`]s of each workload (a key's units, its share, its cap and why,
//! split by the sort-key groups split for heat cannot spread) and the [`Capacity`] they make
//! together — the stack's and one tenant's ceilings and the wallet shards the hot tenant needs.

use crate::model::{cap, mix, spread, Flow, Shards, Spread, Use, PARTITION_RCU, PARTITION_WCU};
use crate::render::fmt_rate;
use std::collections::BTreeMap;

/// The targets: no key of the stack below this many webhooks/s, none of a tenant below this.
pub const STACK_TARGET: f64 = 10_000.0;
pub const TENANT_TARGET: f64 = 1_000.0;
/// The hot tenant of the issue: holds and debits per second.
pub const HOT_HOLDS: f64 = 5_000.0;
pub const HOT_DEBITS: f64 = 5_000.0;
/// The balance item's sort key under `WALLET#{tenant}` (what K shard items split).
pub const BALANCE_SK: &str = "WALLET";
/// The most shards a wallet may have (`wallet_ledger::balance::items::shards::MAX_SHARDS`).
pub const MAX_K: f64 = 64.0;
/// The shard items' partition-key pattern (`WALLET#{tenant}#S{n}`, shards 1..K − 1).
pub const SHARD_PATTERN: &str = "WALLET#{tenant}#{shard}";
/// Function instances that keep one tenant's wallet view (`WALLET_VIEW_MS`), each reading every
/// shard item once per refresh, and their refreshes per second (the default 1,000 ms): an
/// assumption, not a measurement — 10,000 movements/s at about 20 ms each keep some 200
/// instances busy. They take this many read units per second of every shard's partition.
pub const VIEW_INSTANCES: f64 = 200.0;
pub const VIEW_REFRESHES_PER_S: f64 = 1.0;

/// The stack's workload, as the table names it.
pub const STACK_WORKLOAD: &str = "webhook + fan-out (from the code) + delivery";

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub workload: &'static str,
    pub shared: String,
    pub rcu: f64,
    pub wcu: f64,
    /// Read and write units per partition and second at the table's rate (none for a key of
    /// one event: it takes one event's).
    pub per_partition: Option<(f64, f64)>,
    /// Operations/s at which it caps (infinite: never), and why.
    pub cap: f64,
    pub bound: String,
    /// Against which target (stack or tenant), if any.
    pub target: Option<f64>,
}

/// The rows of one workload at `rate` operations/s.
pub fn rows(f: &Flow, workload: &'static str, rate: f64, k: f64, shards: &Shards) -> Vec<Row> {
    let mut out = Vec::new();
    for (key, u) in f {
        if u.rcu == 0.0 && u.wcu == 0.0 {
            continue;
        }
        let s = spread(key, shards);
        let partitions = match s {
            Spread::Stack(n) => n,
            _ => 1.0,
        };
        let (shared, target) = match s {
            Spread::PerEvent => ("one event".to_owned(), None),
            Spread::Stack(n) if n > 1.0 => {
                (format!("the stack, {n:.0} shards"), Some(STACK_TARGET))
            }
            Spread::Stack(_) => ("the stack".to_owned(), Some(STACK_TARGET)),
            Spread::Tenant => (format!("one tenant, K = {k:.0}"), Some(TENANT_TARGET)),
            Spread::Destination => ("one destination".to_owned(), Some(TENANT_TARGET)),
        };
        let (rcap, wcap) = (
            cap(PARTITION_RCU, partitions, u.rcu),
            cap(PARTITION_WCU, partitions, u.wcu),
        );
        let (c, mut bound) = if rcap < wcap {
            (
                rcap,
                format!("reads: {partitions:.0} × 3,000 RCU / {:.2}", u.rcu),
            )
        } else {
            (
                wcap,
                format!("writes: {partitions:.0} × 1,000 WCU / {:.2}", u.wcu),
            )
        };
        let per_partition = |r: f64, w: f64, parts: f64| {
            (s != Spread::PerEvent).then(|| (r * rate / parts, w * rate / parts))
        };
        let row = |key: String, r: f64, w: f64, parts: f64, c: f64, bound: String| Row {
            key,
            workload,
            shared: shared.clone(),
            rcu: r,
            wcu: w,
            per_partition: per_partition(r, w, parts),
            cap: c,
            bound,
            target,
        };
        if s == Spread::PerEvent {
            out.push(row(
                key.clone(),
                u.rcu,
                u.wcu,
                partitions,
                f64::INFINITY,
                "one key per event: never shared".into(),
            ));
            continue;
        }
        if key == "DESTINATIONS" {
            bound.push_str(
                "; one Query per function instance per DESTINATION_CACHE_MS, not per webhook: the share is one worker's over the measured run",
            );
        }
        let groups: std::collections::BTreeSet<&String> = u
            .by_sort_key
            .keys()
            .chain(u.reads_by_sort_key.keys())
            .filter(|g| Use::splits_for_heat(g).is_some_and(|splits| !splits))
            .collect();
        if !matches!(s, Spread::Tenant | Spread::Destination) || groups.is_empty() {
            out.push(row(key.clone(), u.rcu, u.wcu, partitions, c, bound));
            continue;
        }
        // Split for heat may spread a key's items apart, but not one item nor an increasing
        // run: each of those is a row of its own, capped on its own.
        for g in groups {
            let r = u.reads_by_sort_key.get(g).copied().unwrap_or_default();
            let w = u.by_sort_key.get(g).copied().unwrap_or_default();
            // The balance split over K shard items of their own partition keys.
            let balance = s == Spread::Tenant && g == BALANCE_SK;
            let parts = if balance { partitions * k } else { partitions };
            let (rc, wc) = (cap(PARTITION_RCU, parts, r), cap(PARTITION_WCU, parts, w));
            let (gc, by) = if rc < wc {
                (rc, format!("{parts:.0} × 3,000 RCU / {r:.2}"))
            } else {
                (wc, format!("{parts:.0} × 1,000 WCU / {w:.2}"))
            };
            let what = if balance {
                if k > 1.0 {
                    "the balance over K shard items, one partition each"
                } else {
                    "one item (K = 1): one partition"
                }
            } else if g.contains("{ms}") {
                "items in increasing sort-key order: every new one at the end of the range"
            } else {
                "one item: one partition"
            };
            out.push(row(
                format!("{key} {g}"),
                r,
                w,
                parts,
                gc,
                format!(
                    "{by} ({what}, split for heat cannot spread it); the whole key in one partition: {}",
                    fmt_rate(c)
                ),
            ));
        }
    }
    out
}

/// Everything the table and its figures need, from the measured flows.
pub struct Capacity {
    pub rows: Vec<Row>,
    pub stack_ceiling: (f64, String),
    pub tenant_ceiling: (f64, String),
    /// The K at which one tenant's keys reach [`TENANT_TARGET`] emails/s, if one up to [`MAX_K`]
    /// does.
    pub tenant_k: Option<f64>,
    /// The hot tenant: 5,000 holds + 5,000 debits a second on one wallet.
    pub hot: Hot,
}

/// One email's units (hold + capture) on a sharded wallet, as measured on one of K = 8 shards
/// with a warm view: the balance's on the movement's own shard, the rest as they fall; the K
/// that [`HOT_HOLDS`] + [`HOT_DEBITS`] a second need, and what the tenant's keys allow there.
#[derive(Debug, Clone, PartialEq)]
pub struct Hot {
    /// The balance's read and write units per hold and per capture.
    pub hold: (f64, f64),
    pub capture: (f64, f64),
    /// The K the balance's writes need, the K its reads need (with the views' refreshes).
    pub k_writes: f64,
    pub k_reads: f64,
    pub k: f64,
    /// Emails/s one tenant's keys allow at `k` (the lowest), and which key.
    pub cap: f64,
    pub bound: String,
}

impl Hot {
    /// Met: some K up to [`MAX_K`] carries the hot tenant.
    pub fn met(&self) -> bool {
        self.k <= MAX_K && self.cap >= HOT_HOLDS.min(HOT_DEBITS)
    }
}

/// The flow with its shard items' units counted as the balance item's (`WALLET#{tenant}`
/// `WALLET`): a movement writes one balance item, whichever of the K it is.
pub fn shards_as_balance(f: &Flow) -> Flow {
    let mut out = f.clone();
    if let Some(shard) = out.remove(SHARD_PATTERN) {
        let balance = Use {
            rcu: shard.rcu,
            wcu: shard.wcu,
            by_sort_key: BTreeMap::from([(BALANCE_SK.to_owned(), shard.wcu)]),
            reads_by_sort_key: BTreeMap::from([(BALANCE_SK.to_owned(), shard.rcu)]),
        };
        out.entry("WALLET#{tenant}".to_owned())
            .or_default()
            .add(&balance, 1.0);
    }
    out
}

/// The balance's read and write units per operation of `f` (its shard items' included).
fn balance_units(f: &Flow) -> (f64, f64) {
    let f = shards_as_balance(f);
    f.get("WALLET#{tenant}").map_or((0.0, 0.0), |u| {
        (
            u.reads_by_sort_key
                .get(BALANCE_SK)
                .copied()
                .unwrap_or_default(),
            u.by_sort_key.get(BALANCE_SK).copied().unwrap_or_default(),
        )
    })
}

/// The lowest cap among one tenant's rows of `email` at `k` shards (emails/s), and its key.
fn tenant_cap(
    email: &Flow,
    workload: &'static str,
    rate: f64,
    k: f64,
    shards: &Shards,
) -> (f64, String, Vec<Row>) {
    let rows: Vec<Row> = rows(email, workload, rate, k, shards)
        .into_iter()
        .filter(|r| r.key.starts_with("WALLET#{tenant}"))
        .collect();
    let (c, key) = rows
        .iter()
        .min_by(|a, b| a.cap.total_cmp(&b.cap))
        .map_or((f64::INFINITY, "none".to_owned()), |r| {
            (r.cap, format!("{} ({})", r.key, r.workload))
        });
    (c, key, rows)
}

/// The hot tenant from the sharded flows (`hold-k8`, `capture-k8`).
fn hot(hold: &Flow, capture: &Flow, rate: f64, shards: &Shards) -> (Hot, Vec<Row>) {
    let (hold_units, capture_units) = (balance_units(hold), balance_units(capture));
    let writes = HOT_HOLDS * hold_units.1 + HOT_DEBITS * capture_units.1;
    let reads = HOT_HOLDS * hold_units.0 + HOT_DEBITS * capture_units.0;
    let refresh = VIEW_INSTANCES * VIEW_REFRESHES_PER_S;
    let k_writes = (writes / PARTITION_WCU).ceil().max(1.0);
    let k_reads = (reads / (PARTITION_RCU - refresh)).ceil().max(1.0);
    let k = k_writes.max(k_reads);
    let email = shards_as_balance(&mix(&[(hold, 1.0), (capture, 1.0)]));
    let (cap_rows, key, mut rows) = tenant_cap(&email, HOT_WORKLOAD, rate, k, shards);
    for r in &mut rows {
        r.target = Some(HOT_HOLDS.min(HOT_DEBITS));
    }
    // The views' refreshes take a share of every shard's reads.
    let read_cap = cap(PARTITION_RCU - refresh, k, hold_units.0 + capture_units.0);
    let (cap, bound) = if read_cap < cap_rows {
        (
            read_cap,
            format!("WALLET#{{tenant}} WALLET reads, with the views' {refresh:.0} RCU/s per shard"),
        )
    } else {
        (cap_rows, key)
    };
    (
        Hot {
            hold: hold_units,
            capture: capture_units,
            k_writes,
            k_reads,
            k,
            cap,
            bound,
        },
        rows,
    )
}

/// The hot tenant's workload, as the table names it.
pub const HOT_WORKLOAD: &str = "hot tenant: hold + capture, K shards (measured at K = 8)";

/// The fan-out's writes, from the code (no measured flow subscribes a destination to the wallet
/// webhook): the processing transaction also puts the delivery's item (`Effect::Ensure` of an
/// `OUT` item under 1 KB: 2 units in a transaction) and so its open-index entry (`OUTBOX#…`: 1).
pub fn fan_out_from_code() -> Flow {
    Flow::from([
        (
            "OUT#{destination}#{source}#{event_id}".to_owned(),
            Use {
                wcu: 2.0,
                by_sort_key: BTreeMap::from([("OUT".to_owned(), 2.0)]),
                ..Use::default()
            },
        ),
        (
            "open-index OUTBOX#{shard}".to_owned(),
            Use {
                wcu: 1.0,
                by_sort_key: BTreeMap::from([("(index entry)".to_owned(), 1.0)]),
                ..Use::default()
            },
        ),
    ])
}

pub fn compute(flows: &BTreeMap<&str, Flow>, rate: f64, k: f64, shards: &Shards) -> Capacity {
    let empty = Flow::new();
    let get = |n: &str| flows.get(n).unwrap_or(&empty);
    let fan_out = fan_out_from_code();
    let stack = mix(&[
        (get("webhook"), 1.0),
        (&fan_out, 1.0),
        (get("delivery"), 1.0),
    ]);
    let email = mix(&[(get("hold"), 1.0), (get("capture"), 1.0)]);
    let mut all = rows(&stack, STACK_WORKLOAD, rate, k, shards);
    // The tenant's own keys under its emails (hold + capture), in place of the plain debit's.
    all.retain(|r| !r.key.starts_with("WALLET#{tenant}"));
    let tenant_rows: Vec<Row> = rows(&email, "email: hold + capture", rate, k, shards)
        .into_iter()
        .filter(|r| r.key.starts_with("WALLET#{tenant}"))
        .collect();
    let debit_rows: Vec<Row> = rows(&stack, "debit without hold", rate, k, shards)
        .into_iter()
        .filter(|r| r.key.starts_with("WALLET#{tenant}"))
        .collect();
    all.extend(tenant_rows);
    all.extend(debit_rows);
    let lowest = |target: f64| {
        all.iter()
            .filter(|r| r.target == Some(target))
            .min_by(|a, b| a.cap.total_cmp(&b.cap))
            .map(|r| (r.cap, format!("{} ({})", r.key, r.workload)))
            .unwrap_or((f64::INFINITY, "none".into()))
    };
    let stack_ceiling = lowest(STACK_TARGET);
    let tenant_ceiling = lowest(TENANT_TARGET);
    // The K at which a tenant's emails (as measured on a sharded wallet) reach the target.
    let sharded = shards_as_balance(&mix(&[(get("hold-k8"), 1.0), (get("capture-k8"), 1.0)]));
    let tenant_k = (1..=MAX_K as u32).map(f64::from).find(|k| {
        let flow = if *k > 1.0 { &sharded } else { &email };
        tenant_cap(flow, "email: hold + capture", rate, *k, shards).0 >= TENANT_TARGET
    });
    let (hot, hot_rows) = hot(get("hold-k8"), get("capture-k8"), rate, shards);
    all.extend(hot_rows);
    Capacity {
        rows: all,
        stack_ceiling,
        tenant_ceiling,
        tenant_k,
        hot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::flow;
    use serde_json::{json, Value};

    fn flow_of(keys: Value) -> Flow {
        flow(&json!({"count": 1, "keys": keys})).unwrap()
    }

    #[test]
    fn keys_cap_by_their_spread_and_their_unsplittable_items() {
        let webhook = flow_of(json!({
            "MSG#{source}#{event_id}": {"read_half_units": 0, "write_units": 6, "writes_by_sort_key": {"MSG": 6}},
            "open-index OPEN#{shard}": {"read_half_units": 0, "write_units": 2, "writes_by_sort_key": {"(index entry)": 2}},
            "WALLET#{tenant}": {"read_half_units": 2, "write_units": 6,
                "writes_by_sort_key": {"WALLET": 2, "EMAIL#{id}": 2, "ENTRY#{ms}…": 2},
                "reads_by_sort_key": {"WALLET": 2}},
        }));
        let hold = flow_of(json!({
            "WALLET#{tenant}": {"read_half_units": 4, "write_units": 8,
                "writes_by_sort_key": {"WALLET": 2, "HOLD#{id}": 2, "EMAIL#{id}": 2, "ENTRY#{ms}…": 2},
                "reads_by_sort_key": {"WALLET": 2, "EMAIL#{id}": 2}},
        }));
        let capture = webhook.clone();
        let delivery = flow_of(json!({
            "DEST#{id}": {"read_half_units": 0, "write_units": 1, "writes_by_sort_key": {"STATE": 1}},
        }));
        // On a sharded wallet: each movement reads and writes its own shard (here a shard
        // item; shard 0 is the wallet item), the rest from the view.
        let hold_k8 = flow_of(json!({
            "WALLET#{tenant}#{shard}": {"read_half_units": 2, "write_units": 2,
                "writes_by_sort_key": {"SHARD#{id}": 2}, "reads_by_sort_key": {"SHARD#{id}": 2}},
            "WALLET#{tenant}": {"read_half_units": 0, "write_units": 4,
                "writes_by_sort_key": {"HOLD#{id}": 2, "EMAIL#{id}": 2}},
        }));
        let capture_k8 = flow_of(json!({
            "WALLET#{tenant}": {"read_half_units": 2, "write_units": 4,
                "writes_by_sort_key": {"WALLET": 2, "EMAIL#{id}": 2},
                "reads_by_sort_key": {"WALLET": 2}},
        }));
        let mut flows = BTreeMap::from([
            ("webhook", webhook),
            ("delivery", delivery),
            ("hold", hold),
            ("capture", capture),
            ("hold-k8", hold_k8.clone()),
            ("capture-k8", capture_k8),
        ]);
        let shards = Shards::from([("open-index OPEN#{shard}".into(), 16.0)]);
        let c = compute(&flows, 1000.0, 1.0, &shards);
        let row = |key: &str, workload: &str| {
            c.rows
                .iter()
                .find(|r| r.key == key && r.workload == workload)
                .unwrap_or_else(|| panic!("{key} {workload}: {:?}", c.rows))
                .clone()
        };
        let msg = row("MSG#{source}#{event_id}", STACK_WORKLOAD);
        assert!(msg.cap.is_infinite() && msg.target.is_none());
        let open = row("open-index OPEN#{shard}", STACK_WORKLOAD);
        assert_eq!(open.cap, 8000.0, "16 × 1,000 / 2");
        assert_eq!(
            open.per_partition,
            Some((0.0, 125.0)),
            "2 × 1,000 / 16 per shard"
        );
        assert_eq!(
            msg.per_partition, None,
            "one event's key takes one event's units"
        );
        assert_eq!(row("DEST#{id} STATE", STACK_WORKLOAD).cap, 1000.0);
        let outbox = row("open-index OUTBOX#{shard}", STACK_WORKLOAD);
        assert_eq!(outbox.wcu, 1.0, "the fan-out's entry, from the code");
        let balance = row("WALLET#{tenant} WALLET", "email: hold + capture");
        assert_eq!((balance.wcu, balance.rcu), (4.0, 2.0));
        assert_eq!(balance.cap, 250.0, "the balance item: 1,000 / (2 + 2)");
        assert!(
            balance.bound.contains("whole key in one partition: 71"),
            "{}",
            balance.bound
        );
        let entries = row("WALLET#{tenant} ENTRY#{ms}…", "email: hold + capture");
        assert_eq!(entries.cap, 250.0);
        assert!(entries.bound.contains("increasing sort-key order"));
        assert!(
            !c.rows.iter().any(|r| r.key.contains("EMAIL#")),
            "rows by id split for heat: no row of their own"
        );
        assert_eq!(
            row("WALLET#{tenant} WALLET", "debit without hold").cap,
            500.0
        );
        assert_eq!(c.stack_ceiling.0, 8000.0);
        assert_eq!(c.tenant_ceiling.0, 250.0);
        // The hot tenant: the balance's units per movement, whichever shard it is on.
        let h = &c.hot;
        assert_eq!((h.hold, h.capture), ((1.0, 2.0), (1.0, 2.0)));
        assert_eq!(h.k_writes, 20.0, "(5,000 × 2 + 5,000 × 2) / 1,000");
        assert_eq!(
            h.k_reads, 4.0,
            "(5,000 + 5,000) / (3,000 − 200 for the views)"
        );
        assert_eq!((h.k, h.cap), (20.0, 5000.0), "20 × 1,000 / 4");
        assert!(h.met(), "{h:?}");
        let hot_balance = row("WALLET#{tenant} WALLET", HOT_WORKLOAD);
        assert_eq!(hot_balance.per_partition, Some((100.0, 200.0)));
        assert_eq!(hot_balance.target, Some(5000.0));
        assert!(!c.rows.iter().any(|r| r.key.starts_with(SHARD_PATTERN)));
        // One tenant reaches 1,000 emails/s once spread (the K = 1 flow's entries aside).
        assert_eq!(c.tenant_k, Some(4.0), "4 × 1,000 / 4");
        // An item every movement reads, whatever K (autopay's, were it read per hold), bounds it.
        let mut read_each_time = hold_k8;
        read_each_time.insert(
            "WALLET#{tenant}".into(),
            flow_of(
                json!({"WALLET#{tenant}": {"read_half_units": 2, "write_units": 4,
                "writes_by_sort_key": {"HOLD#{id}": 2, "EMAIL#{id}": 2},
                "reads_by_sort_key": {"AUTOPAY": 2}}}),
            )["WALLET#{tenant}"]
                .clone(),
        );
        flows.insert("hold-k8", read_each_time);
        let bound = compute(&flows, 1000.0, 1.0, &shards).hot;
        assert_eq!(bound.cap, 3000.0, "3,000 RCU / 1 read per email");
        assert!(bound.bound.contains("AUTOPAY") && !bound.met(), "{bound:?}");
        let at = compute(&flows, 1000.0, 20.0, &shards);
        let spread = |key: &str| {
            at.rows
                .iter()
                .find(|r| r.key == key && r.workload == "email: hold + capture")
                .unwrap()
                .clone()
        };
        let balance = spread("WALLET#{tenant} WALLET");
        assert_eq!(balance.cap, 5000.0, "20 × 1,000 / 4");
        assert_eq!(balance.per_partition, Some((100.0, 200.0)));
        assert_eq!(
            spread("WALLET#{tenant} ENTRY#{ms}…").cap,
            250.0,
            "K does not spread entries"
        );
        assert_eq!(at.tenant_ceiling.0, 250.0);
        assert_eq!(fmt_rate(12_345.6), "12,345");
        assert_eq!(fmt_rate(f64::INFINITY), "—");
    }
}
