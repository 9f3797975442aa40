//! Concurrent ingest while processing transactions conflict and roll back loses nothing: every
//! acknowledged event is stored, its stream record delivered and its effect applied once. Against
//! DynamoDB Local, whose transactions are serializable as DynamoDB's are. (Plain moto failed it:
//! a cancelled `TransactWriteItems` restored a copy of the table taken when it started, stream
//! included, erasing what other requests wrote meanwhile.)

use super::missing_or_wrong;
use inbox_core::clock::SystemClock;
use integration_tests::faults::report::record;
use integration_tests::faults::sources::{deliver, stream_source, SourceStats};
use integration_tests::faults::OwnEmulator;
use integration_tests::pipeline::{CounterHandler, Pipeline};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

const WRITERS: usize = 8;
const PER_WRITER: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ingest_while_processing_transactions_conflict_loses_nothing() {
    let emulator = OwnEmulator::start();
    let p = Pipeline::on(&emulator.endpoints()).await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let consumer = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    let racer = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    let acknowledged = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let drained = AtomicBool::new(false);
    let stats = SourceStats::default();
    let cancelled = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(120);

    let writers = async {
        let sends = (0..WRITERS).map(|w| {
            let acknowledged = &acknowledged;
            let p = &p;
            async move {
                for i in 0..PER_WRITER {
                    let id = format!("evt_w{w}_{i}");
                    let d = deliver(p, &id, deadline).await;
                    acknowledged.lock().unwrap().push((id, d.code));
                }
            }
        });
        futures_util::future::join_all(sends).await;
        stop.store(true, Ordering::SeqCst);
    };
    // A second consumer gets every batch again after the first handled it (a duplicate stream
    // delivery): each of its commits is a transaction cancelled by the version check, while the
    // providers keep writing. It races until the stream is drained and every batch was raced
    // (one read of the stream may last the whole ingest: it pages until it is caught up).
    let racing = async {
        let mut raced = 0;
        loop {
            let done = drained.load(Ordering::SeqCst);
            let stale = {
                let records = stats.records.lock().unwrap();
                let stale = records[raced..].to_vec();
                raced = records.len();
                stale
            };
            if stale.is_empty() {
                if done {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            let mut batch = aws_lambda_events::event::dynamodb::Event::default();
            batch.records = stale;
            let (_, summary) = racer.handle_stream_batch(batch).await;
            let lost = summary
                .outcomes
                .get("skipped_conflict")
                .copied()
                .unwrap_or(0);
            cancelled.fetch_add(lost, Ordering::SeqCst);
        }
    };
    let consuming = async {
        stream_source(&p, &consumer, &stop, &stats).await;
        drained.store(true, Ordering::SeqCst);
    };
    tokio::join!(writers, racing, consuming);

    let acknowledged = acknowledged.into_inner().unwrap();
    let ids: Vec<String> = acknowledged.iter().map(|(id, _)| id.clone()).collect();
    let delivered = stats.delivered();
    let skipped = ids.iter().filter(|id| !delivered.contains(*id)).count();
    let (missing, wrong) = missing_or_wrong(&p, &ids).await;
    record(
        "1-serializable",
        "processing transactions cancelled during concurrent ingest",
        format!(
            "{} webhooks from {WRITERS} concurrent providers; the stream processed at concurrency \
             10 while a racer re-processed stale images: {} cancelled transactions",
            ids.len(),
            cancelled.load(Ordering::SeqCst)
        ),
        format!(
            "acknowledged {} / missing {missing}; stream records skipped {skipped}; effects not \
             exactly once {wrong}",
            ids.len()
        ),
    );
    assert!(
        cancelled.load(Ordering::SeqCst) > 0,
        "the racer caused no cancelled transaction"
    );
    assert_eq!(missing, 0, "acknowledged events missing from the table");
    assert_eq!(
        skipped, 0,
        "acknowledged events whose stream record was never delivered"
    );
    assert_eq!(
        wrong, 0,
        "acknowledged events not processed with their effect exactly once"
    );
}
