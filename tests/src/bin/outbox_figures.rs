//! Figures for the outbox against the emulator and a local receiver (not a test: it prints
//! numbers), measured in one run:
//!
//! - deliveries per second of ONE worker (one deliver-function instance): one at a time
//!   (`deliver` in a loop), and a batch sent 10 at once (`deliver_due`, `DELIVERY_CONCURRENCY`);
//! - DynamoDB requests per delivery, counted by an SDK interceptor on the worker's client
//!   (the destinations are cached as deployed: one `Query` per cache period, not per delivery);
//! - a happy-path delivery's cost (a 200 at the first attempt), from a stream batch and from a
//!   delivery-queue batch: DynamoDB requests and write units per delivery
//!   (`integration_tests::outbox::cost`), written as figures with their targets (`≤ 3` each) to
//!   `target/bench-figures/outbox.jsonl` and the counts to `outbox_units.json` (for `cost`).
//!
//! The receiver answers 200 at once; the destination's rate limit is set far above what is
//! measured. The table is DynamoDB Local's, one process on the bench machine, so the figures
//! bound the worker's own cost from above. The processed → delivered latency on `make dev` is `scripts/outbox_latency.sh`.
//!
//! Run: `make bench` (starts the emulators), or with `AWS_ENDPOINT_URL_DYNAMODB` and
//! `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` pointing at a running DynamoDB Local, `AWS_ENDPOINT_URL` at moto:
//! `cargo run --release -p integration-tests --bin outbox_figures`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use inbox_core::clock::SystemClock;
use inbox_core::outbox::worker::{DeliverConfig, DeliveryOutcome};
use integration_tests::outbox::cost::{self, DeliveryCost, Origin, WriteLog};
use integration_tests::outbox::{local_transport, reference, OutboxRig};
use integration_tests::receiver::Receiver;
use serde_json::json;
use std::time::{Duration, Instant};

const N: usize = 200;
/// The happy path's budget per delivery: DynamoDB requests, and write units.
const TARGET_REQUESTS: f64 = 3.0;
const TARGET_UNITS: f64 = 3.0;
/// Happy-path deliveries measured from each origin, in batches of the deployed size (both event
/// source mappings' `BatchSize`, `template.yaml`), 10 at once.
const HAPPY: usize = 100;
const BATCH: usize = 10;

/// One figure as the JSON line `bench-tools figures` reads.
fn figure(id: &str, name: &str, target: &str, measured: String, met: Option<bool>) -> String {
    json!({"id": id, "figure": name, "target": target, "measured": measured, "met": met})
        .to_string()
}

fn detail(c: &DeliveryCost) -> String {
    c.requests
        .iter()
        .map(|(op, n)| format!("{op} {:.2}", *n as f64 / c.deliveries as f64))
        .collect::<Vec<_>>()
        .join(" + ")
}

#[tokio::main]
async fn main() {
    let rig = OutboxRig::new().await;
    let receiver = Receiver::always(200);
    rig.destination("bench", &receiver.url, &["*"], |d| {
        d.rate_per_sec = 10_000.0;
        d.burst = 10_000;
        d.max_in_flight = 100;
    })
    .await;
    let config = DeliverConfig {
        concurrency: 10,
        ..DeliverConfig::default()
    };
    let store = inbox_core::store::dynamo::DynamoTable::new(
        rig.pipeline.counted_dynamodb().await,
        rig.pipeline.harness.table.clone(),
    );
    let worker = inbox_core::outbox::worker::Deliverer::new(
        store,
        local_transport(),
        rig.queues(),
        SystemClock,
        config,
        Duration::from_secs(5),
    )
    .with_metrics(std::sync::Arc::new(
        inbox_core::metrics::RecordingSink::default(),
    ));

    let one = rig.pending_deliveries("bench", "evt_seq", N).await;
    let (client, table) = (&rig.pipeline.harness.client, &rig.pipeline.harness.table);
    let before = integration_tests::pipeline::keys::snapshot(client, table).await;
    rig.pipeline.counter.reset();
    rig.pipeline.keys.reset();
    let started = Instant::now();
    for id in &one {
        assert_eq!(
            worker.deliver(&reference("bench", id)).await.unwrap(),
            DeliveryOutcome::Delivered
        );
    }
    let sequential = N as f64 / started.elapsed().as_secs_f64();
    let counts = rig.pipeline.counter.counts();
    let per_delivery = counts.values().sum::<usize>() as f64 / N as f64;
    let after = integration_tests::pipeline::keys::snapshot(client, table).await;
    let by_key = rig.pipeline.keys.attribute(&before, &after);
    integration_tests::pipeline::keys::record(
        "delivery",
        "one delivery, one at a time",
        N,
        &by_key,
    );

    rig.pending_deliveries("bench", "evt_par", N).await;
    let started = Instant::now();
    let mut delivered = 0;
    while delivered < N {
        let outcomes = worker.deliver_due(N).await.unwrap();
        delivered += outcomes
            .iter()
            .filter(|o| **o == DeliveryOutcome::Delivered)
            .count();
    }
    let batched = N as f64 / started.elapsed().as_secs_f64();
    assert_eq!(receiver.count(), 2 * N);

    println!(
        "outbox figures ({N} deliveries each, DynamoDB Local and moto on 127.0.0.1, local receiver answering 200):"
    );
    println!("  deliveries/s, one worker, one at a time:     {sequential:.0}");
    println!("  deliveries/s, one worker, 10 at once:        {batched:.0}");
    println!("  DynamoDB requests per delivery (by reference): {per_delivery:.2} {counts:?}");

    let log = WriteLog::default();
    let measured = cost::measured_deliverer(&rig, local_transport(), config, &log).await;
    let mut lines = Vec::new();
    let mut counts = serde_json::Map::new();
    for (origin, label) in [(Origin::Stream, "stream"), (Origin::Queue, "queue")] {
        let c = cost::happy_path(&rig, &measured, &log, "bench", origin, HAPPY, BATCH).await;
        let (requests, units) = (c.requests_per_delivery(), c.units_per_delivery());
        println!(
            "  happy path from the {label:<6}: {requests:.2} requests ({}), {units:.2} write units per delivery",
            detail(&c)
        );
        lines.push(figure(
            &format!("requests.delivery.{label}"),
            &format!(
                "DynamoDB requests per delivery, happy path, from the {label} (batches of {BATCH})"
            ),
            &format!("≤ {TARGET_REQUESTS}"),
            format!("{requests:.2} = {}", detail(&c)),
            Some(requests <= TARGET_REQUESTS),
        ));
        lines.push(figure(
            &format!("wru.delivery.{label}"),
            &format!(
                "DynamoDB write units per delivery, happy path, from the {label} (item-size rules)"
            ),
            &format!("≤ {TARGET_UNITS}"),
            format!("{units:.2}"),
            Some(units <= TARGET_UNITS),
        ));
        counts.insert(
            label.to_owned(),
            json!({"requests": requests, "wru": units, "reads": c.requests.get("GetItem").copied().unwrap_or(0) as f64 / c.deliveries as f64 + c.requests.get("BatchGetItem").copied().unwrap_or(0) as f64 / c.deliveries as f64, "by_operation": c.requests}),
        );
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-figures");
    std::fs::create_dir_all(&dir).expect("figures dir");
    std::fs::write(dir.join("outbox.jsonl"), lines.join("\n") + "\n").expect("write outbox.jsonl");
    std::fs::write(
        dir.join("outbox_units.json"),
        serde_json::Value::Object(counts).to_string(),
    )
    .expect("write outbox_units.json");
    println!("figures written to {}", dir.display());
}
