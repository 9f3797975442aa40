//! A duplicate storm: 1,000 signed deliveries of 100 event ids from 16 concurrent senders, while
//! the pipeline runs at the deployed concurrency (stream batches 10 records at a time, the retry
//! queue beside it): 100 messages, 100 effects, 900 duplicates journaled.

use super::missing_or_wrong;
use inbox_core::clock::SystemClock;
use integration_tests::faults::report::record;
use integration_tests::faults::sources::{deliver, retry_source, stream_source, SourceStats};
use integration_tests::faults::OwnEmulator;
use integration_tests::pipeline::{CounterHandler, Pipeline};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

const IDS: usize = 100;
const DELIVERIES: usize = 1_000;
const SENDERS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_deliveries_of_a_hundred_ids_make_a_hundred_messages_and_effects() {
    // An emulator of its own: the storm's load would slow every other test's requests past
    // their timeouts.
    let emulator = OwnEmulator::start();
    let mut p = Pipeline::on(&emulator.endpoints()).await;
    // 16 senders at once queue in the emulator (one JVM over SQLite on a busy 2-core machine)
    // past the hot path's attempt timeout and the bookkeeping's 2 s budget; DynamoDB serves them
    // in parallel. Given the time, every answer is the first write's and every repeat journaled.
    let patient = aws_sdk_dynamodb::Client::new(
        &integration_tests::sdk_config_for(&emulator.endpoints()).await,
    );
    p.harness.service = inbox_core::ingest::Ingestor::new(
        p.harness.sources.clone(),
        inbox_core::store::dynamo::DynamoTable::new(patient, p.harness.table.clone()),
        SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    )
    .with_journal_budget(Duration::from_secs(120));
    let handler = CounterHandler::new(&p.harness.table, false);
    let processor = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    let codes = Mutex::new(BTreeMap::<String, usize>::new());
    let stop = AtomicBool::new(false);
    let (stream, retry) = (SourceStats::default(), SourceStats::default());
    let deadline = Instant::now() + Duration::from_secs(180);
    let started = Instant::now();

    let senders = async {
        let sends = (0..SENDERS).map(|s| {
            let (p, codes) = (&p, &codes);
            async move {
                // Sender s delivers every SENDERS-th delivery; ids interleave across senders.
                for n in (s..DELIVERIES).step_by(SENDERS) {
                    let id = format!("evt_storm_{}", (n * 37) % IDS);
                    let d = deliver(p, &id, deadline).await;
                    *codes.lock().unwrap().entry(d.code).or_default() += 1;
                }
            }
        });
        futures_util::future::join_all(sends).await;
        stop.store(true, Ordering::SeqCst);
    };
    tokio::join!(
        senders,
        stream_source(&p, &processor, &stop, &stream),
        retry_source(&p, &processor, &stop, &retry)
    );
    // Anything retried after the sources stopped (a handler's effect conflict) is settled here.
    let ids: Vec<String> = (0..IDS).map(|i| format!("evt_storm_{i}")).collect();
    let settle = Instant::now() + Duration::from_secs(30);
    while missing_or_wrong(&p, &ids).await != (0, 0) && Instant::now() < settle {
        p.drain_retry_once(&processor).await;
    }
    let elapsed = started.elapsed();

    let codes = codes.into_inner().unwrap();
    let messages = p.harness.items_of_kind("message").await.len();
    let journal = p.harness.items_of_kind("delivery").await.len();
    let (missing, wrong) = missing_or_wrong(&p, &ids).await;
    let total_effects: i64 = {
        let mut total = 0;
        for id in &ids {
            total += p.effect_count(id).await;
        }
        total
    };
    record(
        "3-storm",
        "duplicate storm",
        format!(
            "{DELIVERIES} signed deliveries of {IDS} ids from {SENDERS} concurrent senders, the \
             stream processed at concurrency 10 meanwhile ({} invocations, {:.0} s)",
            stream.invocations.load(Ordering::SeqCst),
            elapsed.as_secs_f64()
        ),
        format!(
            "answers {codes:?}; messages {messages}; effects {total_effects} (missing {missing}, \
             not exactly once {wrong}); journaled duplicates {journal}"
        ),
    );
    assert_eq!(codes.get("accepted"), Some(&IDS), "{codes:?}");
    assert_eq!(
        codes.get("duplicate"),
        Some(&(DELIVERIES - IDS)),
        "{codes:?}"
    );
    assert_eq!(messages, IDS);
    assert_eq!((missing, wrong), (0, 0));
    assert_eq!(total_effects, IDS as i64);
    assert_eq!(journal, DELIVERIES - IDS);
}
