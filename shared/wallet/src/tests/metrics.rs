//! The handler's metrics are emitted by the processor only after its writes committed: once for a
//! handler re-run after a conflict, never for a racer whose outcome lost.

use super::*;
use inbox_core::domain::MessageKey;
use inbox_core::message::StoredMessage;
use inbox_core::metrics::RecordingSink;
use inbox_core::store::{
    Applied, DueMessage, Effect, ListFilter, MessageStore, RepeatRecord, StoreError, Transition,
};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The in-memory store, with a hook that runs before each transaction carrying effects.
struct Hooked<F> {
    inner: Arc<MemoryStore>,
    before_commit: F,
}

impl<F, Fut> MessageStore for Hooked<F>
where
    F: Fn(MessageKey) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Option<Applied>> + Send,
{
    async fn get(&self, key: &MessageKey) -> Result<Option<StoredMessage>, StoreError> {
        self.inner.get(key).await
    }

    async fn transition(
        &self,
        key: &MessageKey,
        expected_version: u64,
        transition: &Transition,
        effects: Vec<Effect>,
    ) -> Result<Applied, StoreError> {
        if !effects.is_empty() {
            if let Some(answer) = (self.before_commit)(key.clone()).await {
                return Ok(answer);
            }
        }
        self.inner
            .transition(key, expected_version, transition, effects)
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

    async fn list(
        &self,
        filter: &ListFilter,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        self.inner.list(filter, limit).await
    }

    async fn deliveries(&self, key: &MessageKey) -> Result<Vec<RepeatRecord>, StoreError> {
        self.inner.deliveries(key).await
    }

    async fn repeat_count(&self, key: &MessageKey) -> Result<u64, StoreError> {
        self.inner.repeat_count(key).await
    }

    async fn purge(&self, key: &MessageKey, expected_version: u64) -> Result<Applied, StoreError> {
        self.inner.purge(key, expected_version).await
    }
}

/// A processor running the wallet handler on `store`'s items, committing through `through`.
fn processor<M: MessageStore>(
    store: &Arc<MemoryStore>,
    through: M,
    metrics: Arc<RecordingSink>,
) -> Processor<M, Arc<MemoryRetryQueue>, Arc<MemoryQuarantine>, Arc<ManualClock>> {
    let registry =
        WalletHandler::new(store.clone(), WalletSources::default()).register(Registry::new());
    Processor::new(
        through,
        Arc::new(MemoryRetryQueue::new()),
        Arc::new(MemoryQuarantine::new()),
        Arc::new(ManualClock::at_millis(T0)),
        registry,
        ProcessorConfig::default(),
    )
    .with_metrics(metrics)
}

/// A hold that takes the wallet below its floor of 0: flagged, and `WalletOverdrawn` counted.
async fn overdrawing_send(w: &World) -> MessageKey {
    let body = json!({"type": "message.sent", "data": {"message_id": "m1", "tenant": "acme"}});
    w.deliver("mailer", "e1", "message.sent", body)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_conflict_re_run_emits_its_metric_once() {
    let w = World::new().wallet("acme", 0, None);
    let key = overdrawing_send(&w).await;
    let conflicts = Arc::new(AtomicU32::new(0));
    let seen = conflicts.clone();
    // The first commit meets a conflict (a row changed meanwhile): nothing is written and the
    // handler is re-run on fresh state.
    let store = Hooked {
        inner: w.store.clone(),
        before_commit: move |_| {
            let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
            async move { first.then_some(Applied::EffectConflict) }
        },
    };
    let metrics = Arc::new(RecordingSink::new());
    let p = processor(&w.store, store, metrics.clone());
    assert_eq!(p.process_key(&key).await.unwrap(), Outcome::Processed);
    assert_eq!(
        conflicts.load(Ordering::SeqCst),
        2,
        "one conflict, one commit"
    );
    assert_eq!(
        metrics.count("WalletOverdrawn"),
        1,
        "{:?}",
        metrics.emitted()
    );
    let (_, metric) = &metrics.emitted()[0];
    assert_eq!(
        metric.properties,
        vec![("Tenant".to_string(), "acme".to_string())]
    );
    assert!(metric
        .note
        .as_deref()
        .unwrap_or_default()
        .contains("below its floor"));
    let wallet = w.balance("acme");
    assert!(wallet.overdrawn);
    assert_eq!(wallet.held.minor(), PRICE);
    assert_eq!(w.entries("acme").await.len(), 1);
}

#[tokio::test]
async fn a_losing_racer_emits_nothing() {
    let w = World::new().wallet("acme", 0, None);
    let key = overdrawing_send(&w).await;
    // The rival processes the same message to the end while the loser, which already decided on
    // the same state, is about to commit.
    let rival_metrics = Arc::new(RecordingSink::new());
    let rival = Arc::new(Mutex::new(Some(processor(
        &w.store,
        w.store.clone(),
        rival_metrics.clone(),
    ))));
    let store = Hooked {
        inner: w.store.clone(),
        before_commit: move |key: MessageKey| {
            let rival = rival.lock().unwrap().take();
            async move {
                if let Some(rival) = rival {
                    assert_eq!(rival.process_key(&key).await.unwrap(), Outcome::Processed);
                }
                None
            }
        },
    };
    let loser_metrics = Arc::new(RecordingSink::new());
    let loser = processor(&w.store, store, loser_metrics.clone());
    assert_eq!(
        loser.process_key(&key).await.unwrap(),
        Outcome::Skipped(inbox_core::process::Skip::Conflict)
    );
    assert!(
        loser_metrics.emitted().is_empty(),
        "{:?}",
        loser_metrics.emitted()
    );
    assert_eq!(rival_metrics.count("WalletOverdrawn"), 1);
    assert_eq!(w.balance("acme").held.minor(), PRICE, "held once");
    assert_eq!(w.entries("acme").await.len(), 1);
}
