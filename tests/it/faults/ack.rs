//! The acknowledgement tells the truth after a timeout: an ingest write lands, its answer is lost
//! (the attempt "times out"), the SDK retries and finds the item. The per-request token in the
//! item says it is this request's own write: `accepted`, nothing journaled. A journal write of a
//! real duplicate whose answer is lost the same way is not answered 503. A processing commit (a
//! `TransactWriteItems`) whose answer is lost is retried by the SDK with the same
//! `ClientRequestToken`, which DynamoDB honours: the retry reports the commit, not a conflict.

use aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextMut;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::{Metadata, OrchestratorError};
use inbox_core::clock::SystemClock;
use inbox_core::domain::Status;
use inbox_core::ingest::Ingestor;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use integration_tests::faults::report::record;
use integration_tests::pipeline::{CounterHandler, Pipeline, TYPE};
use integration_tests::{api_event, local_sources, sdk_config_for, Harness, Reply};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Loses the answer of the next `lose` successful attempts of `op`: the write landed, the client
/// sees a timeout, and the SDK's retry strategy tries again.
#[derive(Debug)]
struct LoseAnswers {
    op: &'static str,
    lose: AtomicUsize,
    lost: AtomicUsize,
    attempts: Mutex<BTreeMap<String, usize>>,
}

impl Intercept for LoseAnswers {
    fn name(&self) -> &'static str {
        "LoseAnswers"
    }

    fn modify_before_attempt_completion(
        &self,
        context: &mut FinalizerInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = cfg
            .load::<Metadata>()
            .map(|m| m.name().to_owned())
            .unwrap_or_default();
        *self.attempts.lock().unwrap().entry(op.clone()).or_default() += 1;
        let Some(result) = context.output_or_error_mut() else {
            return Ok(());
        };
        if op == self.op
            && result.is_ok()
            && self
                .lose
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            *result = Err(OrchestratorError::timeout(
                "simulated: the answer never arrived".into(),
            ));
            self.lost.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_write_whose_answer_was_lost_is_acknowledged_as_accepted_and_journals_nothing() {
    // The shared emulators, a table of its own: nothing here pauses or kills them.
    let endpoints = integration_tests::endpoints();
    let h = Harness::on(&endpoints, inbox_core::config::DEFAULT_MAX_BODY_BYTES).await;
    let lossy = Arc::new(LoseAnswers::of("PutItem"));
    let client = fail_fast_client(&sdk_config_for(&endpoints).await);
    let client = aws_sdk_dynamodb::Client::from_conf(
        client
            .config()
            .to_builder()
            .interceptor(SharedLoseAnswers(lossy.clone()))
            .build(),
    );
    let ingest = Ingestor::new(
        local_sources(),
        DynamoTable::new(client, h.table.clone()),
        SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    );
    let send = |id: &str| {
        let body =
            serde_json::json!({"id": id, "object": "event", "type": "invoice.paid"}).to_string();
        let headers = h.sign("stripe", body.as_bytes(), "");
        let event = api_event("POST", "stripe", &headers, Some(&body), false);
        let ingest = &ingest;
        async move { Reply::from(ingest_function::respond(ingest, &event).await) }
    };

    // 1. A new event: its PutItem lands, the answer is lost, the SDK retries.
    lossy.lose.store(1, Ordering::SeqCst);
    let first = send("evt_lost_answer").await;
    let put_attempts = lossy.attempts.lock().unwrap().get("PutItem").copied();
    assert_eq!(
        lossy.lost.load(Ordering::SeqCst),
        1,
        "the fault was injected"
    );
    assert_eq!(put_attempts, Some(2), "the SDK retried the PutItem");
    assert_eq!((first.status, first.code()), (200, "accepted"));
    assert_eq!(h.items_of_kind("message").await.len(), 1);
    let journaled_after_first = h.items_of_kind("delivery").await.len();
    assert_eq!(
        journaled_after_first, 0,
        "no duplicate delivery that never happened"
    );

    // 2. A real duplicate: its journal write lands, the answer is lost, the SDK retries.
    lossy.lose.store(1, Ordering::SeqCst);
    let second = send("evt_lost_answer").await;
    assert_eq!(lossy.lost.load(Ordering::SeqCst), 2);
    assert_eq!((second.status, second.code()), (200, "duplicate"));
    let journaled = h.items_of_kind("delivery").await.len();
    assert_eq!(journaled, 1, "journaled once");

    record(
        "6-ack",
        "an ingest write's answer lost (timeout), the SDK retries",
        "1 new event whose PutItem answer was lost; 1 duplicate whose journal PutItem answer was \
         lost (SDK interceptor on the real client)"
            .into(),
        format!(
            "new event: `{}`, {journaled_after_first} journal records (before the token: \
             `duplicate` and 1 record of a delivery that never happened); duplicate: `{}` \
             (before: 503), {journaled} journal record",
            first.code(),
            second.code()
        ),
    );
}

impl LoseAnswers {
    fn of(op: &'static str) -> Self {
        Self {
            op,
            lose: AtomicUsize::new(0),
            lost: AtomicUsize::new(0),
            attempts: Mutex::default(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_was_lost_is_replayed_by_its_client_request_token() {
    let p = Pipeline::new().await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let lossy = Arc::new(LoseAnswers::of("TransactWriteItems"));
    let sdk = sdk_config_for(&p.harness.endpoints).await;
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(SharedLoseAnswers(lossy.clone()))
            .build(),
    );
    let processor = Processor::new(
        DynamoTable::new(client, p.harness.table.clone()),
        SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
        SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
        SystemClock,
        Pipeline::registry(handler.clone()),
        ProcessorConfig::default(),
    )
    .with_jitter(|| 0.0);
    let id = "evt_lost_commit";
    assert_eq!(
        p.ingest(id, TYPE, serde_json::json!({})).await.code(),
        "accepted"
    );

    lossy.lose.store(1, Ordering::SeqCst);
    let (response, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    let attempts = lossy
        .attempts
        .lock()
        .unwrap()
        .get("TransactWriteItems")
        .copied();
    assert_eq!(
        lossy.lost.load(Ordering::SeqCst),
        1,
        "the fault was injected"
    );
    assert_eq!(attempts, Some(2), "the SDK retried the commit");
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    let message = p.message(id).await;
    let effects = p.effect_count(id).await;
    record(
        "6-ack",
        "a processing commit's answer lost (timeout), the SDK retries it",
        "1 message whose TransactWriteItems (`processed` + its effect) answer was lost; the SDK's \
         retry carries the same ClientRequestToken"
            .into(),
        format!(
            "outcomes {:?}; message `{}`, effect applied {effects}× (a store ignoring the token, \
             as moto does, would cancel the retry by the version check: `skipped_conflict`)",
            summary.outcomes,
            message.status.as_str()
        ),
    );
    assert_eq!(
        summary.outcomes.get("processed"),
        Some(&1),
        "the retry replayed the commit instead of meeting its own write: {summary:?}"
    );
    assert_eq!(message.status, Status::Processed);
    assert_eq!(effects, 1, "the effect applied once");
}

/// The interceptor shared with the test (the SDK takes ownership of what it is given).
#[derive(Debug)]
struct SharedLoseAnswers(Arc<LoseAnswers>);

impl Intercept for SharedLoseAnswers {
    fn name(&self) -> &'static str {
        "SharedLoseAnswers"
    }

    fn modify_before_attempt_completion(
        &self,
        context: &mut FinalizerInterceptorContextMut<'_>,
        components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0
            .modify_before_attempt_completion(context, components, cfg)
    }
}
