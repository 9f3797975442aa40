//! Figures for the outbox against the emulator and a local receiver (not a test: it prints
//! numbers), measured in one run:
//!
//! - deliveries per second of ONE worker (one deliver-function instance): one at a time
//!   (`deliver` in a loop), and a batch sent 10 at once (`deliver_due`, `DELIVERY_CONCURRENCY`);
//! - DynamoDB requests per delivery, counted by an SDK interceptor on the worker's client
//!   (the destinations are cached as deployed: one `Query` per cache period, not per delivery).
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
use integration_tests::outbox::{local_transport, reference, OutboxRig};
use integration_tests::receiver::Receiver;
use std::time::{Duration, Instant};

const N: usize = 200;

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
    println!("  DynamoDB requests per delivery:              {per_delivery:.2} {counts:?}");
}
