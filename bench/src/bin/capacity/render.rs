//! What the table prints and records: rates as the docs write them ([`fmt_rate`]), the rows and
//! ceilings on stdout, and the figures (`capacity.jsonl` lines) for `bench-tools figures`.

use crate::table::{
    Capacity, HOT_DEBITS, HOT_HOLDS, MAX_K, STACK_TARGET, TENANT_TARGET, VIEW_INSTANCES,
    VIEW_REFRESHES_PER_S,
};
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
    let h = &c.hot;
    let k_text = format!(
        "K = {:.0}: balance units per email (hold + capture, each on its own shard, measured at K = 8): writes {:.0} + {:.0} WCU, reads {:.0} + {:.0} RCU; {} holds + {} debits/s take {} WCU/s (K ≥ {:.0} at 1,000 per shard) and {} RCU/s (K ≥ {:.0} at 3,000 per shard less the views' refreshes, {:.0} instances × {:.0}/s); at K = {:.0} one tenant's keys carry {} emails/s, bound by {}",
        h.k,
        h.hold.1,
        h.capture.1,
        h.hold.0,
        h.capture.0,
        fmt_rate(HOT_HOLDS),
        fmt_rate(HOT_DEBITS),
        fmt_rate(HOT_HOLDS * h.hold.1 + HOT_DEBITS * h.capture.1),
        h.k_writes,
        fmt_rate(HOT_HOLDS * h.hold.0 + HOT_DEBITS * h.capture.0),
        h.k_reads,
        VIEW_INSTANCES,
        VIEW_REFRESHES_PER_S,
        h.k,
        fmt_rate(h.cap),
        h.bound
    );
    println!("  the hot tenant: {k_text}");
    let tenant_text = match c.tenant_k {
        Some(tk_k) => format!(
            "{}/s at K = {k:.0}: {tk}; its balance spread over K shard items (inboxctl wallet set --shards K) reaches {}/s from K = {tk_k:.0}",
            fmt_rate(*tc),
            fmt_rate(TENANT_TARGET)
        ),
        None => format!("{}/s at K = {k:.0}: {tk}; no K up to {MAX_K:.0} reaches {}/s", fmt_rate(*tc), fmt_rate(TENANT_TARGET)),
    };
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
               "figure": "the design's ceiling for one tenant: the lowest cap of a key one tenant's emails share (emails/s), at K = 1 and spread over K wallet shards",
               "target": format!("≥ {}/s", fmt_rate(TENANT_TARGET)),
               "measured": tenant_text,
               "met": c.tenant_k.is_some()})
        .to_string(),
    );
    lines.push(
        json!({"id": "capacity.hot_tenant.k",
               "figure": format!("one wallet taking {} holds + {} debits a second: the wallet shards K it needs and what its keys carry there", fmt_rate(HOT_HOLDS), fmt_rate(HOT_DEBITS)),
               "target": format!("K ≤ {MAX_K:.0}, ≥ {}/s", fmt_rate(HOT_HOLDS.min(HOT_DEBITS))),
               "measured": k_text,
               "met": h.met()})
        .to_string(),
    );
    lines
}
