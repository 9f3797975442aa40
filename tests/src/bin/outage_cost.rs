//! What a destination's outage costs per pending delivery per hour (not a test: it prints
//! numbers): the deliver worker on the in-memory store and queues with a simulated clock, driven
//! as the Lambda drives it (`integration_tests::outbox::outage`), for a destination whose circuit
//! is open and for a paused one (both park their backlog), and how the backlog drains once the
//! destination is back.
//!
//! Run: `cargo run -p integration-tests --bin outage_cost [deliveries] [hours]` (default 100
//! deliveries, 4 hours; no emulator needed; the counts do not depend on the build).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use integration_tests::outbox::outage::{
    flaky, simulate, Counts, Outage, OutageCost, BATCH, FLAKY_LIMIT_S, RATE_WINDOW_S,
    RECOVERY_LIMIT_S,
};

fn row(c: &OutageCost, label: &str, k: &Counts, hours: u32) -> String {
    let per = |x: usize| c.per_delivery_hour(x, hours);
    let units = usize::try_from(k.write_units()).unwrap_or(usize::MAX);
    format!(
        "| {label} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} |",
        per(k.sent),
        per(k.received),
        per(k.invocations()),
        per(k.sqs_requests),
        per(k.writes),
        per(units),
        per(k.posts),
    )
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(100, |a| a.parse().expect("deliveries"));
    let hours: u32 = args.next().map_or(4, |a| a.parse().expect("hours"));
    println!(
        "a destination's outage: {n} pending deliveries, {hours} simulated hours, batches of {BATCH}; per pending delivery per hour:"
    );
    println!("| outage, hour | queue messages sent | received | invocations | SQS requests | DynamoDB write requests | write units | POSTs |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut notes = Vec::new();
    for outage in [Outage::OpenCircuit, Outage::Paused] {
        let c = simulate(outage, n, hours).await;
        for (i, h) in c.hourly.iter().enumerate() {
            println!(
                "{}",
                row(&c, &format!("{}, hour {}", outage.as_str(), i + 1), h, 1)
            );
        }
        println!(
            "{}",
            row(
                &c,
                &format!("**{}, all {hours} h**", outage.as_str()),
                &c.total,
                hours
            )
        );
        notes.push(format!(
            "{}: messages by delay (< 10 s, 10 s - 1 min, longer) {:?}; outcomes {:?}; sweeps {} (one a minute, not charged); largest delivery item {} B; circuit open at the end: {}",
            outage.as_str(),
            c.total.sent_by_delay,
            c.outcomes,
            c.total.sweeps,
            c.largest_item,
            c.open_at_end
        ));
        let r = c.recovery;
        notes.push(format!(
            "{}, back: first delivered after {} s, {}/{n} delivered {}; at most {} POSTs in {RATE_WINDOW_S} s; {:.2} messages and {:.2} writes per delivery",
            outage.as_str(),
            r.first_after_s,
            r.delivered,
            r.drained_after_s.map_or_else(
                || format!("(not all within {RECOVERY_LIMIT_S} s)"),
                |s| format!("after {s} s")
            ),
            r.most_in_window,
            r.sent as f64 / n as f64,
            r.writes as f64 / n as f64,
        ));
    }
    for n in notes {
        println!("{n}");
    }
    let f = flaky(12).await;
    println!(
        "flaky receiver (12 events, each answered 500, 500, 200; schedule 0,2s,2s,2s,2s): {}/{} delivered {}; {} POSTs, at most {} per webhook-id, {} webhook-ids; {} queue messages, {} invocations",
        f.delivered,
        f.events,
        f.completed_after_s.map_or_else(
            || format!("(not all within {FLAKY_LIMIT_S} s)"),
            |s| format!("after {s} s")
        ),
        f.posts,
        f.most_attempts,
        f.webhook_ids,
        f.sent,
        f.invocations
    );
}
