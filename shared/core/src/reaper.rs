//! The reaper: finds messages that are due in the sparse open index — never picked up (pending
//! past the grace period: the stream was down, or past its 24 h retention), retries whose time
//! has come, and claims whose lease expired (a crashed invocation) — and re-drives them through
//! the retry queue. Re-driving twice is harmless: processing is idempotent.

use crate::clock::Clock;
use crate::process::InfraError;
use crate::queue::RetryQueue;
use crate::store::schema::open_shards;
use crate::store::MessageStore;
use std::collections::BTreeMap;

/// What one run found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReaperReport {
    pub due: usize,
    pub redriven: usize,
    pub by_status: BTreeMap<String, usize>,
    /// The oldest due time found, ms (how late the worst one is).
    pub oldest_due: Option<i64>,
}

/// Re-drives due messages, at most `max_per_run` per run.
#[derive(Debug)]
pub struct Reaper<S, R, C> {
    store: S,
    retry: R,
    clock: C,
    max_per_run: usize,
}

impl<S: MessageStore, R: RetryQueue, C: Clock> Reaper<S, R, C> {
    /// A reaper re-driving through `retry`; it never quarantines.
    pub fn new(store: S, retry: R, clock: C, max_per_run: usize) -> Self {
        Self {
            store,
            retry,
            clock,
            max_per_run,
        }
    }

    /// One pass over every shard of the open index.
    pub async fn run(&self) -> Result<ReaperReport, InfraError> {
        let now = self.clock.now_millis();
        let mut report = ReaperReport::default();
        for shard in open_shards() {
            let remaining = self.max_per_run.saturating_sub(report.due);
            if remaining == 0 {
                break;
            }
            let due = self.store.due(&shard, now, remaining).await?;
            if due.is_empty() {
                continue;
            }
            report.due += due.len();
            for d in &due {
                *report.by_status.entry(d.status.to_string()).or_default() += 1;
                report.oldest_due = Some(report.oldest_due.map_or(d.due, |o| o.min(d.due)));
            }
            let keys: Vec<_> = due.into_iter().map(|d| d.key).collect();
            report.redriven += self.retry.redrive(&keys).await?;
        }
        Ok(report)
    }
}
