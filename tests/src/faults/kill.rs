//! The process function "killed" at a chosen step, deterministically: the store and the queues
//! are wrapped, and when the processing reaches the step the wrapper stops there — before the
//! request is sent, or after it was answered (the write landed, the process never saw the
//! answer) — and never returns. The test then drops the processing future, which is what a
//! killed invocation amounts to: nothing after that point happens.

use inbox_core::domain::{MessageKey, Status};
use inbox_core::message::{QuarantineNotice, StoredMessage};
use inbox_core::queue::{Quarantine, QueueError};
use inbox_core::store::{
    Applied, DueMessage, Effect, ListFilter, MessageStore, RepeatRecord, StoreError, Transition,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Where the process dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Before the claim (`processing`) is written.
    BeforeClaim,
    /// After the claim landed.
    AfterClaim,
    /// After the handler decided, before its commit (`processed` + effects) is sent.
    AfterHandler,
    /// After the commit landed.
    AfterCommit,
    /// After `retrying` landed, before the retry is scheduled.
    AfterRetrying,
    /// After `failed` (with its pending notice) landed, before the notice is sent.
    AfterFailed,
    /// After the quarantine notice was sent, before it is recorded sent.
    AfterQuarantineSend,
}

impl Step {
    pub const ALL: [Step; 7] = [
        Step::BeforeClaim,
        Step::AfterClaim,
        Step::AfterHandler,
        Step::AfterCommit,
        Step::AfterRetrying,
        Step::AfterFailed,
        Step::AfterQuarantineSend,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Step::BeforeClaim => "before the claim",
            Step::AfterClaim => "after the claim",
            Step::AfterHandler => "after the handler (before the commit)",
            Step::AfterCommit => "after the commit",
            Step::AfterRetrying => "after `retrying` (before the retry is sent)",
            Step::AfterFailed => "after `failed` (before the notice is sent)",
            Step::AfterQuarantineSend => "after the quarantine send",
        }
    }

    /// Whether the step is a transition to `to` (with or without effects), and if so whether the
    /// process dies before sending it (`Some(true)`) or after its answer (`Some(false)`).
    fn on_transition(self, to: Status, notice: bool) -> Option<bool> {
        match (self, to) {
            (Step::BeforeClaim, Status::Processing) => Some(true),
            (Step::AfterClaim, Status::Processing) => Some(false),
            (Step::AfterHandler, Status::Processed) => Some(true),
            (Step::AfterCommit, Status::Processed) => Some(false),
            (Step::AfterRetrying, Status::Retrying) => Some(false),
            (Step::AfterFailed, Status::Failed) if notice => Some(false),
            _ => None,
        }
    }
}

/// Shared by the wrappers of one "process": whether it reached its step.
#[derive(Debug, Default)]
pub struct Switch {
    step: Option<Step>,
    killed: AtomicBool,
    notify: Notify,
}

impl Switch {
    /// A process that dies at `step`.
    pub fn at(step: Step) -> Arc<Self> {
        Arc::new(Self {
            step: Some(step),
            ..Self::default()
        })
    }

    /// Whether the process died.
    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// Waits until the process reaches its step (the caller then drops the processing).
    pub async fn reached(&self) {
        while !self.killed() {
            // `notified` may miss a notification sent before it was created: poll the flag too.
            let _ = tokio::time::timeout(Duration::from_millis(50), self.notify.notified()).await;
        }
    }

    /// Dies: flags it, wakes the test, and never returns (the future stays pending until the
    /// test drops it).
    async fn die(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        std::future::pending::<()>().await;
    }
}

/// A store that kills its process at the switch's step.
pub struct KillStore<S> {
    pub inner: S,
    pub switch: Arc<Switch>,
}

impl<S: MessageStore> MessageStore for KillStore<S> {
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
        let kill = self
            .switch
            .step
            .and_then(|s| s.on_transition(t.to, t.notice.is_some()));
        if kill == Some(true) {
            self.switch.die().await;
        }
        let result = self
            .inner
            .transition(key, expected_version, t, effects)
            .await;
        if kill == Some(false) {
            self.switch.die().await;
        }
        result
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

/// A quarantine queue that kills its process after a send when the step says so.
pub struct KillQuarantine<Q> {
    pub inner: Q,
    pub switch: Arc<Switch>,
}

impl<Q: Quarantine> Quarantine for KillQuarantine<Q> {
    async fn quarantine(&self, notice: &QuarantineNotice) -> Result<(), QueueError> {
        let result = self.inner.quarantine(notice).await;
        if self.switch.step == Some(Step::AfterQuarantineSend) && result.is_ok() {
            self.switch.die().await;
        }
        result
    }
}
