//! The emulators themselves fail mid-load: paused (SIGSTOP, then SIGCONT) and killed (SIGKILL) and
//! restarted (DynamoDB Local on its `-dbPath`, moto from its write-ahead log), while providers deliver webhooks (re-sending until they get
//! a 2xx, as providers do) and the pipeline processes them. Afterwards every acknowledged event
//! is stored and processed with its effect applied exactly once.

use super::missing_or_wrong;
use inbox_core::clock::{Clock, ManualClock, SystemClock};
use integration_tests::faults::report::record;
use integration_tests::faults::sources::{deliver, retry_source, stream_source, SourceStats};
use integration_tests::faults::OwnEmulator;
use integration_tests::pipeline::{CounterHandler, Pipeline};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

const PROVIDERS: usize = 6;
const PER_PROVIDER: usize = 10;
/// Long enough for the ingest path's 5 s operation timeout: deliveries meet 503s.
const PAUSE: Duration = Duration::from_secs(6);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_then_killed_and_restarted_mid_load_loses_and_doubles_nothing() {
    let mut emulator = OwnEmulator::start();
    let p = Pipeline::on(&emulator.endpoints()).await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let processor = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    let total = PROVIDERS * PER_PROVIDER;
    let acknowledged = Mutex::new(Vec::new());
    let refused = Mutex::new(BTreeMap::<i64, usize>::new());
    let acked = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (stream, retry) = (SourceStats::default(), SourceStats::default());
    let deadline = Instant::now() + Duration::from_secs(150);

    let providers = async {
        let sends = (0..PROVIDERS).map(|w| {
            let (p, acknowledged, refused, acked) = (&p, &acknowledged, &refused, &acked);
            async move {
                for i in 0..PER_PROVIDER {
                    let id = format!("evt_p{w}_{i}");
                    let d = deliver(p, &id, deadline).await;
                    for (status, n) in d.refused {
                        *refused.lock().unwrap().entry(status).or_default() += n;
                    }
                    acknowledged.lock().unwrap().push((id, d.code));
                    acked.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        futures_util::future::join_all(sends).await;
    };
    let wait_for = |n: usize| {
        let acked = &acked;
        async move {
            while acked.load(Ordering::SeqCst) < n {
                assert!(Instant::now() < deadline, "load stalled at {n}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let faults = async {
        wait_for(total / 4).await;
        emulator.pause();
        tokio::time::sleep(PAUSE).await;
        emulator.resume();
        wait_for(total / 2).await;
        tokio::task::block_in_place(|| emulator.restart());
    };
    let load = async {
        tokio::join!(providers, faults);
        stop.store(true, Ordering::SeqCst);
    };
    tokio::join!(
        load,
        stream_source(&p, &processor, &stop, &stream),
        retry_source(&p, &processor, &stop, &retry)
    );

    // The reaper, well after every deadline: whatever the stream did not finish, it would find.
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    clock.advance_millis(inbox_core::store::schema::PENDING_GRACE_MS + 60_000);
    let reaped = p.reaper(clock.clone(), 1000).await.run().await.unwrap();
    let late = p
        .processor(Pipeline::registry(handler.clone()), clock.clone())
        .await;
    while p.drain_retry_once(&late).await > 0 {}

    let acknowledged = acknowledged.into_inner().unwrap();
    let ids: Vec<String> = acknowledged.iter().map(|(id, _)| id.clone()).collect();
    let mut codes = BTreeMap::<String, usize>::new();
    for (_, code) in &acknowledged {
        *codes.entry(code.clone()).or_default() += 1;
    }
    let (missing, wrong) = missing_or_wrong(&p, &ids).await;
    let refused = refused.into_inner().unwrap();
    record(
        "2-emulator",
        "emulator paused (SIGSTOP/SIGCONT) and killed (SIGKILL) and restarted, mid-load",
        format!(
            "{total} webhooks from {PROVIDERS} providers re-sending until 2xx; paused {} s after \
             {} acknowledgements, killed and restarted (DynamoDB Local on its -dbPath, moto replaying its write-ahead log) after {}; the \
             pipeline running throughout",
            PAUSE.as_secs(),
            total / 4,
            total / 2
        ),
        format!(
            "2xx {} ({codes:?}) after refusals {refused:?}; missing {missing}; effects not exactly \
             once {wrong}; stream reads failed {} and batches re-delivered {}; due for the reaper \
             afterwards {}",
            ids.len(),
            stream.read_errors.load(Ordering::SeqCst),
            stream.redeliveries.load(Ordering::SeqCst),
            reaped.due
        ),
    );
    assert_eq!(ids.len(), total);
    assert_eq!(emulator.starts, 2, "it was restarted");
    assert!(
        !refused.is_empty(),
        "the pause refused some deliveries (503)"
    );
    assert_eq!(missing, 0, "acknowledged events missing");
    assert_eq!(wrong, 0, "effects not exactly once");
}
