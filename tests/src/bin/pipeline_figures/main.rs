//! Figures for the processing pipeline against the emulator (not a test: it prints numbers).
//!
//! - DynamoDB requests per new webhook, end to end (ingest + processing), counted by an SDK
//!   interceptor on the real clients, for the wallet handler (effects in DynamoDB);
//! - processing throughput of a 100-record stream batch (records/s) through
//!   `Processor::handle_stream_batch` against DynamoDB Local (at the deployed concurrency), and of the processor
//!   against the in-memory store (its own cost, without I/O).
//!
//! - write units per webhook (2 KB and 64 KB events), ingest alone and end to end, by DynamoDB's
//!   published item-size rules from the items as stored (`units.rs`).
//!
//! - read and write units by partition-key pattern (`integration_tests::pipeline::keys`) of the
//!   2 KB wallet webhook, of a hold the wallet API places and of the webhook capturing it
//!   (`holds.rs`: on a wallet of one item, `hold` / `capture`, and on one of 8 shards with each
//!   function's view warm, `hold-k8` / `capture-k8`), for `bench-tools capacity`.
//!
//! It prints them and writes them for `bench-tools figures`, `cost` and `capacity`:
//! `target/bench-figures/units.json` (the counts), `keys-*.json` (units by key) and
//! `pipeline.jsonl` (the figures).
//!
//! Run: `make bench` (starts the emulators), or with `AWS_ENDPOINT_URL_DYNAMODB` and
//! `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` pointing at a running DynamoDB Local, `AWS_ENDPOINT_URL` at moto:
//! `cargo run --release -p integration-tests --bin pipeline_figures`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

mod holds;
mod units;

use inbox_core::clock::SystemClock;
use inbox_core::ingest::Ingestor;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::Pipeline;
use serde_json::json;
use std::time::Instant;
use wallet_ledger::{Currency, Wallet, WalletSources};

const BATCH: usize = 100;

fn usd() -> Currency {
    Currency::parse("usd").expect("a currency")
}

async fn run(concurrency: usize) -> (f64, std::collections::BTreeMap<String, usize>) {
    let p = Pipeline::new().await;
    let counted = p.counted_dynamodb().await;
    let store = DynamoTable::new(counted.clone(), p.harness.table.clone());
    units::put_wallet(&p).await;
    let ingest = Ingestor::new(
        integration_tests::local_sources(),
        store.clone(),
        SystemClock,
        262_144,
        30,
    );
    for i in 0..BATCH {
        let body = json!({"type": "message.accepted", "data": {"message_id": format!("m{i}"), "tenant": "acme"}}).to_string();
        let headers = p
            .harness
            .sign("mailer", body.as_bytes(), &format!("msg_{i}"));
        let reply = integration_tests::Reply::from(
            ingest_function::respond(
                &ingest,
                &integration_tests::api_event("POST", "mailer", &headers, Some(&body), false),
            )
            .await,
        );
        assert_eq!(reply.code(), "accepted");
    }
    let batch = p.read_stream().await;
    assert_eq!(batch.records.len(), BATCH);
    let registry = process_function::registry(
        DynamoTable::new(counted, p.harness.table.clone()),
        WalletSources::default(),
    );
    let retry = SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone());
    let quarantine = SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone());
    let config = ProcessorConfig {
        concurrency,
        ..ProcessorConfig::default()
    };
    let processor = Processor::new(store, retry, quarantine, SystemClock, registry, config);
    let started = Instant::now();
    let (response, summary) = processor.handle_stream_batch(batch).await;
    let secs = started.elapsed().as_secs_f64();
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        summary.outcomes.get("processed"),
        Some(&BATCH),
        "{:?}",
        summary.outcomes
    );
    (BATCH as f64 / secs, p.counter.counts())
}

async fn in_memory() -> f64 {
    use inbox_core::store::memory::MemoryStore;
    use inbox_core::store::{Inbox, NewMessage};
    use std::sync::Arc;
    let store = Arc::new(MemoryStore::new());
    store.put_item(
        Wallet::new(
            wallet_ledger::TenantId::parse("acme").unwrap(),
            usd().amount(5),
            usd().amount(-1_000_000),
            None,
            0,
        )
        .to_item(),
    );
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = Processor::new(
        store.clone(),
        Arc::new(inbox_core::queue::memory::MemoryRetryQueue::new()),
        Arc::new(inbox_core::queue::memory::MemoryQuarantine::new()),
        SystemClock,
        registry,
        ProcessorConfig::default(),
    );
    let mut messages = Vec::new();
    for round in 0..20 {
        for i in 0..BATCH {
            let body = json!({"type": "message.accepted", "data": {"message_id": format!("m{round}_{i}"), "tenant": "acme"}}).to_string().into_bytes();
            let key = inbox_core::domain::MessageKey::new(
                inbox_core::domain::SourceName::parse("mailer").expect("source"),
                inbox_core::domain::EventId::parse(&format!("msg_{round}_{i}")).expect("id"),
            );
            let msg = NewMessage {
                key: key.clone(),
                event_type: Some(
                    inbox_core::domain::EventType::parse("message.accepted").expect("type"),
                ),
                received_at_ms: 0,
                body_digest: Some(inbox_core::domain::BodyDigest::of(&body)),
                body,
                headers: Vec::new(),
                provider_id: None,
                unidentified: None,
                batch: None,
            };
            store.put_if_absent(&msg).await.expect("put");
            messages.push(store.message(&key).expect("stored"));
        }
    }
    let started = Instant::now();
    for m in messages {
        processor.process(m).await.expect("processed");
    }
    (20 * BATCH) as f64 / started.elapsed().as_secs_f64()
}

/// One figure as the JSON line `bench-tools figures` reads.
fn figure(id: &str, name: &str, target: &str, measured: String, met: Option<bool>) -> String {
    json!({"id": id, "figure": name, "target": target, "measured": measured, "met": met})
        .to_string()
}

#[tokio::main]
async fn main() {
    // Against DynamoDB Local at the deployed concurrency (10 records at once): one JVM over
    // SQLite on the bench machine, far from DynamoDB's parallelism.
    let (concurrent, counts) = run(10).await;
    let memory = in_memory().await;
    let writes: usize = [
        "PutItem",
        "UpdateItem",
        "TransactWriteItems",
        "DeleteItem",
        "BatchWriteItem",
    ]
    .iter()
    .filter_map(|op| counts.get(*op))
    .sum();
    println!("pipeline figures ({BATCH} new webhooks, wallet handler: one debit each)");
    println!("  DynamoDB requests, ingest + processing: {counts:?}");
    println!(
        "  write requests per new webhook: {:.2}",
        writes as f64 / BATCH as f64
    );
    println!(
        "  read requests per new webhook:  {:.2}",
        counts.get("GetItem").copied().unwrap_or(0) as f64 / BATCH as f64
    );
    println!("  100-record batch, DynamoDB Local, 10 at a time: {concurrent:>8.0} records/s");
    println!("  in-memory store (processor cost without I/O):  {memory:>8.0} records/s");

    let mut lines = vec![
        figure(
            "throughput.emulator",
            "one process invocation: a 100-record stream batch, wallet handler, 10 at a time, against DynamoDB Local",
            "—",
            format!("{concurrent:.0} records/s (bound: DynamoDB Local, one process on the bench machine)"),
            None,
        ),
        figure(
            "throughput.memory",
            "the processor against the in-memory store (its own cost, wallet handler)",
            "—",
            format!("{memory:.0} records/s (bound: the handler's item reads and building the transaction)"),
            None,
        ),
        figure(
            "requests.per_webhook",
            "DynamoDB write requests per new webhook, ingest + processing",
            "≤ 2",
            format!("{:.2}", writes as f64 / BATCH as f64),
            Some(writes <= 2 * BATCH),
        ),
    ];
    let mut all = Vec::new();
    for (label, size, ingest_target, e2e_target) in
        [("2KB", 2 * 1024, 2, Some(8)), ("64KB", 64 * 1024, 16, None)]
    {
        let u = units::measure(size).await;
        println!(
            "write units, {label} event ({} bytes, message item {} bytes{}): ingest {} (+{} index), processing {} (+{} index), end to end {}; reads {}; S3 PUT {} GET {}",
            u.body_bytes,
            u.message_item_bytes,
            if u.body_in_s3 { ", body in S3" } else { ", body inline" },
            u.ingest_wru,
            u.ingest_index_wru,
            u.process_wru,
            u.process_index_wru,
            u.end_to_end_wru(),
            u.process_rru,
            u.s3_puts,
            u.s3_gets
        );
        for (item, before, after, wru) in &u.transaction {
            println!("    transaction: {item:<8} {before:>6} -> {after:>6} bytes: {wru} WRU");
        }
        lines.push(figure(
            &format!("wru.ingest.{label}"),
            &format!("DynamoDB write units, ingest alone, {label} event (item-size rules)"),
            &format!("≤ {ingest_target}"),
            format!(
                "{} (message item {} B{}; +{} for the open index, +{} for the events index)",
                u.ingest_wru,
                u.message_item_bytes,
                if u.body_in_s3 {
                    ", body in S3: +1 S3 PUT"
                } else {
                    ", zstd body"
                },
                u.ingest_index_wru,
                u.ingest_events_index_wru
            ),
            Some(u.ingest_wru <= ingest_target),
        ));
        let detail = u
            .transaction
            .iter()
            .map(|(item, _, _, w)| format!("{item} {w}"))
            .collect::<Vec<_>>()
            .join(" + ");
        lines.push(figure(
            &format!("wru.e2e.{label}"),
            &format!("DynamoDB write units, end to end with the wallet handler, {label} event"),
            &e2e_target.map_or("—".to_owned(), |t| format!("≤ {t}")),
            format!(
                "{} = ingest {} + transaction {} ({detail}); +{} for the open index, +{} for the events index",
                u.end_to_end_wru(),
                u.ingest_wru,
                u.process_wru,
                u.ingest_index_wru + u.process_index_wru,
                u.ingest_events_index_wru
            ),
            e2e_target.map(|t| u.end_to_end_wru() <= t),
        ));
        if label == "2KB" {
            integration_tests::pipeline::keys::record(
                "webhook",
                "one 2 KB wallet webhook (an email's debit, no hold), ingest + processing",
                1,
                &u.keys,
            );
        }
        all.push((label, u));
    }
    let (hold, capture) = holds::hold_and_capture().await;
    integration_tests::pipeline::keys::record(
        "hold",
        "one hold placed by the wallet API (Holds::place)",
        1,
        &hold,
    );
    integration_tests::pipeline::keys::record(
        "capture",
        "the 2 KB delivery webhook capturing a hold, ingest + processing",
        1,
        &capture,
    );
    let (hold_k8, capture_k8) = holds::hold_and_capture_sharded().await;
    integration_tests::pipeline::keys::record(
        "hold-k8",
        "one hold placed by the wallet API on a wallet of 8 shards, the API's view warm",
        1,
        &hold_k8,
    );
    integration_tests::pipeline::keys::record(
        "capture-k8",
        "the 2 KB delivery webhook capturing a hold on a wallet of 8 shards, the processor's view warm, ingest + processing",
        1,
        &capture_k8,
    );
    for (flow, units) in [
        ("webhook", &all[0].1.keys),
        ("hold", &hold),
        ("capture", &capture),
        ("hold-k8", &hold_k8),
        ("capture-k8", &capture_k8),
    ] {
        println!("units by partition key, {flow}:");
        for (key, u) in units {
            println!(
                "    {key:<40} RCU {:>4.1} WCU {:>3} {:?}",
                u.read_half_units as f64 / 2.0,
                u.write_units,
                u.writes_by_sort_key
            );
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-figures");
    std::fs::create_dir_all(&dir).expect("figures dir");
    let counts: serde_json::Map<String, serde_json::Value> = all
        .iter()
        .map(|(label, u)| ((*label).to_owned(), serde_json::to_value(u).expect("json")))
        .collect();
    std::fs::write(
        dir.join("units.json"),
        serde_json::Value::Object(counts).to_string(),
    )
    .expect("write units.json");
    std::fs::write(dir.join("pipeline.jsonl"), lines.join("\n") + "\n")
        .expect("write pipeline.jsonl");
    println!("figures written to {}", dir.display());
}
