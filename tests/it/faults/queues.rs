//! The retry queue and the quarantine queue unavailable (their SQS endpoint refuses connections),
//! for the processor and then for the reaper too: nothing is marked done that was not, and what
//! could not be sent — a retry, a quarantine notice — is found again by the reaper once the
//! queues are back: each message processed once, each failure announced once.

use inbox_core::clock::{Clock, ManualClock, SystemClock};
use inbox_core::domain::Status;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::reaper::{Reaper, ReaperSettings};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::faults::report::record;
use integration_tests::pipeline::{CounterHandler, Pipeline, TYPE};
use integration_tests::sdk_config_for;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const EACH: usize = 10;

#[tokio::test]
async fn unavailable_queues_mark_nothing_done_and_the_reaper_finds_what_was_not_sent() {
    // The shared emulators, a table and queues of its own: nothing here pauses or kills them.
    let p = Pipeline::new().await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let handler = CounterHandler::new(&p.harness.table, false);
    let store = || DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    // Queues whose endpoint refuses every connection.
    let down = aws_sdk_sqs::Client::new(
        &sdk_config_for(&integration_tests::Endpoints::one("http://127.0.0.1:9")).await,
    );
    let down_retry = SqsRetryQueue::new(down.clone(), p.retry_url.clone());
    let down_quarantine = SqsQuarantine::new(down, p.quarantine_url.clone());
    let processor = Processor::new(
        store(),
        down_retry.clone(),
        down_quarantine.clone(),
        clock.clone(),
        Pipeline::registry(handler.clone()),
        ProcessorConfig::default(),
    )
    .with_jitter(|| 0.0);
    let flaky: Vec<String> = (0..EACH).map(|i| format!("evt_retry_{i}")).collect();
    let poison: Vec<String> = (0..EACH).map(|i| format!("evt_poison_{i}")).collect();
    for id in &flaky {
        p.ingest(id, TYPE, json!({"fail_times": 1})).await;
    }
    for id in &poison {
        p.ingest(id, TYPE, json!({"permanent": true})).await;
    }
    let (response, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    assert_eq!(summary.outcomes.get("retrying"), Some(&EACH));
    assert_eq!(summary.outcomes.get("failed"), Some(&EACH));

    let statuses = |ids: &[String]| {
        let ids = ids.to_vec();
        let p = &p;
        async move {
            let mut out = std::collections::BTreeMap::new();
            for id in &ids {
                *out.entry(p.message(id).await.status.to_string())
                    .or_insert(0) += 1;
            }
            out
        }
    };
    let done_too_early = statuses(&flaky)
        .await
        .get("processed")
        .copied()
        .unwrap_or(0);
    let mut effects_too_early = 0;
    for id in &flaky {
        effects_too_early += p.effect_count(id).await;
    }
    assert_eq!(
        (done_too_early, effects_too_early),
        (0, 0),
        "nothing done that was not"
    );
    for id in &poison {
        let m = p.message(id).await;
        assert_eq!(m.status, Status::Failed);
        assert!(m.notice_pending.is_some(), "{id}: its notice is pending");
    }

    // The reaper runs while the queues are still down: it counts the lost retries, cannot send.
    let settings = ReaperSettings::with_budget(100);
    let down_reaper = Reaper::new(
        store(),
        down_retry,
        down_quarantine,
        clock.clone(),
        settings,
    )
    .with_jitter(|| 0.0);
    clock.advance_millis(inbox_core::store::schema::PENDING_GRACE_MS + 60_000);
    let first = down_reaper.run().await.unwrap();
    assert_eq!(first.errors, 2 * EACH, "{first:?}");

    // The queues are back.
    let reaper = p.reaper(clock.clone(), 100).await;
    clock.advance_millis(inbox_core::store::schema::PENDING_GRACE_MS + 60_000);
    let second = reaper.run().await.unwrap();
    assert_eq!(
        (second.redriven, second.notices_sent, second.errors),
        (EACH, EACH, 0),
        "{second:?}"
    );
    let healthy = p
        .processor(Pipeline::registry(handler.clone()), clock.clone())
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while statuses(&flaky).await.get("processed") != Some(&EACH) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            statuses(&flaky).await
        );
        p.drain_retry_once(&healthy).await;
    }
    let mut once = 0;
    for id in &flaky {
        once += usize::from(p.effect_count(id).await == 1);
    }
    let mut notices = Vec::new();
    loop {
        let batch = p.receive(&p.quarantine_url).await;
        if batch.records.is_empty() {
            break;
        }
        notices.extend(batch.records.into_iter().filter_map(|r| r.body));
    }
    let attempts: Vec<u32> = {
        let mut a = Vec::new();
        for id in &flaky {
            a.push(p.message(id).await.attempts);
        }
        a
    };
    record(
        "5-queues",
        "retry queue unavailable (processor, then reaper)",
        format!("{EACH} messages failing once; the retry could not be sent, nor the reaper's first re-drive"),
        format!(
            "processed while the queue was down 0; after it came back processed {}/{EACH}, \
             effect exactly once {once}/{EACH}; attempts {:?} (the failed one, 2 the reaper counted \
             lost because no retry could be delivered, the one that succeeded)",
            statuses(&flaky).await.get("processed").copied().unwrap_or(0),
            attempts.iter().collect::<std::collections::BTreeSet<_>>()
        ),
    );
    record(
        "5-queues",
        "quarantine queue unavailable (processor, then reaper)",
        format!("{EACH} messages failing permanently; their notices could not be sent, twice"),
        format!(
            "`failed` with the notice pending {EACH}/{EACH}; found by the reaper once the queue was \
             back: notices {} for {EACH} messages",
            notices.len()
        ),
    );
    assert_eq!(once, EACH);
    assert_eq!(notices.len(), EACH, "one notice per failed message");
    for id in &poison {
        let m = p.message(id).await;
        assert_eq!(
            (m.status, m.notice_pending, m.open_due),
            (Status::Failed, None, None)
        );
    }
}
