//! A destination's backlog: deliveries **parked** while their destination cannot take them (its
//! circuit is open, or it is paused), and their release.
//!
//! - **Parked** ([`Deliverer::park`]): one write puts the delivery in its destination's partition
//!   of the open index (`PARKED#{destination}`, ordered by creation: [`super::schema::parked_shard`])
//!   with the reason and the time (`parked`), its attempt count and its next attempt's time kept.
//!   No queue message, no re-check: the sweep never reads that partition, so a parked delivery
//!   costs nothing while it waits, however long. A worker that meets a delivery already parked
//!   for the same reason leaves it as it is (no write). A failed attempt whose retry would meet
//!   an open circuit is parked in the write that records it (`record.rs`).
//! - **Probed** ([`Deliverer::sweep_parked`], each minute): the open circuit of an active
//!   destination with a backlog, once cooled down ([`super::breaker::cooldown_of`]), gets a
//!   probe: the sweep re-drives the oldest parked delivery whose retry is due (an attempt of its
//!   own schedule: time parked consumes none of its attempts). A probe that succeeds while the
//!   half-open circuit wants more (`BREAKER_HALF_OPEN_PROBES`) releases the next at once, the
//!   oldest parked ([`Deliverer::probe_next`]).
//! - **Released** ([`release`]): when its circuit is closed (a probe succeeded: the worker whose
//!   success closed it releases at once, then the sweep each minute), oldest first, at the
//!   destination's rate: the i-th released is due `i / rate` after the first, a minute's worth
//!   (plus the burst) per release. Its attempt count is what it was: time parked consumes no
//!   attempt, and a failure after the release takes the next step of its schedule. The wait its
//!   last failure asked for is not kept: that failure was the outage, and the probe that closed
//!   the circuit says it is over (a failed probe waits hours on a late step). A resumed
//!   destination's backlog is released the same way ([`super::resend::resume`], and the sweep
//!   once its circuit is closed). A disabled destination's backlog is re-driven so that its
//!   deliveries fail with the reason.

use super::breaker::{self, Admit};
use super::delivery::{OutboundDelivery, ParkReason, Parked};
use super::destination::{Destination, DestinationId, DestinationState};
use super::queue::{OutboxQueues, Work};
use super::schema::parked_shard;
use super::store::{DueItem, OutboxStore};
use super::worker::{Deliverer, DeliveryOutcome, DeliveryPorts, Skip, MAX_QUEUE_DELAY_MS};
use crate::clock::{Clock, Millis};
use crate::process::InfraError;
use crate::store::Applied;
use serde::Serialize;
use std::time::Duration;

/// A boxed future that may be sent between threads.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The most parked deliveries one release takes (and the most of a destination's backlog the
/// sweep looks at per run).
pub const RELEASE_MAX: usize = 1_000;
/// A release covers this much of the destination's rate.
pub const RELEASE_WINDOW: Duration = Duration::from_secs(60);

/// How many of a destination's parked deliveries one release takes: a [`RELEASE_WINDOW`] of its
/// rate plus its burst, at least 1 and at most `most`.
pub fn release_size(rate_per_sec: f64, burst: u32, most: usize) -> usize {
    let rate = if rate_per_sec.is_finite() && rate_per_sec > 0.0 {
        rate_per_sec
    } else {
        1.0
    };
    let n = (rate * RELEASE_WINDOW.as_secs_f64()).ceil() as usize;
    n.saturating_add(burst as usize).clamp(1, most.max(1))
}

/// When the `i`-th delivery of a release whose first is due at `first` is due: `i / rate` later
/// (ms, rounded down).
pub fn release_slot(first: i64, i: usize, rate_per_sec: f64) -> i64 {
    let rate = if rate_per_sec.is_finite() && rate_per_sec > 0.0 {
        rate_per_sec
    } else {
        1.0
    };
    let offset = ((i as f64) * 1000.0 / rate) as i64;
    first.saturating_add(offset)
}

/// Kept before the invocation's deadline when a release stops (what it did not release stays
/// parked for the next one).
const RELEASE_MARGIN_MS: i64 = 5_000;
/// Deliveries a release writes at once.
const RELEASE_CONCURRENCY: usize = 16;

/// Releases up to `limit` of `destination`'s parked deliveries, oldest first: the i-th due at
/// [`release_slot`] from `first`, each scheduled through `queue` when given and its wait fits the
/// queue (else the sweep finds it due in its open shard). A delivery that changed meanwhile is
/// left to whoever changed it (its slot stays empty); within an invocation, the release stops in
/// time for its deadline (the rest stays parked). How many were released.
#[allow(clippy::too_many_arguments)] // the release's inputs, each named at its call
pub async fn release<S: OutboxStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    destination: &DestinationId,
    rate_per_sec: f64,
    first: i64,
    now: i64,
    limit: usize,
    why: &str,
) -> Result<usize, InfraError> {
    use futures_util::StreamExt;
    let shard = parked_shard(destination.as_str());
    let items = store
        .due_work_items(&shard, Millis::new(i64::MAX), limit)
        .await?;
    let started = std::time::Instant::now();
    // Boxed and collected first: a stream over a closure's futures would not be `Send` for every
    // lifetime, which a spawned delivery (that releases when its probe closes the circuit) needs.
    let each: Vec<BoxFuture<'_, Result<bool, InfraError>>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let due = release_slot(first, i, rate_per_sec);
            Box::pin(async move {
                let elapsed = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
                let late = super::deadline::spare(now.saturating_add(elapsed), RELEASE_MARGIN_MS)
                    .is_some_and(|s| s < 0);
                if late {
                    return Ok(false);
                }
                release_one(store, queue, item, due, now, why).await
            }) as BoxFuture<'_, _>
        })
        .collect();
    let released: Vec<Result<bool, InfraError>> = futures_util::stream::iter(each)
        .buffer_unordered(RELEASE_CONCURRENCY)
        .collect()
        .await;
    let mut n = 0;
    for r in released {
        n += usize::from(r?);
    }
    Ok(n)
}

/// Releases the parked delivery `item` names, due at `due`: whether it did.
async fn release_one<S: OutboxStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    item: &super::store::DueItem,
    due: i64,
    now: i64,
    why: &str,
) -> Result<bool, InfraError> {
    let Some(Work::Delivery(r)) = super::work_of(item) else {
        return Ok(false);
    };
    let Some(d) = store.delivery(&r).await? else {
        return Ok(false);
    };
    if !d.is_parked() {
        return Ok(false);
    }
    let mut x = d.clone();
    x.parked = None;
    x.next_attempt_at = Some(due);
    x.note(now, format!("released: {why}"));
    if store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
        return Ok(false);
    }
    x.version = d.version + 1;
    let wait = due.saturating_sub(now).max(0);
    if let (Some(q), true) = (queue, wait <= MAX_QUEUE_DELAY_MS) {
        let delay = Duration::from_millis(u64::try_from(wait).unwrap_or(0));
        // Durable as due in its open shard: if this send fails, the sweep re-drives it.
        if let Err(e) = q.schedule(&Work::carrying(&x), delay).await {
            tracing::warn!(delivery = %r, error = %e, "released but not queued; the sweep will find it");
        }
    }
    Ok(true)
}

/// Releases the whole backlog of a destination just removed (no sweep reads it once the
/// destination is gone), due after [`super::resend::RESUME_DELAY`] (longer than the workers'
/// copy of the destinations, which would park it again), so that each delivery fails as
/// removed, with its notice.
pub async fn release_removed<S: OutboxStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    destination: &DestinationId,
    now: i64,
) -> Result<usize, InfraError> {
    let why = "the destination was removed";
    let first = now.saturating_add(super::worker::ms(super::resend::RESUME_DELAY));
    release(store, queue, destination, 1e3, first, now, usize::MAX, why).await
}

/// A destination's parked backlog, for operators: how many (counted up to a limit) and the
/// oldest one's creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Backlog {
    /// Parked deliveries counted (at most the limit asked).
    pub parked: usize,
    /// Whether there may be more than counted.
    pub more: bool,
    /// The oldest parked delivery's `created_at`, ms.
    pub oldest: Option<i64>,
}

impl std::fmt::Display for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let more = if self.more { " or more" } else { "" };
        write!(f, "{}{more} parked", self.parked)
    }
}

/// `destination`'s parked backlog (one `Query` of its partition, at most `most` counted).
pub async fn backlog<S: OutboxStore>(
    store: &S,
    destination: &DestinationId,
    most: usize,
) -> Result<Backlog, InfraError> {
    let items = store
        .due_work_items(
            &parked_shard(destination.as_str()),
            Millis::new(i64::MAX),
            most.saturating_add(1),
        )
        .await?;
    Ok(Backlog {
        parked: items.len().min(most),
        more: items.len() > most,
        oldest: items.first().map(|i| i.due.get()),
    })
}

/// What the sweep did to the destinations' backlogs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ParkedReport {
    /// Parked deliveries seen (at most [`RELEASE_MAX`] per destination).
    pub seen: usize,
    /// Probes re-driven (one per destination whose open circuit cooled down).
    pub probes: usize,
    /// Released (closed circuits).
    pub released: usize,
    /// Re-driven to fail (disabled destinations).
    pub failing: usize,
}

impl<P: DeliveryPorts> Deliverer<P> {
    /// Parks `d` in its destination's backlog for `reason` (no attempt, no message); a delivery
    /// already parked for it is left as it is (no write).
    pub(super) async fn park(
        &self,
        d: OutboundDelivery,
        reason: ParkReason,
        now: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        if d.is_parked() && d.parked.is_some_and(|p| p.reason == reason) {
            return Ok(DeliveryOutcome::Skipped(Skip::Parked));
        }
        let mut x = d.clone();
        if x.status == super::delivery::DeliveryStatus::Delivering {
            x.status = if x.attempts == 0 {
                super::delivery::DeliveryStatus::Pending
            } else {
                super::delivery::DeliveryStatus::Retrying
            };
        }
        x.lease_until = None;
        x.parked = Some(Parked { reason, since: now });
        x.note(now, format!("parked: {}", reason.as_str()));
        if self.store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped(Skip::Conflict));
        }
        Ok(DeliveryOutcome::Parked {
            why: reason.as_str(),
        })
    }

    /// Releases the first part of `dest`'s backlog now (its circuit just closed).
    pub(super) async fn release_now(&self, dest: &Destination, now: i64, why: &str) {
        let n = release_size(dest.rate_per_sec, dest.burst, RELEASE_MAX);
        match release(
            &self.store,
            Some(&self.queues),
            &dest.id,
            dest.rate_per_sec,
            now,
            now,
            n,
            why,
        )
        .await
        {
            Ok(0) => {}
            Ok(released) => {
                tracing::info!(destination = %dest.id, released, "parked deliveries released")
            }
            Err(e) => {
                tracing::warn!(destination = %dest.id, error = %e, "the backlog's release failed; the sweep releases it")
            }
        }
    }

    /// The sweep's part in the backlogs: for each destination with parked deliveries, release
    /// them when its circuit is closed, re-drive one probe when its open circuit cooled down,
    /// re-drive them to fail when it is disabled; nothing while it is paused or cooling down.
    /// `limit`: the most released or re-driven per destination. Destinations are looked at
    /// several at once, and not begun once the invocation's deadline is near.
    pub(super) async fn sweep_parked(
        &self,
        destinations: &[Destination],
        limit: usize,
    ) -> Result<ParkedReport, InfraError> {
        use futures_util::StreamExt;
        let each: Vec<BoxFuture<'_, Result<ParkedReport, InfraError>>> = destinations
            .iter()
            .filter(|d| d.state != DestinationState::Paused)
            .map(|d| Box::pin(self.sweep_backlog(d, limit)) as BoxFuture<'_, _>)
            .collect();
        let reports: Vec<Result<ParkedReport, InfraError>> = futures_util::stream::iter(each)
            .buffer_unordered(8)
            .collect()
            .await;
        let mut report = ParkedReport::default();
        for r in reports {
            let r = r?;
            report.seen += r.seen;
            report.probes += r.probes;
            report.released += r.released;
            report.failing += r.failing;
        }
        Ok(report)
    }

    /// Re-drives the oldest of `parked` whose retry is due as the probe (how many it sent).
    async fn redrive_probe(&self, parked: &[DueItem], now: i64) -> Result<usize, InfraError> {
        let due = |i: &&DueItem| i.next_attempt_at.is_none_or(|t| t.get() <= now);
        match parked.iter().find(due).and_then(super::work_of) {
            Some(w) => Ok(self.queues.redrive(&[w]).await?),
            None => Ok(0),
        }
    }

    /// After a probe that succeeded on a half-open circuit that wants more: the next probe now,
    /// the oldest of the backlog released (due now: the wait its failure during the outage asked
    /// for is not kept, as on any release; nothing parked: the next delivery that comes probes).
    pub(super) async fn probe_next(&self, dest: &DestinationId, now: i64) {
        let why = "the next probe";
        let queue = Some(&self.queues);
        if let Err(e) = release(&self.store, queue, dest, 1.0, now, now, 1, why).await {
            tracing::warn!(destination = %dest, error = %e, "the next probe was not sent: the sweep sends one");
        }
    }

    /// [`Self::sweep_parked`] for one destination.
    async fn sweep_backlog(
        &self,
        dest: &Destination,
        limit: usize,
    ) -> Result<ParkedReport, InfraError> {
        let mut report = ParkedReport::default();
        let late = |now| super::deadline::spare(now, RELEASE_MARGIN_MS).is_some_and(|s| s < 0);
        if late(self.clock.now_millis()) {
            return Ok(report);
        }
        let n = release_size(dest.rate_per_sec, dest.burst, limit.min(RELEASE_MAX));
        let shard = parked_shard(dest.id.as_str());
        let parked = self
            .store
            .due_work_items(&shard, Millis::new(i64::MAX), n)
            .await?;
        if parked.is_empty() {
            return Ok(report);
        }
        report.seen = parked.len();
        let now = self.clock.now_millis();
        if dest.state == DestinationState::Disabled {
            let work: Vec<Work> = parked.iter().filter_map(super::work_of).collect();
            report.failing = self.queues.redrive(&work).await?;
            return Ok(report);
        }
        let state = self.store.worker_state(&dest.id).await?;
        let lease = dest.timeout() + self.config.lease_margin;
        match breaker::admit(&self.config.breaker, &state.circuit, now, lease) {
            Admit::Send => {
                let why = "the circuit is closed";
                let (queue, rate) = (Some(&self.queues), dest.rate_per_sec);
                report.released =
                    release(&self.store, queue, &dest.id, rate, now, now, n, why).await?;
            }
            Admit::Probe { .. } => {
                report.probes = self.redrive_probe(&parked, now).await?;
            }
            Admit::Hold { .. } => {}
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_takes_a_minute_of_the_rate_and_spaces_it() {
        // (rate, burst, most, size)
        for (rate, burst, most, size) in [
            (10.0, 10, 1_000, 610),
            (0.5, 1, 1_000, 31),
            (100.0, 50, 1_000, 1_000),
            (f64::NAN, 0, 1_000, 60),
            (0.0, 0, 0, 1),
        ] {
            assert_eq!(
                release_size(rate, burst, most),
                size,
                "{rate} {burst} {most}"
            );
        }
        // (first, i, rate, due)
        for (first, i, rate, due) in [
            (1_000, 0, 10.0, 1_000),
            (1_000, 1, 10.0, 1_100),
            (1_000, 25, 10.0, 3_500),
            (1_000, 3, 0.5, 7_000),
            (1_000, 3, 3.0, 2_000),
            (1_000, 2, -1.0, 3_000),
            (1_000, 2, f64::INFINITY, 3_000),
        ] {
            assert_eq!(release_slot(first, i, rate), due, "{first} {i} {rate}");
        }
    }
}
