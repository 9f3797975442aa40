//! Poison messages always end, store errors by their cause, one notice per failure, bounded
//! history: the processor and the reaper together, on the in-memory store, with a manual clock.

use super::*;
use crate::message::HISTORY_LIMIT;
use crate::store::schema::PENDING_GRACE_MS;
use crate::store::{DueMessage, ListFilter, RepeatRecord};
use std::sync::Mutex;

/// Panics on every call.
struct Panics;
impl Handler for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async { panic!("index out of bounds: the len is 0 but the index is 0") })
    }
}

/// Never finishes, and claims nothing: its effects would be DynamoDB writes (a timeout).
struct HangsUnclaimed;
impl Handler for HangsUnclaimed {
    fn name(&self) -> &str {
        "hangs-unclaimed"
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(std::future::pending())
    }
}

/// The memory store, with commits (transitions carrying effects) failing with a chosen error.
struct FailCommits {
    inner: Arc<MemoryStore>,
    /// `throttled`, `invalid` or `unavailable`; how many more commits fail (`u32::MAX`: all).
    error: &'static str,
    left: Mutex<u32>,
}

#[derive(Debug, thiserror::Error)]
#[error("simulated: {0}")]
struct Simulated(&'static str);

impl MessageStore for FailCommits {
    async fn get(&self, key: &MessageKey) -> Result<Option<StoredMessage>, StoreError> {
        self.inner.get(key).await
    }
    async fn transition(
        &self,
        key: &MessageKey,
        expected_version: u64,
        t: &Transition,
        effects: Vec<Effect>,
    ) -> Result<Applied, StoreError> {
        let fail = !effects.is_empty() && {
            let mut left = self.left.lock().unwrap();
            let fail = *left > 0;
            *left = left.saturating_sub(1);
            fail
        };
        if fail {
            let e = Box::new(Simulated(self.error));
            return Err(match self.error {
                "throttled" => StoreError::Throttled(e),
                "invalid" => StoreError::Invalid(e),
                _ => StoreError::Unavailable(e),
            });
        }
        self.inner
            .transition(key, expected_version, t, effects)
            .await
    }
    async fn due(
        &self,
        shard: &str,
        now: i64,
        limit: usize,
    ) -> Result<Vec<DueMessage>, StoreError> {
        self.inner.due(shard, now, limit).await
    }
    async fn list(&self, f: &ListFilter, limit: usize) -> Result<Vec<StoredMessage>, StoreError> {
        self.inner.list(f, limit).await
    }
    async fn deliveries(&self, key: &MessageKey) -> Result<Vec<RepeatRecord>, StoreError> {
        self.inner.deliveries(key).await
    }
    async fn repeat_count(&self, key: &MessageKey) -> Result<u64, StoreError> {
        self.inner.repeat_count(key).await
    }
    async fn purge(&self, key: &MessageKey, v: u64) -> Result<Applied, StoreError> {
        self.inner.purge(key, v).await
    }
}

type FailingP =
    Processor<FailCommits, Arc<MemoryRetryQueue>, Arc<MemoryQuarantine>, Arc<ManualClock>>;

/// A processor whose next `times` commits fail with `error`.
fn failing_commits(w: &World, error: &'static str, times: u32, h: Arc<dyn Handler>) -> FailingP {
    let store = FailCommits {
        inner: w.store.clone(),
        error,
        left: Mutex::new(times),
    };
    Processor::new(
        store,
        w.retry.clone(),
        w.quarantine.clone(),
        w.clock.clone(),
        registry(h),
        w.processor(Registry::new()).config,
    )
    .with_jitter(|| 0.5)
    .with_metrics(w.metrics.clone())
}

/// Delivers `key` to `p` as an invocation that dies if the attempt takes longer than 50 ms.
async fn deliver_or_die(p: &P, key: &MessageKey) {
    let _ = tokio::time::timeout(Duration::from_millis(50), p.process_key(key)).await;
}

/// Moves the clock to the message's deadline in the open index.
fn to_deadline(w: &World, key: &MessageKey) {
    let due = w.store.message(key).unwrap().open_due.unwrap();
    w.clock.set_millis(due.max(w.clock.now_millis()));
}

#[tokio::test]
async fn a_panicking_handler_is_a_failed_attempt_and_ends_failed_with_one_notice() {
    let w = World::new();
    let p = w.processor(registry(Arc::new(Panics)));
    let key = w.ingest("evt_panic", "invoice.paid").await.key();
    let mut outcomes = Vec::new();
    for _ in 0..5 {
        w.clock.advance_millis(120_000);
        outcomes.push(p.process_key(&key).await.unwrap().as_str());
    }
    assert_eq!(
        outcomes,
        ["retrying", "retrying", "retrying", "retrying", "failed"]
    );
    let m = w.store.message(&key).unwrap();
    assert_eq!((m.status, m.attempts), (Status::Failed, 5));
    assert!(m
        .last_error
        .unwrap()
        .starts_with("the handler panicked: index out of bounds"));
    assert_eq!(w.quarantine.quarantined().len(), 1);
}

#[tokio::test]
async fn an_attempt_that_never_reports_is_counted_by_the_reaper_until_the_message_fails() {
    for claim in [false, true] {
        let w = World::new();
        let handler: Arc<dyn Handler> = if claim {
            Arc::new(Hangs)
        } else {
            Arc::new(HangsUnclaimed)
        };
        let p = w.processor(registry(handler));
        let reaper = w.reaper(100);
        let key = w.ingest("evt_hang", "invoice.paid").await.key();
        let mut redrives = 0;
        for round in 1..=10 {
            // Every delivery dies (the function timed out); the reaper finds the deadline passed.
            deliver_or_die(&p, &key).await;
            to_deadline(&w, &key);
            let report = reaper.run().await.unwrap();
            assert_eq!(report.due, 1, "claim {claim}, round {round}");
            redrives += report.redriven;
            let m = w.store.message(&key).unwrap();
            if m.status == Status::Failed {
                assert_eq!((round, m.attempts), (5, 5), "claim {claim}");
                break;
            }
            assert_eq!(
                (m.status, m.attempts),
                (Status::Retrying, round),
                "claim {claim}"
            );
            // The re-drive arrives after its backoff.
            w.clock.set_millis(m.next_attempt_at.unwrap());
        }
        assert_eq!(
            redrives, 4,
            "claim {claim}: attempts 1-4 re-driven, the 5th fails it"
        );
        assert_eq!(w.retry.take_scheduled().len(), 4);
        let notices = w.quarantine.quarantined();
        assert_eq!(notices.len(), 1, "claim {claim}: exactly one notice");
        assert_eq!(
            (notices[0].attempts, notices[0].reason.as_str()),
            (5, "exhausted")
        );
        let m = w.store.message(&key).unwrap();
        assert_eq!(
            m.history.iter().rev().nth(1).map(|e| e.note.as_str()),
            Some(NOTE_LOST_LAST)
        );
        // The end: nothing due any more, however long we wait.
        w.clock.advance_millis(86_400_000);
        assert_eq!(reaper.run().await.unwrap().due, 0);
        assert_eq!(
            p.process_key(&key).await.unwrap(),
            Outcome::Skipped(Skip::Terminal)
        );
    }
}

#[tokio::test]
async fn a_store_that_keeps_failing_the_commit_ends_failed() {
    let w = World::new();
    let p = failing_commits(&w, "unavailable", u32::MAX, Scripted::new(0));
    let reaper = w.reaper(100);
    let key = w.ingest("evt_store", "invoice.paid").await.key();
    for round in 1..=5 {
        assert!(
            matches!(p.process_key(&key).await, Err(InfraError::Store(_))),
            "round {round}: an infrastructure error (the record is delivered again)"
        );
        to_deadline(&w, &key);
        reaper.run().await.unwrap();
        let m = w.store.message(&key).unwrap();
        assert_eq!(m.attempts, round);
        if round < 5 {
            w.clock.set_millis(m.next_attempt_at.unwrap());
        }
    }
    let m = w.store.message(&key).unwrap();
    assert_eq!(m.status, Status::Failed);
    assert_eq!(w.quarantine.quarantined().len(), 1);
    assert!(w.store.effects().is_empty(), "nothing was ever committed");
}

#[tokio::test]
async fn a_commit_refused_as_invalid_fails_permanently_with_the_reason() {
    let w = World::new();
    let p = failing_commits(&w, "invalid", 1, Scripted::new(0));
    let m = w.ingest("evt_big", "invoice.paid").await;
    assert_eq!(
        p.process(m.clone()).await.unwrap(),
        Outcome::Failed {
            attempts: 1,
            permanent: true
        }
    );
    let after = w.store.message(&m.key()).unwrap();
    assert_eq!(
        after.last_error.as_deref(),
        Some("the store refused the handler's writes: the store refused the request as invalid: simulated: invalid")
    );
    let notice = &w.quarantine.quarantined()[0];
    assert_eq!(notice.reason, crate::message::FailureReason::Permanent);
    assert!(notice.last_error.contains("refused"));
}

#[tokio::test]
async fn a_throttled_commit_is_retried_with_backoff_and_counted_as_throttling() {
    let w = World::new();
    let p = failing_commits(&w, "throttled", 1, Scripted::new(0));
    let m = w.ingest("evt_slow", "invoice.paid").await;
    assert_eq!(
        p.process(m.clone()).await.unwrap(),
        Outcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(1)
        }
    );
    let throttled: Vec<Metric> = w
        .metrics
        .emitted()
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.name == STORE_THROTTLED)
        .collect();
    assert_eq!(throttled.len(), 1);
    assert_eq!(throttled[0].namespace, METRICS_NAMESPACE);
    assert_eq!(
        throttled[0].properties,
        vec![("Operation".to_string(), "commit".to_string())]
    );
    w.clock.advance_millis(1_000);
    assert_eq!(p.process_key(&m.key()).await.unwrap(), Outcome::Processed);
    assert_eq!(w.store.effects().len(), 1);
}

#[tokio::test]
async fn two_invocations_failing_the_same_message_send_one_notice() {
    let w = World::new();
    let h = Arc::new(Scripted {
        calls: AtomicU32::new(0),
        fail_first: 9,
        permanent: true,
        claim: false,
        effects: 1,
    });
    let p = w.processor(registry(h));
    let m = w.ingest("evt_twice", "invoice.paid").await;
    let (a, b) = tokio::join!(p.process(m.clone()), p.process(m.clone()));
    let mut outcomes = vec![a.unwrap().as_str(), b.unwrap().as_str()];
    outcomes.sort_unstable();
    assert_eq!(outcomes, ["failed", "skipped_conflict"]);
    assert_eq!(w.quarantine.quarantined().len(), 1, "only the winner sends");
}

#[tokio::test]
async fn a_scheduled_retry_is_counted_once() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(1)));
    let reaper = w.reaper(100);
    let key = w.ingest("evt_once", "invoice.paid").await.key();
    w.clock.advance_millis(1);
    assert!(matches!(
        p.process_key(&key).await.unwrap(),
        Outcome::Retrying { attempt: 1, .. }
    ));
    let due = w.store.message(&key).unwrap().next_attempt_at.unwrap();
    // The retry's delivery is a little late (the queue was busy): still within its grace.
    w.clock.set_millis(due + PENDING_GRACE_MS - 1);
    assert_eq!(
        reaper.run().await.unwrap().due,
        0,
        "on its way: not re-driven"
    );
    assert_eq!(p.process_key(&key).await.unwrap(), Outcome::Processed);
    let m = w.store.message(&key).unwrap();
    assert_eq!(
        m.attempts, 2,
        "the failed attempt and the retry; nothing counted twice"
    );
    w.clock.advance_millis(86_400_000);
    assert_eq!(reaper.run().await.unwrap().due, 0);
}

#[tokio::test]
async fn history_stays_bounded_through_retries_and_replays() {
    let w = World::new();
    let p = w.processor(registry(Scripted::new(u32::MAX)));
    let key = w.ingest("evt_long", "invoice.paid").await.key();
    for _ in 0..10 {
        for _ in 0..5 {
            w.clock.advance_millis(120_000);
            p.process_key(&key).await.unwrap();
        }
        assert_eq!(w.store.message(&key).unwrap().status, Status::Failed);
        crate::ops::replay(&*w.store, &*w.retry, &*w.clock, &key, "ops", false)
            .await
            .unwrap();
    }
    let m = w.store.message(&key).unwrap();
    assert_eq!(m.history.len(), HISTORY_LIMIT);
    // received + 10 × (5 attempts + notice sent + replayed)
    assert_eq!(m.history_count(), 1 + 10 * 7);
    assert_eq!(m.history.last().map(|e| e.status), Some(Status::Pending));
    assert_eq!(
        w.quarantine.quarantined().len(),
        10,
        "one notice per failure"
    );
}
