//! The acknowledgement tells the truth after a timeout: an ingest write lands, its answer is lost
//! (the attempt "times out"), the SDK retries and finds the item. The per-request token in the
//! item says it is this request's own write: `accepted`, nothing journaled. A journal write of a
//! real duplicate whose answer is lost the same way is not answered 503.

use aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextMut;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::{Metadata, OrchestratorError};
use inbox_core::clock::SystemClock;
use inbox_core::ingest::Ingestor;
use inbox_core::store::dynamo::{client_for_hot_path, DynamoInbox};
use integration_tests::faults::report::record;
use integration_tests::faults::OwnEmulator;
use integration_tests::{api_event, local_sources, sdk_config_for, Harness, Reply};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Loses the answer of the next `lose` successful `PutItem` attempts: the write landed, the
/// client sees a timeout, and the SDK's retry strategy tries again.
#[derive(Debug, Default)]
struct LoseAnswers {
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
        if op == "PutItem"
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
    let emulator = OwnEmulator::start();
    let h = Harness::on(
        &emulator.endpoints(),
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
    )
    .await;
    let lossy = Arc::new(LoseAnswers::default());
    let client = client_for_hot_path(&sdk_config_for(&emulator.endpoints()).await);
    let client = aws_sdk_dynamodb::Client::from_conf(
        client
            .config()
            .to_builder()
            .interceptor(SharedLoseAnswers(lossy.clone()))
            .build(),
    );
    let ingest = Ingestor::new(
        local_sources(),
        DynamoInbox::new(client, h.table.clone()),
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
