//! The processing pipeline end to end against the emulator: ingest → stream → process (with the
//! real batch handlers), retries through the SQS retry queue, quarantine, replay, the reaper.
//! Effects are a DynamoDB counter committed with the message's transition: "exactly once" is
//! `effect_count == 1`.

use inbox_core::clock::{Clock, ManualClock, SystemClock};
use inbox_core::domain::Status;
use inbox_core::message::QuarantineNotice;
use inbox_core::process::registry::Registry;
use integration_tests::pipeline::{CounterHandler, Hangs, Pipeline, SOURCE, TYPE};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn happy_path_processes_once_in_two_write_requests() {
    let p = Pipeline::new().await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let processor = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;

    assert_eq!(
        p.ingest("evt_happy", TYPE, json!({})).await.code(),
        "accepted"
    );
    let batch = p.read_stream().await;
    assert_eq!(batch.records.len(), 1, "one INSERT of a message item");
    p.counter.reset();
    let (response, summary) = processor.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.outcomes.get("processed"), Some(&1));

    let m = p.message("evt_happy").await;
    assert_eq!((m.status, m.attempts, m.version), (Status::Processed, 1, 1));
    assert!(
        m.expires_at.is_some(),
        "terminal messages get their TTL in the same write"
    );
    assert_eq!(p.effect_count("evt_happy").await, 1);
    // Processing cost: one TransactWriteItems (effect + status), no read (the stream image is used).
    assert_eq!(
        p.counter.counts().get("TransactWriteItems"),
        Some(&1),
        "{:?}",
        p.counter.counts()
    );
    assert_eq!(p.counter.writes(), 1, "{:?}", p.counter.counts());
    assert_eq!(p.counter.counts().get("GetItem"), None);
    eprintln!(
        "DynamoDB requests to process one new webhook: {:?} (+1 PutItem at ingest)",
        p.counter.counts()
    );
}

#[tokio::test]
async fn ingest_then_process_costs_two_write_requests_in_total() {
    let p = Pipeline::new().await;
    // The ingest path with a counted client too.
    let counted = inbox_core::ingest::Ingestor::new(
        integration_tests::local_sources(),
        inbox_core::store::dynamo::DynamoTable::new(
            p.counted_dynamodb().await,
            p.harness.table.clone(),
        ),
        SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    );
    let body = json!({"id": "evt_count", "object": "event", "type": TYPE}).to_string();
    let headers = p.harness.sign("stripe", body.as_bytes(), "");
    let reply = integration_tests::Reply::from(
        ingest_function::respond(
            &counted,
            &integration_tests::api_event("POST", "stripe", &headers, Some(&body), false),
        )
        .await,
    );
    assert_eq!(reply.code(), "accepted");
    let processor = p
        .processor(
            Pipeline::registry(CounterHandler::new(&p.harness.table, false)),
            SystemClock,
        )
        .await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let counts = p.counter.counts();
    assert_eq!(
        p.counter.writes(),
        2,
        "one PutItem + one TransactWriteItems: {counts:?}"
    );
    assert_eq!(counts.get("PutItem"), Some(&1));
    assert_eq!(counts.get("TransactWriteItems"), Some(&1));
    assert_eq!(p.effect_count("evt_count").await, 1);
}

#[tokio::test]
async fn transient_failure_twice_then_success_journals_three_attempts_and_applies_once() {
    let p = Pipeline::new().await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let processor = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    p.ingest("evt_flaky", TYPE, json!({"fail_times": 2})).await;

    let (response, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "handler failures never fail the batch"
    );
    assert_eq!(summary.outcomes.get("retrying"), Some(&1));
    assert_eq!(p.message("evt_flaky").await.status, Status::Retrying);

    // Each scheduled retry arrives through the retry queue (jitter pinned to 0: due at once).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while p.message("evt_flaky").await.status != Status::Processed {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not processed in time: {:?}",
            p.message("evt_flaky").await
        );
        p.drain_retry_once(&processor).await;
    }
    let m = p.message("evt_flaky").await;
    assert_eq!(m.attempts, 3);
    let failed_attempts: Vec<_> = m.history.iter().filter(|e| e.error.is_some()).collect();
    assert_eq!(failed_attempts.len(), 2);
    assert_eq!(failed_attempts[0].attempt, Some(1));
    assert_eq!(failed_attempts[1].attempt, Some(2));
    assert!(failed_attempts
        .iter()
        .all(|e| e.duration_ms.is_some() && e.status == Status::Retrying));
    assert_eq!(
        m.history.last().map(|e| (e.status, e.attempt)),
        Some((Status::Processed, Some(3)))
    );
    assert_eq!(p.effect_count("evt_flaky").await, 1);
    assert_eq!(handler.calls("evt_flaky"), 3);
}

#[tokio::test]
async fn poison_message_is_quarantined_others_in_its_batch_are_processed_and_replay_fixes_it() {
    let p = Pipeline::new().await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let processor = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    p.ingest("evt_ok_1", TYPE, json!({})).await;
    p.ingest("evt_poison", TYPE, json!({"fail_times": 1000}))
        .await;
    p.ingest("evt_ok_2", TYPE, json!({})).await;

    let batch = p.read_stream().await;
    assert_eq!(batch.records.len(), 3);
    let (response, _) = processor.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(p.message("evt_ok_1").await.status, Status::Processed);
    assert_eq!(p.message("evt_ok_2").await.status, Status::Processed);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while p.message("evt_poison").await.status != Status::Failed {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not quarantined in time"
        );
        p.drain_retry_once(&processor).await;
    }
    let m = p.message("evt_poison").await;
    assert_eq!(m.attempts, 5);
    assert_eq!(m.expires_at, None, "failed messages never expire");
    assert_eq!(handler.calls("evt_poison"), 5);
    assert_eq!(p.effect_count("evt_poison").await, 0);

    let quarantined = p.receive(&p.quarantine_url).await;
    assert_eq!(
        quarantined.records.len(),
        1,
        "exactly one quarantine message"
    );
    let notice: QuarantineNotice =
        serde_json::from_str(quarantined.records[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(
        (notice.source.as_str(), notice.event_id.as_str()),
        (SOURCE, "evt_poison")
    );
    assert_eq!(notice.event_type.as_ref().map(|t| t.as_str()), Some(TYPE));
    assert_eq!(notice.attempts, 5);
    assert_eq!(notice.reason.as_str(), "exhausted");
    assert_eq!(notice.last_error, "simulated upstream timeout on call 5");
    assert!(
        p.receive(&p.retry_url).await.records.is_empty(),
        "no retry left behind"
    );

    // The bug is fixed; the operator replays it.
    handler.fix();
    let store = inbox_core::store::dynamo::DynamoTable::new(
        p.harness.client.clone(),
        p.harness.table.clone(),
    );
    let outcome = inbox_core::ops::replay(
        &store,
        processor.retry_queue(),
        &SystemClock,
        &notice.key(),
        "ops@example",
        false,
    )
    .await
    .unwrap();
    assert_eq!(outcome, inbox_core::ops::ReplayOutcome::Replayed);
    let replayed = p.message("evt_poison").await;
    assert_eq!((replayed.status, replayed.attempts), (Status::Pending, 0));
    assert!(replayed
        .history
        .last()
        .unwrap()
        .note
        .contains("replayed by ops@example"));
    assert!(
        p.drain_retry_once(&processor).await >= 1,
        "the replay re-drives it"
    );
    assert_eq!(p.message("evt_poison").await.status, Status::Processed);
    assert_eq!(p.effect_count("evt_poison").await, 1);
}

#[tokio::test]
async fn permanent_failure_is_quarantined_at_once() {
    let p = Pipeline::new().await;
    let processor = p
        .processor(
            Pipeline::registry(CounterHandler::new(&p.harness.table, false)),
            SystemClock,
        )
        .await;
    p.ingest("evt_perm", TYPE, json!({"permanent": true})).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let m = p.message("evt_perm").await;
    assert_eq!((m.status, m.attempts), (Status::Failed, 1));
    let q = p.receive(&p.quarantine_url).await;
    assert_eq!(q.records.len(), 1);
    assert!(q.records[0]
        .body
        .as_deref()
        .unwrap()
        .contains("\"reason\":\"permanent\""));
}

#[tokio::test]
async fn the_same_record_twice_and_racing_processors_apply_the_effect_once() {
    let p = Pipeline::new().await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let a = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    let b = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    p.ingest("evt_dup_record", TYPE, json!({})).await;
    p.ingest("evt_race", TYPE, json!({})).await;
    let batch = p.read_stream().await;

    // The stream delivers the batch twice (a retried invocation) to two processors. The
    // interleaving is the worst case, made deterministic: both hold the same image (version 0);
    // A commits, then B commits on its stale read. (Concurrent racers are in
    // tests/it/faults/serializable.rs.)
    let (r1, s1) = a.handle_stream_batch(batch.clone()).await;
    let (r2, s2) = b.handle_stream_batch(batch.clone()).await;
    assert!(r1.batch_item_failures.is_empty() && r2.batch_item_failures.is_empty());
    assert_eq!(s1.outcomes.get("processed"), Some(&2), "{:?}", s1.outcomes);
    assert_eq!(
        s2.outcomes.get("skipped_conflict"),
        Some(&2),
        "the stale commits lose: {:?}",
        s2.outcomes
    );

    // A racer that read before the commit and one that reads after: neither applies it again.
    let key = p.message("evt_race").await.key();
    let stale = batch
        .records
        .iter()
        .find(|r| format!("{:?}", r.change.new_image).contains("evt_race"))
        .unwrap();
    let stale: inbox_core::message::StoredMessage =
        serde_dynamo::from_item(stale.change.new_image.clone()).unwrap();
    assert_eq!(stale.version, 0);
    assert_eq!(
        b.process(stale).await.unwrap(),
        inbox_core::process::Outcome::Skipped(inbox_core::process::Skip::Conflict)
    );
    assert_eq!(
        a.process_key(&key).await.unwrap(),
        inbox_core::process::Outcome::Skipped(inbox_core::process::Skip::Terminal)
    );
    for id in ["evt_dup_record", "evt_race"] {
        assert_eq!(p.message(id).await.status, Status::Processed);
        assert_eq!(p.effect_count(id).await, 1, "{id}: effect exactly once");
    }
    assert_eq!(
        handler.calls("evt_race"),
        3,
        "the handler ran three times, its effect committed once"
    );
}

#[tokio::test]
async fn a_crash_after_the_claim_is_reaped_after_the_lease_and_processed_once() {
    let p = Pipeline::new().await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let crashing = p
        .processor(
            Registry::new().on(SOURCE, TYPE, Arc::new(Hangs)),
            clock.clone(),
        )
        .await;
    p.ingest("evt_crash", TYPE, json!({})).await;
    let batch = p.read_stream().await;
    // The invocation claims, then dies mid-handler (its future is dropped).
    let crashed =
        tokio::time::timeout(Duration::from_secs(2), crashing.handle_stream_batch(batch)).await;
    assert!(crashed.is_err());
    let claimed = p.message("evt_crash").await;
    assert_eq!((claimed.status, claimed.attempts), (Status::Processing, 1));

    let handler = CounterHandler::new(&p.harness.table, true);
    let healthy = p
        .processor(Pipeline::registry(handler.clone()), clock.clone())
        .await;
    let reaper = p.reaper(clock.clone(), 100).await;

    assert_eq!(
        reaper.run().await.unwrap().due,
        0,
        "the lease is still live"
    );
    assert_eq!(p.drain_retry_once(&healthy).await, 0);
    clock.advance_millis(60_001);
    let report = reaper.run().await.unwrap();
    assert_eq!((report.due, report.redriven), (1, 1));
    assert_eq!(report.by_status.get("processing"), Some(&1));
    assert_eq!(p.drain_retry_once(&healthy).await, 1);
    let m = p.message("evt_crash").await;
    assert_eq!((m.status, m.attempts), (Status::Processed, 2));
    assert_eq!(p.effect_count("evt_crash").await, 1);
    assert_eq!(handler.calls("evt_crash"), 1);
}

#[tokio::test]
async fn the_reaper_redrives_messages_the_stream_never_delivered() {
    let p = Pipeline::new().await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let processor = p
        .processor(
            Pipeline::registry(CounterHandler::new(&p.harness.table, false)),
            clock.clone(),
        )
        .await;
    p.ingest("evt_lost", TYPE, json!({})).await;
    // The stream record is never consumed (the mapping was down past the stream's retention).
    let reaper = p.reaper(clock.clone(), 100).await;
    assert_eq!(reaper.run().await.unwrap().due, 0);
    // (The clock was pinned before the ingest, which used the wall clock: give it a minute of slack.)
    clock.advance_millis(inbox_core::store::schema::PENDING_GRACE_MS + 60_000);
    assert_eq!(
        reaper.run().await.unwrap().by_status.get("pending"),
        Some(&1)
    );
    assert_eq!(p.drain_retry_once(&processor).await, 1);
    assert_eq!(p.message("evt_lost").await.status, Status::Processed);
    assert_eq!(p.effect_count("evt_lost").await, 1);
}

/// A message filed under the open index's former 16 shards (`OPEN#0`..`OPEN#15`, before it had
/// 64) keeps that value until its next write; the reaper, reading every shard, still finds it.
#[tokio::test]
async fn the_reaper_finds_a_message_filed_under_the_former_sixteen_shards() {
    use inbox_core::domain::{EventId, MessageKey, SourceName};
    use inbox_core::store::attr::s;
    use inbox_core::store::schema::{message_pk, open_shard, MESSAGE_SK};
    let p = Pipeline::new().await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let processor = p
        .processor(
            Pipeline::registry(CounterHandler::new(&p.harness.table, false)),
            clock.clone(),
        )
        .await;
    // An id whose shard among 64 is not the one it had among 16.
    let (id, key, former) = (0..1000)
        .map(|i| {
            let id = format!("evt_former_{i}");
            let key = MessageKey::new(
                SourceName::parse(SOURCE).unwrap(),
                EventId::parse(&id).unwrap(),
            );
            let n: u8 = open_shard(&key)[5..].parse().unwrap();
            (id, key, format!("OPEN#{}", n % 16))
        })
        .find(|(_, key, former)| open_shard(key) != *former)
        .unwrap();
    p.ingest(&id, TYPE, json!({})).await;
    p.harness
        .client
        .update_item()
        .table_name(&p.harness.table)
        .key("pk", s(message_pk(&key)))
        .key("sk", s(MESSAGE_SK))
        .update_expression("SET open_shard = :former")
        .expression_attribute_values(":former", s(&former))
        .send()
        .await
        .unwrap();
    clock.advance_millis(inbox_core::store::schema::PENDING_GRACE_MS + 60_000);
    let reaper = p.reaper(clock.clone(), 100).await;
    assert_eq!(
        reaper.run().await.unwrap().by_status.get("pending"),
        Some(&1),
        "found under {former}"
    );
    assert_eq!(p.drain_retry_once(&processor).await, 1);
    assert_eq!(p.message(&id).await.status, Status::Processed);
    assert_eq!(p.effect_count(&id).await, 1);
}

#[tokio::test]
async fn unknown_event_type_is_ignored_listed_and_replayable() {
    let p = Pipeline::new().await;
    let processor = p.processor(Registry::new(), SystemClock).await;
    p.ingest("evt_unknown", "customer.tax_id.created", json!({}))
        .await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let m = p.message("evt_unknown").await;
    assert_eq!(m.status, Status::Ignored);
    assert!(m.expires_at.is_some());

    let store = inbox_core::store::dynamo::DynamoTable::new(
        p.harness.client.clone(),
        p.harness.table.clone(),
    );
    let filter = inbox_core::store::ListFilter {
        status: Some(Status::Ignored),
        ..Default::default()
    };
    let listed = inbox_core::store::MessageStore::list(&store, &filter, 10)
        .await
        .unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|m| m.event_id.as_str())
            .collect::<Vec<_>>(),
        vec!["evt_unknown"]
    );

    // A handler for the type arrives; the operator replays.
    let handler = CounterHandler::new(&p.harness.table, false);
    let upgraded = p
        .processor(
            Registry::new().on(SOURCE, "customer.tax_id.created", handler),
            SystemClock,
        )
        .await;
    let outcome = inbox_core::ops::replay(
        &store,
        upgraded.retry_queue(),
        &SystemClock,
        &m.key(),
        "ops",
        false,
    )
    .await
    .unwrap();
    assert_eq!(outcome, inbox_core::ops::ReplayOutcome::Replayed);
    assert_eq!(
        p.message("evt_unknown").await.expires_at,
        None,
        "a replayed message no longer expires"
    );
    assert_eq!(p.drain_retry_once(&upgraded).await, 1);
    assert_eq!(p.message("evt_unknown").await.status, Status::Processed);
    assert_eq!(p.effect_count("evt_unknown").await, 1);
}

#[tokio::test]
async fn store_unavailable_during_processing_is_a_batch_item_failure_and_nothing_is_lost() {
    let p = Pipeline::new().await;
    let handler = CounterHandler::new(&p.harness.table, false);
    p.ingest("evt_outage_1", TYPE, json!({})).await;
    p.ingest("evt_outage_2", TYPE, json!({})).await;
    let batch = p.read_stream().await;
    let first_sequence = batch.records[0].change.sequence_number.clone();

    let sdk =
        integration_tests::sdk_config_for(&integration_tests::Endpoints::one("http://127.0.0.1:9"))
            .await;
    let down = inbox_core::process::Processor::new(
        inbox_core::store::dynamo::DynamoTable::new(
            inbox_core::store::dynamo::fail_fast_client(&sdk),
            p.harness.table.clone(),
        ),
        inbox_core::queue::sqs::SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
        inbox_core::queue::sqs::SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
        SystemClock,
        Pipeline::registry(handler.clone()),
        inbox_core::process::ProcessorConfig::default(),
    );
    let (response, summary) = down.handle_stream_batch(batch.clone()).await;
    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "reported, and the rest left for the retry"
    );
    assert_eq!(
        response.batch_item_failures[0].item_identifier,
        first_sequence
    );
    assert_eq!(
        summary.failures, 2,
        "both records met the outage; the first is reported"
    );
    assert_eq!(
        p.message("evt_outage_1").await.status,
        Status::Pending,
        "nothing half-done"
    );

    // Lambda re-delivers from the reported record; the store is back.
    let healthy = p.processor(Pipeline::registry(handler), SystemClock).await;
    let (response, _) = healthy.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    for id in ["evt_outage_1", "evt_outage_2"] {
        assert_eq!(p.message(id).await.status, Status::Processed);
        assert_eq!(p.effect_count(id).await, 1);
    }
}

#[tokio::test]
async fn the_process_function_dispatches_real_lambda_payloads() {
    let p = Pipeline::new().await;
    let processor = p.processor(Registry::new(), SystemClock).await;
    p.ingest("evt_fn", "invoice.paid", json!({})).await;
    let batch = p.read_stream().await;
    let mut payload = serde_json::to_value(&batch).unwrap();
    payload["Records"][0]["eventSource"] = json!("aws:dynamodb");
    let ctx = lambda_runtime::Context::default();
    let out = process_function::handle(
        &processor,
        lambda_runtime::LambdaEvent::new(payload, ctx.clone()),
    )
    .await
    .unwrap();
    assert_eq!(out, json!({"batchItemFailures": []}));
    assert_eq!(p.message("evt_fn").await.status, Status::Ignored);
    let bad = process_function::handle(
        &processor,
        lambda_runtime::LambdaEvent::new(json!({"Records": [{"eventSource": "aws:s3"}]}), ctx),
    )
    .await;
    assert!(bad.is_err(), "an unknown trigger is an invocation error");
}
