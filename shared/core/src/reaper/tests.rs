//! The reaper on the in-memory store: a fair budget over the shards, stale index entries, and
//! concurrent runs taking over a pending notice.

use super::*;
use crate::clock::ManualClock;
use crate::domain::{BodyDigest, EventId, MessageKey, SourceName, Status};
use crate::message::PendingNotice;
use crate::queue::memory::{MemoryQuarantine, MemoryRetryQueue};
use crate::store::memory::MemoryStore;
use crate::store::schema::{open_shard, PENDING_GRACE_MS};
use crate::store::{Inbox, NewMessage, Transition};

const T0: i64 = 1_700_000_000_000;

struct World {
    store: Arc<MemoryStore>,
    retry: Arc<MemoryRetryQueue>,
    quarantine: Arc<MemoryQuarantine>,
    clock: Arc<ManualClock>,
}

type R = Reaper<Arc<MemoryStore>, Arc<MemoryRetryQueue>, Arc<MemoryQuarantine>, Arc<ManualClock>>;

impl World {
    fn new() -> Self {
        Self {
            store: Arc::new(MemoryStore::new()),
            retry: Arc::new(MemoryRetryQueue::new()),
            quarantine: Arc::new(MemoryQuarantine::new()),
            clock: Arc::new(ManualClock::at_millis(T0)),
        }
    }

    fn reaper(&self, max_per_run: usize) -> R {
        Reaper::new(
            self.store.clone(),
            self.retry.clone(),
            self.quarantine.clone(),
            self.clock.clone(),
            ReaperSettings::with_budget(max_per_run),
        )
        .with_jitter(|| 0.0)
    }

    async fn ingest(&self, key: &MessageKey) {
        let body = b"{}".to_vec();
        self.store
            .put_if_absent(&NewMessage {
                key: key.clone(),
                event_type: None,
                received_at_ms: T0,
                body_digest: Some(BodyDigest::of(&body)),
                body,
                headers: Vec::new(),
                provider_id: None,
                unidentified: None,
                batch: None,
            })
            .await
            .unwrap();
    }
}

fn key(id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse("stripe").unwrap(),
        EventId::parse(id).unwrap(),
    )
}

/// `n` keys whose open-index shard is `shard`.
fn keys_in(shard: &str, n: usize, prefix: &str) -> Vec<MessageKey> {
    (0..)
        .map(|i| key(&format!("{prefix}_{i}")))
        .filter(|k| open_shard(k) == shard)
        .take(n)
        .collect()
}

/// How many re-drives went to each shard.
fn redriven_by_shard(w: &World) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for (k, _) in w.retry.take_scheduled() {
        *by.entry(open_shard(&k)).or_default() += 1;
    }
    by
}

#[tokio::test]
async fn a_thousand_stuck_messages_in_one_shard_do_not_starve_the_others() {
    let w = World::new();
    for k in keys_in("OPEN#0", 1000, "stuck") {
        w.ingest(&k).await;
    }
    let others: Vec<MessageKey> = open_shards()
        .skip(1)
        .flat_map(|s| keys_in(&s, 1, "other"))
        .collect();
    for k in &others {
        w.ingest(k).await;
    }
    w.clock.advance_millis(PENDING_GRACE_MS);
    let report = w.reaper(100).run().await.unwrap();
    assert_eq!((report.due, report.redriven, report.errors), (100, 100, 0));
    let by = redriven_by_shard(&w);
    let shards = usize::from(crate::store::schema::OPEN_SHARDS);
    assert_eq!(by.len(), shards, "every shard was served: {by:?}");
    assert_eq!(
        by.get("OPEN#0"),
        Some(&(100 - (shards - 1))),
        "shard 0 got what the others left"
    );
    for k in &others {
        assert_eq!(
            w.store.message(k).unwrap().status,
            Status::Retrying,
            "{k:?}"
        );
    }
    // The next run goes on with shard 0's backlog.
    let report = w.reaper(100).run().await.unwrap();
    assert_eq!(report.redriven, 100);
    assert_eq!(redriven_by_shard(&w).get("OPEN#0"), Some(&100));
}

#[tokio::test]
async fn a_budget_smaller_than_the_shards_serves_distinct_shards() {
    let w = World::new();
    for s in open_shards() {
        for k in keys_in(&s, 3, "k") {
            w.ingest(&k).await;
        }
    }
    w.clock.advance_millis(PENDING_GRACE_MS);
    assert_eq!(w.reaper(5).run().await.unwrap().redriven, 5);
    let by = redriven_by_shard(&w);
    assert_eq!((by.len(), by.values().max()), (5, Some(&1)), "{by:?}");
}

#[tokio::test]
async fn entries_no_longer_due_when_read_are_skipped() {
    let w = World::new();
    let k = key("evt_moved");
    w.ingest(&k).await;
    w.clock.advance_millis(PENDING_GRACE_MS);
    // Between the index query and the read, another invocation processed it: simulated by a
    // reap of an entry whose item is terminal.
    let m = w.store.message(&k).unwrap();
    let done = Transition {
        attempts: 1,
        ..Transition::of(
            &m,
            Status::Processed,
            crate::message::HistoryEntry::new(T0, Status::Processed, "done"),
        )
    };
    w.store.transition(&k, 0, &done, Vec::new()).await.unwrap();
    let d = DueMessage {
        key: k.clone(),
        status: Status::Pending,
        due: T0,
    };
    let reaper = w.reaper(10);
    assert_eq!(
        reaper.reap(&d, w.clock.now_millis()).await.unwrap(),
        Reaped::Skipped
    );
    assert!(w.retry.scheduled().is_empty());
    assert_eq!(w.store.message(&k).unwrap().version, 1, "nothing written");
}

#[tokio::test]
async fn concurrent_runs_send_a_pending_notice_once() {
    let w = World::new();
    let k = key("evt_notice");
    w.ingest(&k).await;
    let m = w.store.message(&k).unwrap();
    let failing = crate::process::notice::failing(
        &m,
        crate::message::HistoryEntry::new(T0, Status::Failed, "failed"),
        5,
        "boom".into(),
        PendingNotice {
            reason: crate::message::FailureReason::Exhausted,
            failed_at: T0,
        },
        T0 + 60_000,
    );
    // The invocation that failed it died before sending.
    w.store
        .transition(&k, 0, &failing, Vec::new())
        .await
        .unwrap();
    w.clock.advance_millis(60_000);
    let (a, b) = (w.reaper(10), w.reaper(10));
    let (ra, rb) = tokio::join!(a.run(), b.run());
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.notices_sent + rb.notices_sent, 1, "{ra:?} {rb:?}");
    let notices = w.quarantine.quarantined();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (
            notices[0].attempts,
            notices[0].last_error.as_str(),
            notices[0].failed_at
        ),
        (5, "boom", T0)
    );
    assert_eq!(w.store.message(&k).unwrap().notice_pending, None);
}

#[test]
fn the_reaper_reads_only_messages_and_the_open_shards() {
    let prefix = |p: &str| p.strip_suffix('*').map(str::to_owned);
    let messages = prefix(REAPER_READS[0]).expect("a prefix");
    let k = MessageKey::new(
        SourceName::parse("stripe").unwrap(),
        EventId::parse("evt_1").unwrap(),
    );
    assert!(crate::store::schema::message_pk(&k).starts_with(&messages));
    let shards = prefix(REAPER_INDEX_READS[0]).expect("a prefix");
    assert!(open_shards().all(|s| s.starts_with(&shards)));
    assert!(!crate::outbox::schema::outbox_shard("OUT#d#s#e").starts_with(&shards));
}
