//! Processor unit tests on the in-memory store and queues, with a manual clock.

use super::registry::{Handler, HandlerFuture, HandlerOutcome, Registry};
use super::*;
use crate::clock::ManualClock;
use crate::domain::{BodyDigest, EventId, EventType, SourceName};
use crate::metrics::{Metric, RecordingSink};
use crate::policy::RetryPolicy;
use crate::queue::memory::{MemoryQuarantine, MemoryRetryQueue};
use crate::reaper::{Reaper, ReaperSettings};
use crate::store::memory::MemoryStore;
use crate::store::{Effect, Inbox, NewMessage};
use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem};
use std::sync::atomic::{AtomicU32, Ordering};

const T0: i64 = 1_700_000_000_000;

/// Fails transiently `fail_first` times, then commits one effect. `claim` makes it an
/// external-effect handler.
struct Scripted {
    calls: AtomicU32,
    fail_first: u32,
    permanent: bool,
    claim: bool,
    effects: usize,
}

impl Scripted {
    fn new(fail_first: u32) -> Arc<Self> {
        Arc::new(Self {
            calls: AtomicU32::new(0),
            fail_first,
            permanent: false,
            claim: false,
            effects: 1,
        })
    }
}

fn effect() -> Effect {
    Effect::Raw(Box::new(
        TransactWriteItem::builder()
            .condition_check(
                ConditionCheck::builder()
                    .table_name("t")
                    .key("pk", aws_sdk_dynamodb::types::AttributeValue::S("x".into()))
                    .condition_expression("attribute_not_exists(pk)")
                    .build()
                    .unwrap(),
            )
            .build(),
    ))
}

/// The metric the test handlers count their commits with.
fn committed() -> Metric {
    Metric::count("Test", "Committed", 1).with_property("Handler", "test")
}

impl Handler for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn needs_claim(&self) -> bool {
        self.claim
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n <= self.fail_first {
                if self.permanent {
                    HandlerOutcome::Permanent(format!("bad data (call {n})"))
                } else {
                    HandlerOutcome::Retry(format!("upstream timeout (call {n})"))
                }
            } else {
                HandlerOutcome::Commit(
                    Commit::new((0..self.effects).map(|_| effect()).collect())
                        .with_metrics([committed()]),
                )
            }
        })
    }
}

/// Never finishes: a crash after the claim.
struct Hangs;
impl Handler for Hangs {
    fn name(&self) -> &str {
        "hangs"
    }
    fn needs_claim(&self) -> bool {
        true
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(std::future::pending())
    }
}

type P =
    Processor<Arc<MemoryStore>, Arc<MemoryRetryQueue>, Arc<MemoryQuarantine>, Arc<ManualClock>>;
type R = Reaper<Arc<MemoryStore>, Arc<MemoryRetryQueue>, Arc<MemoryQuarantine>, Arc<ManualClock>>;

struct World {
    store: Arc<MemoryStore>,
    retry: Arc<MemoryRetryQueue>,
    quarantine: Arc<MemoryQuarantine>,
    clock: Arc<ManualClock>,
    metrics: Arc<RecordingSink>,
}

impl World {
    fn new() -> Self {
        Self {
            store: Arc::new(MemoryStore::new()),
            retry: Arc::new(MemoryRetryQueue::new()),
            quarantine: Arc::new(MemoryQuarantine::new()),
            clock: Arc::new(ManualClock::at_millis(T0)),
            metrics: Arc::new(RecordingSink::new()),
        }
    }

    fn processor(&self, registry: Registry) -> P {
        let config = ProcessorConfig {
            policy: RetryPolicy::new(5, Duration::from_secs(2), Duration::from_secs(60)),
            lease: Duration::from_secs(60),
            retention: Duration::from_secs(30 * 86_400),
            concurrency: 4,
            queue_patience: Duration::from_millis(20),
        };
        Processor::new(
            self.store.clone(),
            self.retry.clone(),
            self.quarantine.clone(),
            self.clock.clone(),
            registry,
            config,
        )
        .with_jitter(|| 0.5)
        .with_metrics(self.metrics.clone())
    }

    /// A reaper with the processor's policy and lease, jitter pinned like the processor's.
    fn reaper(&self, max_per_run: usize) -> R {
        let settings = ReaperSettings {
            max_per_run,
            policy: RetryPolicy::new(5, Duration::from_secs(2), Duration::from_secs(60)),
            lease: Duration::from_secs(60),
        };
        Reaper::new(
            self.store.clone(),
            self.retry.clone(),
            self.quarantine.clone(),
            self.clock.clone(),
            settings,
        )
        .with_jitter(|| 0.5)
    }

    async fn ingest(&self, id: &str, kind: &str) -> StoredMessage {
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(id).unwrap(),
        );
        let body = format!(r#"{{"id":"{id}","type":"{kind}"}}"#).into_bytes();
        let msg = NewMessage {
            key: key.clone(),
            event_type: Some(EventType::parse(kind).unwrap()),
            received_at_ms: self.clock.now_millis(),
            body_digest: Some(BodyDigest::of(&body)),
            body,
            headers: Vec::new(),
            provider_id: None,
            unidentified: None,
            batch: None,
        };
        self.store.put_if_absent(&msg).await.unwrap();
        self.store.message(&key).unwrap()
    }
}

fn registry(h: Arc<dyn Handler>) -> Registry {
    Registry::new().on("stripe", "invoice.paid", h)
}

#[tokio::test]
async fn no_handler_means_ignored_with_ttl_and_out_of_the_open_index() {
    let w = World::new();
    let p = w.processor(Registry::new());
    let m = w.ingest("evt_1", "customer.created").await;
    assert_eq!(p.process(m.clone()).await.unwrap(), Outcome::Ignored);
    let after = w.store.message(&m.key()).unwrap();
    assert_eq!(after.status, Status::Ignored);
    assert_eq!(after.expires_at, Some(T0 / 1000 + 30 * 86_400));
    assert_eq!(after.history.len(), 2);
    assert_eq!(after.version, 1);
    let far_future = T0 + 86_400_000;
    let due: usize = futures_len(&w, far_future).await;
    assert_eq!(due, 0, "terminal messages leave the open index");
}

/// Declines every message, saying why.
struct Declines;
impl Handler for Declines {
    fn name(&self) -> &str {
        "picky"
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async { HandlerOutcome::Ignore("not ours: no tenant".into()) })
    }
}

#[tokio::test]
async fn a_handler_that_declines_makes_the_message_ignored_with_its_reason_and_no_alarm() {
    let w = World::new();
    let p = w.processor(registry(Arc::new(Declines)));
    let m = w.ingest("evt_1", "invoice.paid").await;
    assert_eq!(p.process(m.clone()).await.unwrap(), Outcome::Ignored);
    let after = w.store.message(&m.key()).unwrap();
    assert_eq!(after.status, Status::Ignored);
    assert_eq!(after.attempts, 1, "the handler ran once");
    assert_eq!(after.last_error, None, "not an error");
    assert_eq!(after.expires_at, Some(T0 / 1000 + 30 * 86_400));
    let last = after.history.last().unwrap();
    assert_eq!(
        (last.status, last.note.as_str(), last.attempt),
        (
            Status::Ignored,
            "ignored by picky: not ours: no tenant",
            Some(1)
        )
    );
    assert!(
        w.quarantine.quarantined().is_empty(),
        "no quarantine notice"
    );
    assert_eq!(futures_len(&w, T0 + 86_400_000).await, 0);
    assert_eq!(
        p.process(after).await.unwrap(),
        Outcome::Skipped(Skip::Terminal),
        "terminal like any ignored message"
    );
}

async fn futures_len(w: &World, now: i64) -> usize {
    let mut n = 0;
    for shard in crate::store::schema::open_shards() {
        n += w.store.due(&shard, now, 1000).await.unwrap().len();
    }
    n
}

#[tokio::test]
async fn effect_commits_once_even_when_the_record_comes_twice() {
    let w = World::new();
    let h = Scripted::new(0);
    let p = w.processor(registry(h.clone()));
    let m = w.ingest("evt_1", "invoice.paid").await;
    assert_eq!(p.process(m.clone()).await.unwrap(), Outcome::Processed);
    assert_eq!(
        w.store.write_requests(),
        2,
        "one put (ingest) and one transaction (process)"
    );
    assert_eq!(
        p.process(m.clone()).await.unwrap(),
        Outcome::Skipped(Skip::Conflict),
        "the same stream image again"
    );
    assert_eq!(
        p.process_key(&m.key()).await.unwrap(),
        Outcome::Skipped(Skip::Terminal)
    );
    assert_eq!(w.store.effects().len(), 1, "effect exactly once");
    assert_eq!(w.metrics.count("Committed"), 1, "its metric exactly once");
    assert_eq!(
        w.metrics.emitted()[0].0,
        T0,
        "stamped with the processor's clock"
    );
    let after = w.store.message(&m.key()).unwrap();
    assert_eq!(
        (after.status, after.attempts, after.version),
        (Status::Processed, 1, 1)
    );
    assert!(after.expires_at.is_some());
}

#[tokio::test]
async fn a_stale_image_loses_the_race_without_effect() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(0)));
    let m = w.ingest("evt_1", "invoice.paid").await;
    let (a, b) = tokio::join!(p.process(m.clone()), p.process(m.clone()));
    let mut outcomes = vec![a.unwrap(), b.unwrap()];
    outcomes.sort_by_key(|o| o.as_str());
    assert_eq!(
        outcomes,
        vec![Outcome::Processed, Outcome::Skipped(Skip::Conflict)]
    );
    assert_eq!(w.store.effects().len(), 1);
    assert_eq!(
        w.metrics.count("Committed"),
        1,
        "the losing racer's outcome is discarded, metrics and all"
    );
}

#[tokio::test]
async fn transient_failures_retry_with_backoff_then_succeed_once() {
    let w = World::new();
    let h = Scripted::new(2);
    let p = w.processor(registry(h.clone()));
    let m = w.ingest("evt_1", "invoice.paid").await;
    let key = m.key();

    // Attempt 1 fails: retrying, due after half the first ceiling (jitter pinned at 0.5).
    assert_eq!(
        p.process(m).await.unwrap(),
        Outcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(1)
        }
    );
    let after = w.store.message(&key).unwrap();
    assert_eq!((after.status, after.attempts), (Status::Retrying, 1));
    assert_eq!(after.next_attempt_at, Some(T0 + 1_000));
    assert_eq!(
        after.last_error.as_deref(),
        Some("upstream timeout (call 1)")
    );
    assert_eq!(
        w.retry.take_scheduled(),
        vec![(key.clone(), Duration::from_secs(1))]
    );

    // Too early: left for its scheduled delivery.
    assert_eq!(
        p.process_key(&key).await.unwrap(),
        Outcome::Skipped(Skip::NotDue)
    );
    w.clock.advance_millis(1_000);
    assert_eq!(
        p.process_key(&key).await.unwrap(),
        Outcome::Retrying {
            attempt: 2,
            delay: Duration::from_secs(2)
        }
    );
    w.clock.advance_millis(2_000);
    assert_eq!(p.process_key(&key).await.unwrap(), Outcome::Processed);

    let after = w.store.message(&key).unwrap();
    assert_eq!((after.status, after.attempts), (Status::Processed, 3));
    let failures: Vec<_> = after.history.iter().filter(|e| e.error.is_some()).collect();
    assert_eq!(failures.len(), 2, "both failed attempts are journaled");
    assert!(failures
        .iter()
        .all(|e| e.duration_ms.is_some() && e.attempt.is_some()));
    assert_eq!(w.store.effects().len(), 1);
    assert_eq!(h.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn poison_message_is_quarantined_after_five_attempts_and_replay_recovers_it() {
    let w = World::new();
    let h = Scripted::new(5);
    let p = w.processor(registry(h.clone()));
    let key = w.ingest("evt_poison", "invoice.paid").await.key();
    let mut outcomes = Vec::new();
    for _ in 0..5 {
        w.clock.advance_millis(120_000);
        outcomes.push(p.process_key(&key).await.unwrap());
    }
    assert!(
        outcomes[..4]
            .iter()
            .all(|o| matches!(o, Outcome::Retrying { .. })),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes[4],
        Outcome::Failed {
            attempts: 5,
            permanent: false
        }
    );
    let notices = w.quarantine.quarantined();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (notices[0].attempts, notices[0].reason.as_str()),
        (5, "exhausted")
    );
    assert_eq!(notices[0].last_error, "upstream timeout (call 5)");
    let failed = w.store.message(&key).unwrap();
    assert_eq!(
        (failed.status, failed.expires_at),
        (Status::Failed, None),
        "failed messages never expire"
    );
    assert_eq!(futures_len(&w, i64::MAX).await, 0);
    assert_eq!(failed.notice_pending, None, "the notice is recorded sent");
    let failed_at = failed
        .history
        .iter()
        .find(|e| e.status == Status::Failed)
        .map(|e| e.at);
    assert_eq!(
        w.store.failed_entry(&key),
        failed_at.map(|at| (crate::store::schema::failed_shard(&key), at)),
        "listed among the failed, at the time it failed"
    );
    assert_eq!(
        failed.history.last().map(|e| e.note.as_str()),
        Some("quarantine notice sent")
    );

    // Further deliveries do nothing; a replay (the handler is fixed now) processes it once.
    assert_eq!(
        p.process_key(&key).await.unwrap(),
        Outcome::Skipped(Skip::Terminal)
    );
    w.retry.take_scheduled();
    let replayed = crate::ops::replay(&*w.store, &*w.retry, &*w.clock, &key, "alice", false)
        .await
        .unwrap();
    assert_eq!(replayed, crate::ops::ReplayOutcome::Replayed);
    let pending = w.store.message(&key).unwrap();
    assert_eq!((pending.status, pending.attempts), (Status::Pending, 0));
    assert_eq!(w.store.failed_entry(&key), None, "back among the open");
    assert_eq!(futures_len(&w, i64::MAX).await, 1, "due in its OPEN# shard");
    assert!(pending
        .history
        .last()
        .unwrap()
        .note
        .contains("replayed by alice"));
    assert_eq!(
        w.retry.take_scheduled(),
        vec![(key.clone(), Duration::ZERO)],
        "re-driven"
    );
    assert_eq!(p.process_key(&key).await.unwrap(), Outcome::Processed);
    assert_eq!(w.store.effects().len(), 1);
    let again = crate::ops::replay(&*w.store, &*w.retry, &*w.clock, &key, "alice", false)
        .await
        .unwrap();
    assert_eq!(
        again,
        crate::ops::ReplayOutcome::NotReplayable(Status::Processed)
    );
}

#[tokio::test]
async fn permanent_failure_quarantines_at_once() {
    let w = World::new();
    let h = Arc::new(Scripted {
        calls: AtomicU32::new(0),
        fail_first: 9,
        permanent: true,
        claim: false,
        effects: 1,
    });
    let p = w.processor(registry(h));
    let m = w.ingest("evt_1", "invoice.paid").await;
    assert_eq!(
        p.process(m).await.unwrap(),
        Outcome::Failed {
            attempts: 1,
            permanent: true
        }
    );
    assert_eq!(w.quarantine.quarantined()[0].reason.as_str(), "permanent");
}

/// Refuses every message as untrustworthy, with an alarm.
struct Refuses;
impl Handler for Refuses {
    fn name(&self) -> &str {
        "strict"
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async {
            HandlerOutcome::Refused {
                reason: "forged".into(),
                metrics: vec![Metric::count("Test", "Forged", 1)],
            }
        })
    }
}

#[tokio::test]
async fn a_refusal_quarantines_at_once_and_counts_its_alarm_once() {
    let w = World::new();
    let p = w.processor(registry(Arc::new(Refuses)));
    let m = w.ingest("evt_1", "invoice.paid").await;
    assert_eq!(
        p.process(m.clone()).await.unwrap(),
        Outcome::Failed {
            attempts: 1,
            permanent: true
        }
    );
    let after = w.store.message(&m.key()).unwrap();
    assert_eq!(after.status, Status::Failed);
    assert_eq!(after.last_error.as_deref(), Some("forged"));
    assert_eq!(w.quarantine.quarantined()[0].reason.as_str(), "permanent");
    assert_eq!(w.metrics.count("Forged"), 1);
    // Delivered again: terminal, nothing counted twice.
    assert_eq!(
        p.process(after).await.unwrap(),
        Outcome::Skipped(Skip::Terminal)
    );
    assert_eq!(w.metrics.count("Forged"), 1);
}

#[tokio::test]
async fn too_many_effects_for_one_transaction_is_permanent() {
    let w = World::new();
    let h = Arc::new(Scripted {
        calls: AtomicU32::new(0),
        fail_first: 0,
        permanent: false,
        claim: false,
        effects: 100,
    });
    let p = w.processor(registry(h));
    let m = w.ingest("evt_1", "invoice.paid").await;
    assert_eq!(
        p.process(m).await.unwrap(),
        Outcome::Failed {
            attempts: 1,
            permanent: true
        }
    );
    assert!(w.store.effects().is_empty());
}

#[tokio::test]
async fn a_claim_blocks_others_and_an_expired_lease_is_reaped_and_retaken() {
    let w = World::new();
    let p = w.processor(Registry::new().on("stripe", "invoice.paid", Arc::new(Hangs)));
    let key = w.ingest("evt_1", "invoice.paid").await.key();
    // The invocation claims, then "crashes" (its future is dropped mid-handler).
    let crashed = tokio::time::timeout(Duration::from_millis(50), p.process_key(&key)).await;
    assert!(crashed.is_err());
    let claimed = w.store.message(&key).unwrap();
    assert_eq!((claimed.status, claimed.attempts), (Status::Processing, 1));
    assert_eq!(claimed.lease_until, Some(T0 + 60_000));

    let h = Scripted {
        calls: AtomicU32::new(0),
        fail_first: 0,
        permanent: false,
        claim: true,
        effects: 0,
    };
    let p2 = w.processor(registry(Arc::new(h)));
    assert_eq!(
        p2.process_key(&key).await.unwrap(),
        Outcome::Skipped(Skip::Leased),
        "the lease is live"
    );

    let reaper = w.reaper(100);
    assert_eq!(
        reaper.run().await.unwrap().due,
        0,
        "not due while the lease holds"
    );
    w.clock.advance_millis(60_001);
    let report = reaper.run().await.unwrap();
    assert_eq!((report.due, report.redriven), (1, 1));
    assert_eq!(report.by_status.get("processing"), Some(&1));
    // The claim counted attempt 1; the reaper records it lost (not a second time) and re-drives
    // it after the first backoff (jitter 0.5 of 2 s).
    let lost = w.store.message(&key).unwrap();
    assert_eq!((lost.status, lost.attempts), (Status::Retrying, 1));
    assert_eq!(
        w.retry.take_scheduled(),
        vec![(key.clone(), Duration::from_secs(1))]
    );
    w.clock.advance_millis(1_000);
    assert_eq!(p2.process_key(&key).await.unwrap(), Outcome::Processed);
    let done = w.store.message(&key).unwrap();
    assert_eq!((done.status, done.attempts), (Status::Processed, 2));
}

#[tokio::test]
async fn the_reaper_finds_pending_messages_the_stream_never_delivered() {
    let w = World::new();
    let reaper = w.reaper(100);
    w.ingest("evt_1", "invoice.paid").await;
    w.ingest("evt_2", "invoice.paid").await;
    assert_eq!(
        reaper.run().await.unwrap().due,
        0,
        "within the grace period"
    );
    w.clock
        .advance_millis(crate::store::schema::PENDING_GRACE_MS);
    let capped = w.reaper(1);
    assert_eq!(
        capped.run().await.unwrap().due,
        1,
        "at most max_per_run per run"
    );
    let report = reaper.run().await.unwrap();
    assert_eq!((report.due, report.redriven), (1, 1), "the other one");
    assert_eq!(
        report.oldest_due,
        Some(T0 + crate::store::schema::PENDING_GRACE_MS)
    );
    assert_eq!(w.retry.take_scheduled().len(), 2);
    assert_eq!(
        reaper.run().await.unwrap().due,
        0,
        "their deadlines moved past the re-drive"
    );
}

#[tokio::test]
async fn store_outage_is_an_infrastructure_error() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(0)));
    let m = w.ingest("evt_1", "invoice.paid").await;
    w.store.set_down(true);
    assert!(matches!(
        p.process(m.clone()).await,
        Err(InfraError::Store(_))
    ));
    w.store.set_down(false);
    assert_eq!(
        p.process(m).await.unwrap(),
        Outcome::Processed,
        "nothing was lost"
    );
}

#[tokio::test]
async fn retry_queue_outage_leaves_the_retry_to_the_reaper_due_at_the_retry_time() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(1)));
    let m = w.ingest("evt_1", "invoice.paid").await;
    let key = m.key();
    w.retry.set_down(true);
    // The attempt is journaled and the message is durably `retrying` with its due time in the open
    // index: a lost retry request is not worth failing the batch for.
    assert_eq!(
        p.process(m).await.unwrap(),
        Outcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(1)
        }
    );
    assert!(w.retry.scheduled().is_empty());
    let after = w.store.message(&key).unwrap();
    assert_eq!(after.status, Status::Retrying);
    assert_eq!(after.next_attempt_at, Some(T0 + 1_000));
    assert_eq!(
        after.open_due,
        Some(T0 + 1_000),
        "no retry is on its way: no grace is owed to one"
    );
    assert_eq!(
        after.history.len(),
        2,
        "the bookkeeping write adds no entry"
    );
    w.retry.set_down(false);
    let reaper = w.reaper(100);
    assert_eq!(
        reaper.run().await.unwrap().due,
        0,
        "not before the retry time"
    );
    w.clock.advance_millis(1_000);
    assert_eq!(
        reaper.run().await.unwrap().redriven,
        1,
        "the reaper's next run after the retry time re-drives it, not one after the grace"
    );
    // The scheduled attempt (2) never reported: counted lost, re-driven after its backoff.
    assert_eq!(
        w.retry.take_scheduled(),
        vec![(key.clone(), Duration::from_secs(2))]
    );
    let m = w.store.message(&key).unwrap();
    assert_eq!((m.status, m.attempts), (Status::Retrying, 2));
}

#[tokio::test]
async fn quarantine_queue_outage_leaves_the_notice_to_the_reaper() {
    let w = World::new();
    let h = Arc::new(Scripted {
        calls: AtomicU32::new(0),
        fail_first: 9,
        permanent: true,
        claim: false,
        effects: 1,
    });
    let p = w.processor(registry(h));
    let m = w.ingest("evt_1", "invoice.paid").await;
    w.quarantine.set_down(true);
    assert_eq!(
        p.process(m.clone()).await.unwrap(),
        Outcome::Failed {
            attempts: 1,
            permanent: true
        },
        "failed is committed first; the notice is pending"
    );
    let failed = w.store.message(&m.key()).unwrap();
    assert_eq!(failed.status, Status::Failed);
    assert_eq!(
        failed.notice_pending.as_ref().map(|n| n.reason.as_str()),
        Some("permanent")
    );
    assert!(w.quarantine.quarantined().is_empty());
    assert_eq!(
        w.store.failed_entry(&m.key()),
        None,
        "its entry is the notice's deadline, in its OPEN# shard, until the notice is sent"
    );
    w.quarantine.set_down(false);
    let reaper = w.reaper(100);
    assert_eq!(reaper.run().await.unwrap().due, 0, "its sender's time");
    w.clock.advance_millis(60_000);
    let report = reaper.run().await.unwrap();
    assert_eq!((report.due, report.notices_sent), (1, 1));
    let notices = w.quarantine.quarantined();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (notices[0].reason.as_str(), notices[0].failed_at),
        ("permanent", T0),
        "the notice decided when it failed"
    );
    let after = w.store.message(&m.key()).unwrap();
    assert_eq!((after.status, after.notice_pending), (Status::Failed, None));
    assert_eq!(futures_len(&w, i64::MAX).await, 0, "out of the open index");
    assert_eq!(
        w.store.failed_entry(&m.key()),
        Some((crate::store::schema::failed_shard(&m.key()), T0)),
        "among the failed, at the time it failed (not the notice's)"
    );
    assert_eq!(reaper.run().await.unwrap().due, 0);
    assert_eq!(w.quarantine.quarantined().len(), 1, "exactly one notice");
}

/// Commits a `Create` of an item that already exists for the first `conflicts` calls.
struct Conflicting {
    calls: AtomicU32,
    conflicts: u32,
}

impl Handler for Conflicting {
    fn name(&self) -> &str {
        "conflicting"
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            let pk = if n <= self.conflicts {
                "taken".to_string()
            } else {
                format!("fresh-{n}")
            };
            let item = crate::store::Item::from([
                (
                    "pk".to_string(),
                    aws_sdk_dynamodb::types::AttributeValue::S(pk),
                ),
                (
                    "sk".to_string(),
                    aws_sdk_dynamodb::types::AttributeValue::S("x".into()),
                ),
            ]);
            HandlerOutcome::Commit(
                Commit::new(vec![Effect::Create(item)]).with_metrics([committed()]),
            )
        })
    }
}

#[tokio::test]
async fn an_effect_conflict_reruns_the_handler_on_fresh_state_then_counts_as_a_failure() {
    let w = World::new();
    w.store.put_item(crate::store::Item::from([
        (
            "pk".to_string(),
            aws_sdk_dynamodb::types::AttributeValue::S("taken".into()),
        ),
        (
            "sk".to_string(),
            aws_sdk_dynamodb::types::AttributeValue::S("x".into()),
        ),
    ]));
    let twice = Arc::new(Conflicting {
        calls: AtomicU32::new(0),
        conflicts: 2,
    });
    let p = w.processor(registry(twice.clone()));
    let m = w.ingest("evt_1", "invoice.paid").await;
    assert_eq!(p.process(m).await.unwrap(), Outcome::Processed);
    assert_eq!(
        twice.calls.load(Ordering::SeqCst),
        3,
        "two conflicts, re-run at once, then committed"
    );
    assert_eq!(
        w.metrics.count("Committed"),
        1,
        "the discarded outcomes of the conflicting runs emit nothing"
    );
    assert_eq!(
        w.store
            .message(&MessageKey::new(
                SourceName::parse("stripe").unwrap(),
                EventId::parse("evt_1").unwrap()
            ))
            .unwrap()
            .attempts,
        1
    );

    let always = Arc::new(Conflicting {
        calls: AtomicU32::new(0),
        conflicts: u32::MAX,
    });
    let p = w.processor(registry(always.clone()));
    let m = w.ingest("evt_2", "invoice.paid").await;
    assert!(matches!(
        p.process(m).await.unwrap(),
        Outcome::Retrying { attempt: 1, .. }
    ));
    assert_eq!(
        always.calls.load(Ordering::SeqCst),
        1 + EFFECT_CONFLICT_RERUNS
    );
    assert_eq!(
        w.metrics.count("Committed"),
        1,
        "nothing from a run that never committed"
    );
}

mod faults;
mod records;

#[tokio::test]
async fn a_retrying_write_whose_answer_was_lost_still_sends_its_retry() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(1)));
    let m = w.ingest("evt_1", "invoice.paid").await;
    let key = m.key();
    w.store.lose_replies(1);
    assert_eq!(
        p.process(m.clone()).await.unwrap(),
        Outcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(1)
        },
        "the write applied: it is ours, not a conflict"
    );
    assert_eq!(
        w.retry.take_scheduled(),
        vec![(key.clone(), Duration::from_secs(1))]
    );
    // A stale copy (the stream's image, re-delivered): its commit meets a real conflict, nothing sent.
    assert_eq!(
        p.process(m).await.unwrap(),
        Outcome::Skipped(Skip::Conflict)
    );
    assert!(w.retry.take_scheduled().is_empty());
}
