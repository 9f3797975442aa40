//! A short store outage under load: how late an effect is once the store is back. Sixty debits,
//! each failing its first attempt (a retry is scheduled), whose handler reads the store; the
//! emulator is paused (SIGSTOP, DynamoDB Local and moto both) the moment the first batch of
//! retries has been received and before it is handled, so that batch meets the outage: its reads
//! time out (the functions' fail-fast client) and its messages are reported failed. The retry
//! queue has the deployed visibility timeout (template.yaml's `RetryVisibilitySeconds`); the
//! lateness of the last effect after the store's return is measured by a deadline poll.

use inbox_core::clock::SystemClock;
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome};
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use integration_tests::faults::report::record;
use integration_tests::faults::sources::{
    deliver_with, retry_source_with, stream_source, SourceStats,
};
use integration_tests::faults::OwnEmulator;
use integration_tests::pipeline::{CounterHandler, Pipeline, TestProcessor};
use integration_tests::{root, sdk_config_for};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

const EVENTS: usize = 60;
const PAUSE: Duration = Duration::from_secs(8);
/// "About a minute": the most an effect may be late once the store is back.
const BOUND: Duration = Duration::from_secs(60);

/// The deployed retry queue's visibility timeout, seconds (template.yaml's mapping).
fn deployed_retry_visibility() -> String {
    let template = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    let line = template
        .lines()
        .find_map(|l| l.trim().strip_prefix("RetryVisibilitySeconds:"))
        .expect("template.yaml names RetryVisibilitySeconds");
    line.trim().to_owned()
}

/// A debit: reads the wallet (a `GetItem` on the fail-fast client the functions use), then does
/// what [`CounterHandler`] does (fails as its payload says, else commits its effect).
struct Debit {
    store: aws_sdk_dynamodb::Client,
    table: String,
    inner: Arc<CounterHandler>,
}

impl Handler for Debit {
    fn name(&self) -> &str {
        "debit"
    }

    fn handle<'a>(&'a self, m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            let read = self
                .store
                .get_item()
                .table_name(&self.table)
                .key(
                    "pk",
                    aws_sdk_dynamodb::types::AttributeValue::S("WALLET#w".into()),
                )
                .key(
                    "sk",
                    aws_sdk_dynamodb::types::AttributeValue::S("WALLET".into()),
                )
                .send()
                .await;
            if read.is_err() {
                return HandlerOutcome::Retry(
                    "reading the wallet: the store is unavailable".into(),
                );
            }
            self.inner.handle(m).await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_short_outage_every_effect_is_applied_within_a_minute_of_the_store_returning() {
    let emulator = OwnEmulator::start();
    let p = Pipeline::on(&emulator.endpoints()).await;
    let visibility = deployed_retry_visibility();
    p.sqs
        .set_queue_attributes()
        .queue_url(&p.retry_url)
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
            &visibility,
        )
        .send()
        .await
        .expect("set the deployed visibility timeout");
    // The processor as deployed: the fail-fast store and queue clients.
    let sdk = sdk_config_for(&emulator.endpoints()).await;
    let fast = fail_fast_client(&sdk);
    let sqs = inbox_core::queue::sqs::fail_fast_sqs(&sdk);
    let counter = CounterHandler::new(&p.harness.table, false);
    let debit = Arc::new(Debit {
        store: fast.clone(),
        table: p.harness.table.clone(),
        inner: counter.clone(),
    });
    let processor: TestProcessor<SystemClock> = Processor::new(
        DynamoTable::new(fast, p.harness.table.clone()),
        SqsRetryQueue::new(sqs.clone(), p.retry_url.clone()),
        SqsQuarantine::new(sqs, p.quarantine_url.clone()),
        SystemClock,
        Pipeline::registry(debit),
        ProcessorConfig::default(),
    )
    .with_jitter(|| 0.5);

    let ids: Vec<String> = (0..EVENTS).map(|i| format!("evt_debit_{i}")).collect();
    let deadline = Instant::now() + Duration::from_secs(60) + PAUSE + BOUND;
    let stop = AtomicBool::new(false);
    let (stream, retry) = (SourceStats::default(), SourceStats::default());
    let paused = AtomicBool::new(false);
    let resumed_at = Mutex::new(None::<Instant>);
    let applied_at = Mutex::new(HashMap::<String, Instant>::new());

    // The fault: the first received batch of retries is handled while the store is paused.
    let pause_once = || {
        if !paused.swap(true, Ordering::SeqCst) {
            emulator.pause();
        }
    };
    let senders = async {
        let sends = ids
            .iter()
            .map(|id| deliver_with(&p, id, json!({"fail_times": 1}), deadline));
        futures_util::future::join_all(sends).await
    };
    let fault = async {
        while !paused.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "no retry was ever received");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(PAUSE).await;
        emulator.resume();
        *resumed_at.lock().unwrap() = Some(Instant::now());
    };
    let watch = async {
        let (acks, ()) = tokio::join!(senders, fault);
        loop {
            for id in &ids {
                if !applied_at.lock().unwrap().contains_key(id) && p.effect_count(id).await >= 1 {
                    applied_at
                        .lock()
                        .unwrap()
                        .insert(id.clone(), Instant::now());
                }
            }
            if applied_at.lock().unwrap().len() == EVENTS || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        stop.store(true, Ordering::SeqCst);
        acks
    };
    let (acks, (), ()) = tokio::join!(
        watch,
        stream_source(&p, &processor, &stop, &stream),
        retry_source_with(&p, &processor, &stop, &retry, &pause_once)
    );

    let resumed = resumed_at.lock().unwrap().expect("the store came back");
    let applied = applied_at.into_inner().unwrap();
    let late = applied
        .values()
        .map(|at| at.saturating_duration_since(resumed))
        .max()
        .unwrap_or_default();
    let mut refused = BTreeMap::<i64, usize>::new();
    for d in &acks {
        for (status, n) in &d.refused {
            *refused.entry(*status).or_default() += n;
        }
    }
    let (mut once, mut attempts, mut statuses) = (
        0,
        BTreeMap::<u32, usize>::new(),
        BTreeMap::<String, usize>::new(),
    );
    let mut stuck = Vec::new();
    for id in &ids {
        once += usize::from(p.effect_count(id).await == 1);
        let m = p.message(id).await;
        *attempts.entry(m.attempts).or_default() += 1;
        *statuses.entry(m.status.to_string()).or_default() += 1;
        if !applied.contains_key(id) && stuck.len() < 3 {
            stuck.push(format!(
                "{id} (handler ran {}×, due for the reaper {:?} ms after its retry time): {:?}",
                counter.calls(id),
                m.open_due.zip(m.next_attempt_at).map(|(d, n)| d - n),
                m.history
            ));
        }
    }
    let queue = p
        .sqs
        .get_queue_attributes()
        .queue_url(&p.retry_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
        .send()
        .await
        .map(|a| format!("{:?}", a.attributes))
        .unwrap_or_else(|e| format!("{e:?}"));
    stuck.push(format!(
        "retry queue {queue}; retry source read errors {}",
        retry.read_errors.load(Ordering::SeqCst)
    ));
    record(
        "5-retry-outage",
        "store and queues paused (SIGSTOP) while a batch of retries is handled",
        format!(
            "{EVENTS} debits whose handler reads the store, each failing its first attempt; paused \
             {} s from the receipt of the first batch of retries (retry queue visibility {visibility} s, \
             as deployed)",
            PAUSE.as_secs()
        ),
        format!(
            "effects applied {}/{EVENTS}, exactly once {once}/{EVENTS}; the last {} s after the \
             store returned (bound {} s); attempts {attempts:?}, statuses {statuses:?}; retry \
             batches handled {} (ingest refusals {refused:?})",
            applied.len(),
            late.as_secs(),
            BOUND.as_secs(),
            retry.invocations.load(Ordering::SeqCst),
        ),
    );
    assert_eq!(
        applied.len(),
        EVENTS,
        "effects not applied {} s after the store returned (the retry queue's visibility timeout \
         is {visibility} s); for example {stuck:#?}",
        deadline.saturating_duration_since(resumed).as_secs()
    );
    assert!(
        late <= BOUND,
        "the last effect came {late:?} after the store returned"
    );
    assert_eq!(once, EVENTS, "effects not exactly once");
}
