//! Figures for the processing pipeline against the emulator (not a test: it prints numbers).
//!
//! - DynamoDB requests per new webhook, end to end (ingest + processing), counted by an SDK
//!   interceptor on the real clients, for the wallet handler (effects in DynamoDB);
//! - processing throughput of a 100-record stream batch (records/s) through
//!   `Processor::handle_stream_batch` against moto (at the deployed concurrency), and of the processor
//!   against the in-memory store (its own cost, without I/O).
//!
//! Run: `make bench` (starts moto), or with `AWS_ENDPOINT_URL` pointing at a running moto:
//! `cargo run --release -p tests --bin pipeline_figures`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use inbox_core::clock::SystemClock;
use inbox_core::ingest::Ingestor;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::DynamoInbox;
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
    let store = DynamoInbox::new(counted.clone(), p.harness.table.clone());
    let wallet = Wallet::new("acme", usd(), 5, -1_000_000, None, 0).to_item();
    p.harness
        .client
        .put_item()
        .table_name(&p.harness.table)
        .set_item(Some(wallet))
        .send()
        .await
        .expect("wallet");
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
        DynamoInbox::new(counted, p.harness.table.clone()),
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
    store.put_item(Wallet::new("acme", usd(), 5, -1_000_000, None, 0).to_item());
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

#[tokio::main]
async fn main() {
    // Against the emulator at the deployed concurrency (10 records at once): it serializes
    // DynamoDB requests (scripts/moto_server.py), so this measures moto's one request at a time.
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
    println!("  100-record batch against moto, 10 at a time:    {concurrent:>8.0} records/s");
    println!("  in-memory store (processor cost without I/O):  {memory:>8.0} records/s");
}
