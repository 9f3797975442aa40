//! What the table prints and records: rates as the docs write them ([`fmt_rate`]), the rows and
//! ceilings on stdout, and the figures (`capacity.jsonl` lines) for `bench-tools figures`.

use crate::model::{cap, PARTITION_WCU};
use crate::table::{Capacity, HOT_DEBITS, HOT_HOLDS, STACK_TARGET, TENANT_TARGET};
use serde_json::{json, Value};

/// Where the limits and the stream's documented behaviour come from.
pub const SOURCES: &str = "per-partition limits: DynamoDB Developer Guide, partition key design and throttling (KeyRangeThroughputExceeded), 3,000 RCU / 1,000 WCU per partition of a table or GSI; streams: DynamoDB Streams API Reference, GetRecords (at most 1,000 records or 1 MB per call) and LimitExceededException (more than 2 processes reading one shard at once are throttled); split for heat: Developer Guide, burst and adaptive capacity (a partition may be split down to one hot item, whose limit stays 1,000 WCU), and the AWS Database Blog, Scaling DynamoDB part 3 (items written in increasing sort-key order do not benefit)";

pub fn fmt_rate(r: f64) -> String {
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

/// Prints the table of `c` (measured at `rate` operations/s with `k` wallet shards, from the
/// flows `whats` describes) and returns its figures, one JSON line each.
pub fn figures(c: &Capacity, rate: f64, k: f64, whats: &[String]) -> Vec<String> {
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
    lines
}
