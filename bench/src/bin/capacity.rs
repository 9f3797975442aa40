//! The capacity table: for every partition-key pattern the table uses, the read and write units
//! per second it takes at a given rate of webhooks, against DynamoDB's per-partition limits, and
//! the rate at which each key caps; the design's ceiling for the whole stack and for one tenant.
//!
//! ```text
//! capacity [--figures DIR] [--rate N] [--wallet-shards K]
//! ```
//!
//! Reads what `pipeline_figures` and `outbox_figures` measured (`DIR/keys-*.json`: read and write
//! units by partition-key pattern of one wallet webhook, one delivery, one hold of the wallet API
//! and the webhook that captures it; `integration_tests::pipeline::keys`), and writes the table
//! as figures (`DIR/capacity.jsonl`) for `bench-tools figures`, which renders it into
//! `docs/benchmarks.md` (`<!-- capacity:begin -->`).
//!
//! The workloads: **the stack** takes N webhooks/s, each processed by the wallet handler (a
//! debit) and delivered to one destination (the fan-out's own writes stated from the code,
//! [`fan_out_from_code`]); **one tenant** sends emails, each a hold placed
//! through the wallet API and the delivery webhook that captures it. A key shared by the whole
//! stack caps at `partitions × limit / units per webhook`; a key shared by one tenant (or one
//! destination) caps that tenant; a key of one event never caps (its rate is its event's).
//! Inside one partition key, DynamoDB can split items apart by sort-key range when they are
//! hot ("split for heat"), except one item (it is served by one partition) and items written in
//! increasing sort-key order (every new one lands at the end of the range): those groups are
//! what caps a tenant's key; the whole key in one partition is the bound before any split.
//! `--wallet-shards K` (1, as measured, by default: what `make bench` records) spreads the
//! balance item's units over K shard items of their own partition keys, to read the table at
//! another K; the K a 5,000 holds + 5,000 debits a second tenant needs is a figure of its own.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// DynamoDB's documented per-partition limits (Developer Guide, "Best practices for designing
/// and using partition keys effectively" / "Partitions"): 3,000 read and 1,000 write units per
/// second, for a table's partitions and a global secondary index's alike.
const PARTITION_RCU: f64 = 3000.0;
const PARTITION_WCU: f64 = 1000.0;
/// The open index's shards of a sharded family the measured flows did not name (each flow's
/// file names the code's `OPEN_SHARDS`, `OUTBOX_SHARDS`, `AUTOPAY_SHARDS`).
const INDEX_SHARDS: f64 = 16.0;

/// Partitions of each sharded index family, as the flows' files name them.
type Shards = BTreeMap<String, f64>;
/// The targets: no key of the stack below this many webhooks/s, none of a tenant below this.
const STACK_TARGET: f64 = 10_000.0;
const TENANT_TARGET: f64 = 1_000.0;
/// The hot tenant of the issue: holds and debits per second.
const HOT_HOLDS: f64 = 5_000.0;
const HOT_DEBITS: f64 = 5_000.0;
/// The balance item's sort key under `WALLET#{tenant}` (what K shard items split).
const BALANCE_SK: &str = "WALLET";

/// The stack's workload, as the table names it.
const STACK_WORKLOAD: &str = "webhook + fan-out (from the code) + delivery";

/// Where the limits and the stream's documented behaviour come from.
pub const SOURCES: &str = "per-partition limits: DynamoDB Developer Guide, partition key design and throttling (KeyRangeThroughputExceeded), 3,000 RCU / 1,000 WCU per partition of a table or GSI; streams: DynamoDB Streams API Reference, GetRecords (at most 1,000 records or 1 MB per call) and LimitExceededException (more than 2 processes reading one shard at once are throttled); split for heat: Developer Guide, burst and adaptive capacity (a partition may be split down to one hot item, whose limit stays 1,000 WCU), and the AWS Database Blog, Scaling DynamoDB part 3 (items written in increasing sort-key order do not benefit)";

/// Who shares a key, and over how many partitions it spreads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Spread {
    /// One key per event, delivery or payment: its rate is one event's, it never caps.
    PerEvent,
    /// Shared by the whole stack, over this many partition keys.
    Stack(f64),
    /// Shared by one tenant's traffic (over K wallet shards).
    Tenant,
    /// Shared by one destination's deliveries.
    Destination,
}

fn spread(pattern: &str, shards: &Shards) -> Spread {
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
struct Use {
    rcu: f64,
    wcu: f64,
    by_sort_key: BTreeMap<String, f64>,
    /// Read units by sort-key group (`(query)` for a `Query`).
    reads_by_sort_key: BTreeMap<String, f64>,
}

impl Use {
    fn add(&mut self, other: &Use, times: f64) {
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
    fn splits_for_heat(group: &str) -> Option<bool> {
        if group.starts_with('(') {
            None
        } else {
            Some(group.contains('#') && !group.contains("{ms}"))
        }
    }
}

/// One measured flow: its units by key, per operation.
type Flow = BTreeMap<String, Use>;

fn flow(v: &Value) -> Result<Flow, String> {
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
fn mix(parts: &[(&Flow, f64)]) -> Flow {
    let mut out = Flow::new();
    for (f, times) in parts {
        for (k, u) in *f {
            out.entry(k.clone()).or_default().add(u, *times);
        }
    }
    out
}

/// Operations/s at which `units` per operation fill `partitions` partitions of `limit`.
fn cap(limit: f64, partitions: f64, units: f64) -> f64 {
    if units <= 0.0 {
        f64::INFINITY
    } else {
        limit * partitions / units
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    key: String,
    workload: &'static str,
    shared: String,
    rcu: f64,
    wcu: f64,
    /// Read and write units per partition and second at the table's rate (none for a key of
    /// one event: it takes one event's).
    per_partition: Option<(f64, f64)>,
    /// Operations/s at which it caps (infinite: never), and why.
    cap: f64,
    bound: String,
    /// Against which target (stack or tenant), if any.
    target: Option<f64>,
}

fn fmt_rate(r: f64) -> String {
    if r.is_infinite() {
        "—".into()
    } else if r >= 100.0 {
        // Thousands separated, as the docs write them.
        let n = r.floor() as u64;
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        format!("{r:.0}")
    }
}

/// The rows of one workload at `rate` operations/s.
fn rows(f: &Flow, workload: &'static str, rate: f64, k: f64, shards: &Shards) -> Vec<Row> {
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

fn read_flow(dir: &Path, name: &str, shards: &mut Shards) -> Result<(Flow, String), String> {
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

/// Everything the table and its figures need, from the measured flows.
struct Capacity {
    rows: Vec<Row>,
    stack_ceiling: (f64, String),
    tenant_ceiling: (f64, String),
    /// The balance's write units per hold and per captured debit, and the K the hot tenant needs.
    balance_per_hold: f64,
    balance_per_debit: f64,
    hot_k: f64,
    /// The ledger entries' write units per email (hold + capture), and the K the hot tenant
    /// would need were they written under the shards' keys too.
    entries_per_email: f64,
    hot_k_with_entries: f64,
}

/// The fan-out's writes, from the code (no measured flow subscribes a destination to the wallet
/// webhook): the processing transaction also puts the delivery's item (`Effect::Ensure` of an
/// `OUT` item under 1 KB: 2 units in a transaction) and so its open-index entry (`OUTBOX#…`: 1).
fn fan_out_from_code() -> Flow {
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

fn compute(flows: &BTreeMap<&str, Flow>, rate: f64, k: f64, shards: &Shards) -> Capacity {
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
    let balance = |f: &Flow| {
        f.get("WALLET#{tenant}")
            .and_then(|u| u.by_sort_key.get("WALLET"))
            .copied()
            .unwrap_or_default()
            + f.get("WALLET#{tenant}#{shard}").map_or(0.0, |u| u.wcu)
    };
    let (balance_per_hold, balance_per_debit) = (balance(get("hold")), balance(get("capture")));
    let hot_k = ((HOT_HOLDS * balance_per_hold + HOT_DEBITS * balance_per_debit) / PARTITION_WCU)
        .ceil()
        .max(1.0);
    let entries = |f: &Flow| {
        f.values()
            .flat_map(|u| u.by_sort_key.iter())
            .filter(|(g, _)| g.starts_with("ENTRY#"))
            .map(|(_, w)| w)
            .sum::<f64>()
    };
    let (entries_hold, entries_capture) = (entries(get("hold")), entries(get("capture")));
    let hot_k_with_entries = ((HOT_HOLDS * (balance_per_hold + entries_hold)
        + HOT_DEBITS * (balance_per_debit + entries_capture))
        / PARTITION_WCU)
        .ceil()
        .max(1.0);
    Capacity {
        rows: all,
        stack_ceiling,
        tenant_ceiling,
        balance_per_hold,
        balance_per_debit,
        hot_k,
        entries_per_email: entries_hold + entries_capture,
        hot_k_with_entries,
    }
}

fn figures_args() -> Result<(PathBuf, f64, f64), String> {
    let mut dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-figures");
    let mut rate = 1000.0;
    let mut k = 1.0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--figures", Some(d)) => dir = PathBuf::from(d),
            ("--rate", Some(r)) => rate = r.parse().map_err(|_| format!("--rate {r}: a number"))?,
            ("--wallet-shards", Some(n)) => {
                k = n
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .map(f64::from)
                    .ok_or(format!("--wallet-shards {n}: a whole number ≥ 1"))?
            }
            _ => {
                return Err("usage: capacity [--figures DIR] [--rate N] [--wallet-shards K]".into())
            }
        }
    }
    Ok((dir, rate, k))
}

fn run() -> Result<(), String> {
    let (dir, rate, k) = figures_args()?;
    let mut flows = BTreeMap::new();
    let mut whats = Vec::new();
    let mut shards = Shards::new();
    for name in ["webhook", "delivery", "hold", "capture"] {
        let (f, what) = read_flow(&dir, name, &mut shards)?;
        flows.insert(name, f);
        whats.push(format!("{name}: {what}"));
    }
    let c = compute(&flows, rate, k, &shards);
    println!(
        "== capacity by partition key, at {} operations/s ==",
        fmt_rate(rate)
    );
    println!("  measured flows: {}", whats.join("; "));
    let mut lines = Vec::new();
    for (i, r) in c.rows.iter().enumerate() {
        let (rs, ws) = r.per_partition.map_or(("—".into(), "—".into()), |(a, b)| {
            (format!("{a:.0}"), format!("{b:.0}"))
        });
        println!(
            "  {:<44} {:<22} per {:<44} RCU {:>5.2} WCU {:>5.2} | per partition {rs:>6} RCU/s {ws:>6} WCU/s | caps at {:>7}/s ({})",
            r.key, r.shared, r.workload, r.rcu, r.wcu, fmt_rate(r.cap), r.bound
        );
        let met = r.target.map(|t| r.cap >= t);
        lines.push(
            json!({
                "id": format!("capacity.key.{i:02}"),
                "figure": format!("capacity of {} ({})", r.key, r.workload),
                "target": r.target.map_or("—".into(), |t| format!("≥ {}/s", fmt_rate(t))),
                "measured": if r.cap.is_finite() { format!("{}/s", fmt_rate(r.cap)) } else { "never".to_owned() },
                "met": met,
                "capacity": {
                    "key": r.key, "workload": r.workload, "shared": r.shared,
                    "rcu": r.rcu, "wcu": r.wcu, "rate": rate, "k": k,
                    "rcu_s": r.per_partition.map(|p| p.0), "wcu_s": r.per_partition.map(|p| p.1),
                    "cap": if r.cap.is_finite() { json!(r.cap) } else { Value::Null },
                    "bound": r.bound,
                },
            })
            .to_string(),
        );
    }
    let (sc, sk) = &c.stack_ceiling;
    let (tc, tk) = &c.tenant_ceiling;
    println!("  the stack's ceiling: {}/s, {sk}", fmt_rate(*sc));
    println!(
        "  one tenant's ceiling (K = {k:.0}): {}/s, {tk}",
        fmt_rate(*tc)
    );
    let k_text = format!(
        "balance writes per email: hold {:.0} + capture {:.0} WCU; K balance shards take K × 1,000 WCU/s, so {} holds + {} debits/s need K ≥ ({} × {:.0} + {} × {:.0}) / 1,000 = {:.0} at 100 % of every shard (the balance then caps at {} emails/s); the ledger entries ({:.0} WCU per email, increasing sort keys under WALLET#{{tenant}}) cap the tenant at {}/s whatever K unless they are written under the shards' keys too (then K ≥ {:.0})",
        c.balance_per_hold,
        c.balance_per_debit,
        fmt_rate(HOT_HOLDS),
        fmt_rate(HOT_DEBITS),
        fmt_rate(HOT_HOLDS),
        c.balance_per_hold,
        fmt_rate(HOT_DEBITS),
        c.balance_per_debit,
        c.hot_k,
        fmt_rate(cap(PARTITION_WCU, c.hot_k, c.balance_per_hold + c.balance_per_debit)),
        c.entries_per_email,
        fmt_rate(cap(PARTITION_WCU, 1.0, c.entries_per_email)),
        c.hot_k_with_entries
    );
    println!("  the hot tenant: {k_text}");
    lines.push(
        json!({"id": "capacity.ceiling.stack",
               "figure": "the design's ceiling for the whole stack: the lowest cap of a key every webhook shares (webhooks/s, each debited and delivered once)",
               "target": format!("≥ {}/s", fmt_rate(STACK_TARGET)),
               "measured": format!("{}/s: {sk}", fmt_rate(*sc)),
               "met": *sc >= STACK_TARGET})
        .to_string(),
    );
    lines.push(
        json!({"id": "capacity.ceiling.tenant",
               "figure": format!("the design's ceiling for one tenant, K = {k:.0}: the lowest cap of a key one tenant's emails share (emails/s)"),
               "target": format!("≥ {}/s", fmt_rate(TENANT_TARGET)),
               "measured": format!("{}/s: {tk}", fmt_rate(*tc)),
               "met": *tc >= TENANT_TARGET})
        .to_string(),
    );
    lines.push(
        json!({"id": "capacity.hot_tenant.k",
               "figure": "wallet shards K for a tenant of 5,000 holds + 5,000 debits a second (from the measured balance writes)",
               "target": "—",
               "measured": k_text,
               "met": null})
        .to_string(),
    );
    let out = dir.join("capacity.jsonl");
    std::fs::write(&out, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
    println!("  sources: {SOURCES}");
    println!("figures written to {}", out.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capacity: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let flows = BTreeMap::from([
            ("webhook", webhook),
            ("delivery", delivery),
            ("hold", hold),
            ("capture", capture),
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
        assert_eq!(c.hot_k, 20.0, "(5,000 × 2 + 5,000 × 2) / 1,000");
        assert_eq!(c.hot_k_with_entries, 40.0, "with the entries' 2 + 2");
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
