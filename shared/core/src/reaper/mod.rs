//! The reaper: finds the messages whose deadline in the sparse open index has passed and makes
//! sure each ends.
//!
//! A deadline passes when a delivery did not report an outcome in time: a new message the stream
//! never delivered (or whose invocation crashed), a scheduled retry that never ran or never
//! reported (its deadline is the retry time plus a grace period, so a retry on its way is left
//! alone), a claim whose lease expired. The reaper counts that lost attempt
//! ([`crate::policy::lost_attempt`]) with a conditional write on the version it read, and either
//! re-drives the message through the retry queue with the same backoff a failed attempt gets
//! (its deadline pushed past it), or — at `MAX_ATTEMPTS` — fails it with exactly one quarantine
//! notice ([`crate::process::notice`]). A failed message whose notice is still pending (the
//! queue was down, the sender died) is due too: the reaper sends that notice. So a message whose
//! handler panics, times out or keeps hitting a store error still ends.
//!
//! The budget of a run (`REAPER_MAX_PER_RUN`) is spread over the 16 index shards
//! ([`crate::store::fair`]): each gets an equal share, and what a shard does not use goes to the
//! others (a thousand stuck messages in one shard never starve the rest). Per-message work runs a few at a time; a message's error is
//! counted in the report and the run goes on. `reap`: what happens to one due message;
//! [`config`]: the reaper's configuration, read from the environment.

pub mod config;
mod reap;

pub use config::ReaperConfig;

use crate::clock::Clock;
use crate::policy::RetryPolicy;
use crate::process::InfraError;
use crate::queue::{Quarantine, RetryQueue};
use crate::store::fair::FairShares;
use crate::store::schema::open_shards;
use crate::store::{DueMessage, MessageStore};
use reap::Reaped;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The partition-key patterns the reaper reads in the table: a due message (`GetItem`, for its
/// version). Its role may read nothing else (template.yaml's `dynamodb:LeadingKeys` on
/// `ReaperRole`, compared by tests/it/template.rs). `*` ends a prefix.
pub const REAPER_READS: [&str; 1] = ["MSG#*"];
/// The open-index partitions the reaper queries: the open messages' shards ([`open_shards`]),
/// never the outbox's or an application's shards of the same index.
pub const REAPER_INDEX_READS: [&str; 1] = ["OPEN#*"];

/// How many due messages are handled at once.
const CONCURRENCY: usize = 8;

/// What one run found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReaperReport {
    /// Due messages found (and handled or skipped).
    pub due: usize,
    /// Lost attempts counted and re-driven through the retry queue.
    pub redriven: usize,
    /// Lost attempts that were the last one: failed, notice sent or pending.
    pub failed: usize,
    /// Pending quarantine notices sent (of messages failed earlier or just now).
    pub notices_sent: usize,
    /// Found, but no longer due when read (processed, moved, or a stale index entry).
    pub skipped: usize,
    /// Messages whose handling met a store or queue error (tried again next run).
    pub errors: usize,
    pub by_status: BTreeMap<String, usize>,
    /// The oldest due time found, ms (how late the worst one is).
    pub oldest_due: Option<i64>,
}

/// The reaper's settings: its budget, and the processing settings it applies to lost attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaperSettings {
    /// Most due messages handled per run.
    pub max_per_run: usize,
    /// The processor's retry policy: attempts and backoff.
    pub policy: RetryPolicy,
    /// The processor's lease: how long a notice sender gets before the reaper takes over.
    pub lease: Duration,
}

impl ReaperSettings {
    /// `max_per_run` with the default policy and lease.
    pub fn with_budget(max_per_run: usize) -> Self {
        Self {
            max_per_run,
            policy: RetryPolicy::default(),
            lease: Duration::from_secs(60),
        }
    }
}

/// Counts lost attempts and re-drives or fails due messages, at most `max_per_run` per run.
pub struct Reaper<S, R, Q, C> {
    store: S,
    retry: R,
    quarantine: Q,
    clock: C,
    settings: ReaperSettings,
    jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
}

impl<S, R, Q, C> std::fmt::Debug for Reaper<S, R, Q, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reaper")
            .field("settings", &self.settings)
            .finish()
    }
}

impl<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock> Reaper<S, R, Q, C> {
    /// A reaper re-driving through `retry` and sending pending notices to `quarantine`.
    pub fn new(store: S, retry: R, quarantine: Q, clock: C, settings: ReaperSettings) -> Self {
        Self {
            store,
            retry,
            quarantine,
            clock,
            settings,
            jitter: Arc::new(fastrand::f64),
        }
    }

    /// Replaces the random draw behind the backoff's jitter (tests pin it).
    pub fn with_jitter(mut self, jitter: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.jitter = Arc::new(jitter);
        self
    }

    /// One pass over every shard of the open index, the budget spread fairly. `Err` only when the
    /// index cannot be read; per-message errors are counted in the report.
    pub async fn run(&self) -> Result<ReaperReport, InfraError> {
        use futures_util::StreamExt;
        let now = self.clock.now_millis();
        let shards: Vec<String> = open_shards().collect();
        let mut report = ReaperReport::default();
        let mut fair = FairShares::new(shards.len(), self.settings.max_per_run, now);
        loop {
            let batch = fair
                .next_round(
                    |i, limit| self.store.due(&shards[i], now, limit),
                    |d: &DueMessage| d.key.clone(),
                )
                .await?;
            if batch.is_empty() {
                break;
            }
            let results: Vec<(DueMessage, Result<Reaped, InfraError>)> =
                futures_util::stream::iter(batch.into_iter().map(|d| async move {
                    let r = self.reap(&d, now).await;
                    (d, r)
                }))
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
            for (d, result) in results {
                report.count(&d, result);
            }
        }
        Ok(report)
    }
}

impl ReaperReport {
    fn count(&mut self, d: &DueMessage, result: Result<Reaped, InfraError>) {
        self.due += 1;
        *self.by_status.entry(d.status.to_string()).or_default() += 1;
        self.oldest_due = Some(self.oldest_due.map_or(d.due, |o| o.min(d.due)));
        match result {
            Ok(Reaped::Skipped) => self.skipped += 1,
            Ok(Reaped::Redriven) => self.redriven += 1,
            Ok(Reaped::Failed { notice_sent }) => {
                self.failed += 1;
                self.notices_sent += usize::from(notice_sent);
                // Failed all the same; the notice is pending and found again next run.
                self.errors += usize::from(!notice_sent);
            }
            Ok(Reaped::NoticeSent) => self.notices_sent += 1,
            Ok(Reaped::NoticePending) => self.errors += 1,
            Err(e) => {
                self.errors += 1;
                tracing::warn!(source = %d.key.source, event_id = %d.key.event_id, error = %e, "could not reap; the next run tries again");
            }
        }
    }
}

#[cfg(test)]
mod tests;
