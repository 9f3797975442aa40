//! The process function killed at each step: the store and quarantine queue are wrapped so the
//! invocation stops at the step (before a request is sent, or after its answer) and its future is
//! dropped. Then what Lambda and the reaper do — the stream delivers the batch again, the reaper
//! finds whatever deadline passed — and the end state: 0 lost, 0 doubled.

use inbox_core::clock::{Clock, ManualClock, SystemClock};
use inbox_core::domain::Status;
use inbox_core::message::QuarantineNotice;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::faults::kill::{KillQuarantine, KillStore, Step, Switch};
use integration_tests::faults::report::record;
use integration_tests::pipeline::{CounterHandler, Pipeline, TYPE};
use serde_json::json;
use std::sync::Arc;

/// All the quarantine notices on the queue now.
async fn notices(p: &Pipeline) -> Vec<QuarantineNotice> {
    let mut all = Vec::new();
    loop {
        let batch = p.receive(&p.quarantine_url).await;
        if batch.records.is_empty() {
            return all;
        }
        all.extend(batch.records.iter().filter_map(|r| {
            serde_json::from_str::<QuarantineNotice>(r.body.as_deref().unwrap_or_default()).ok()
        }));
    }
}

#[tokio::test]
async fn the_process_function_killed_at_each_step_loses_and_doubles_nothing() {
    // The shared emulators, a table and queues of its own: nothing here pauses or kills them.
    let p = Pipeline::new().await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    for (n, step) in Step::ALL.into_iter().enumerate() {
        let id = format!("evt_killed_{n}");
        let claim = matches!(step, Step::BeforeClaim | Step::AfterClaim);
        let body = match step {
            Step::AfterRetrying => json!({"fail_times": 1}),
            Step::AfterFailed | Step::AfterQuarantineSend => json!({"permanent": true}),
            _ => json!({}),
        };
        let ends_failed = body["permanent"] == true;
        let handler = CounterHandler::new(&p.harness.table, claim);
        let registry = Pipeline::registry(handler.clone());
        let switch = Switch::at(step);
        let dying = Processor::new(
            KillStore {
                inner: DynamoTable::new(p.harness.client.clone(), p.harness.table.clone()),
                switch: switch.clone(),
            },
            SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
            KillQuarantine {
                inner: SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
                switch: switch.clone(),
            },
            clock.clone(),
            registry.clone(),
            ProcessorConfig::default(),
        )
        .with_jitter(|| 0.0);

        assert_eq!(p.ingest(&id, TYPE, body).await.code(), "accepted");
        let batch = p.read_stream().await;
        assert_eq!(batch.records.len(), 1);
        tokio::select! {
            _ = dying.handle_stream_batch(batch.clone()) => panic!("{step:?}: never reached"),
            () = switch.reached() => {}
        }
        drop(dying);
        let at_kill = p.message(&id).await;

        // The invocation failed: the stream delivers the batch again; the reaper runs whenever a
        // deadline passes, and its re-drives are processed.
        let healthy = p.processor(registry, clock.clone()).await;
        healthy.handle_stream_batch(batch).await;
        let reaper = p.reaper(clock.clone(), 100).await;
        let mut reaper_runs = 0;
        for _ in 0..10 {
            let m = p.message(&id).await;
            let Some(due) = m.open_due else { break };
            clock.set_millis(due.max(clock.now_millis()));
            reaper.run().await.unwrap();
            reaper_runs += 1;
            while p.drain_retry_once(&healthy).await > 0 {}
        }
        let end = p.message(&id).await;
        let effects = p.effect_count(&id).await;
        let sent = notices(&p).await;
        let expected = if ends_failed {
            Status::Failed
        } else {
            Status::Processed
        };
        let expected_notices = match step {
            Step::AfterFailed => 1,
            // SQS cannot take a send back: the notice was sent, the process died before recording
            // it, and the reaper sends the same notice again.
            Step::AfterQuarantineSend => 2,
            _ => 0,
        };
        record(
            "4-killed",
            &format!("process function killed {}", step.name()),
            format!(
                "1 message ({} handler{}); then the stream's redelivery and the reaper ({reaper_runs} run(s))",
                if claim { "claiming" } else { "DynamoDB-effect" },
                match step {
                    Step::AfterRetrying => ", fails once",
                    Step::AfterFailed | Step::AfterQuarantineSend => ", fails permanently",
                    _ => "",
                }
            ),
            format!(
                "at the kill `{}`; end `{}` after {} attempt(s), handler ran {}×; lost 0; effect \
                 applied {effects}×; quarantine notices {}{}",
                at_kill.status,
                end.status,
                end.attempts,
                handler.calls(&id),
                sent.len(),
                if sent.len() > 1 { " (identical)" } else { "" }
            ),
        );
        assert_eq!(end.status, expected, "{step:?}: {end:?}");
        assert_eq!(end.open_due, None, "{step:?}: nothing left for the reaper");
        assert_eq!(
            effects,
            i64::from(!ends_failed),
            "{step:?}: effect exactly once"
        );
        assert_eq!(sent.len(), expected_notices, "{step:?}: {sent:?}");
        assert!(
            sent.windows(2).all(|w| w[0] == w[1]),
            "{step:?}: the same notice"
        );
    }
}
