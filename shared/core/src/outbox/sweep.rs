//! What the deliver function does besides sending: the sweep (every minute: re-drive the due
//! deliveries, fan-outs and pending failure notices the open index knows, its limit shared
//! fairly by the shards as the reaper's budget is, emit the outbox's gauges, and probe or release
//! the destinations' parked backlogs, [`super::parking`]), the expansion of a
//! fan-out item, and delivering what is due directly (the local stack and the tests).

use super::delivery::{DeliveryRef, OutboundDelivery};
use super::destination::{DestinationId, DestinationState};
use super::queue::{OutboxQueues, Work};
use super::schema::{outbox_shards, DELIVERY_SK, FANOUT_SK};
use super::store::{DueItem, OutboxStore};
use super::worker::{Deliverer, DeliveryOutcome, DeliveryPorts, Skip, NAMESPACE};
use crate::clock::{Clock, Millis};
use crate::domain::{EventId, MessageKey, SourceName};
use crate::metrics::Metric;
use crate::process::InfraError;
use crate::store::fair::FairShares;
use serde::Serialize;
use std::time::Duration;

/// How long an item the sweep re-drove waits before the sweep re-drives it again (its due time
/// moves this far, [`OutboxStore::postpone_due`]). Every due item normally has a message on its
/// way already (the stream's first attempt, a worker's scheduled retry); the sweep is for the ones
/// whose message was lost. Re-driving everything due on every sweep (each minute) added a copy of
/// the whole backlog to the queue each minute whenever the workers were more than a minute
/// behind: under a burst on the local stack the delivery queue grew to 6,500 messages for a few
/// hundred deliveries, and the emulator serving it slowed until the backlog never drained.
pub const REDRIVE_AFTER: Duration = Duration::from_secs(300);

/// Kept before the invocation's deadline when the sweep stops taking items: the time to send
/// the re-drive and emit the gauges. What it did not take is due at the next sweep.
const SWEEP_MARGIN_MS: i64 = 5_000;

/// What became of a due item the sweep tried to take.
enum Take {
    /// Taken: re-driven.
    Taken(Work),
    /// Written by a worker since it was read: its writer has it.
    Written,
    /// Not tried: the invocation's deadline came first.
    Late,
}

/// What a sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Due deliveries and fan-outs found.
    pub due: usize,
    /// Re-driven through the delivery queue.
    pub redriven: usize,
    /// Due, but written by a worker between the sweep's read and its re-drive (not re-driven).
    pub taken: usize,
    /// Due, but left for the next sweep: the invocation's deadline came first (a loaded table).
    pub left: usize,
    /// How late the most overdue one is, s (0 when none).
    pub oldest_due_secs: i64,
    /// Destinations disabled right now.
    pub disabled_destinations: usize,
    /// The destinations' backlogs: probes, releases ([`super::parking`]).
    pub parked: super::parking::ParkedReport,
}

/// The work an open-index item stands for (parsed from its key: the index projects no
/// destination).
pub fn work_of(item: &DueItem) -> Option<Work> {
    match item.sk.as_str() {
        DELIVERY_SK => {
            let mut parts = item.pk.splitn(4, '#');
            let (Some("OUT"), Some(destination), Some(source), Some(event_id)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return None;
            };
            Some(Work::Delivery(DeliveryRef {
                destination: DestinationId::parse(destination).ok()?,
                source: SourceName::parse(source).ok()?,
                event_id: EventId::parse(event_id).ok()?,
            }))
        }
        FANOUT_SK => Some(Work::Fanout {
            source: SourceName::parse(&item.source).ok()?,
            event_id: EventId::parse(&item.event_id).ok()?,
        }),
        _ => None,
    }
}

impl<P: DeliveryPorts> Deliverer<P> {
    /// What is due now, at most `limit`, the limit spread fairly over the shards
    /// ([`crate::store::fair`]: oldest first within each), and how late the most overdue item of
    /// any shard is, s (the shards the limit did not reach asked for their oldest too).
    pub async fn due_work(&self, limit: usize) -> Result<(Vec<Work>, i64), InfraError> {
        let (due, oldest) = self.due_items(limit).await?;
        Ok((due.into_iter().map(|(_, _, w)| w).collect(), oldest))
    }

    /// [`Self::due_work`] with each work's shard and open-index item.
    async fn due_items(
        &self,
        limit: usize,
    ) -> Result<(Vec<(String, DueItem, Work)>, i64), InfraError> {
        let now = self.clock.now_millis();
        let shards: Vec<String> = outbox_shards().collect();
        let shards_ref = &shards;
        let fetch = |i: usize, n: usize| async move {
            let items = self
                .store
                .due_work_items(&shards_ref[i], Millis::new(now), n)
                .await?;
            Ok::<_, crate::store::StoreError>(items.into_iter().map(|d| (i, d)).collect::<Vec<_>>())
        };
        let mut fair = FairShares::new(shards.len(), limit, now);
        let mut work = Vec::new();
        let mut oldest = now;
        loop {
            let round = fair
                .next_round(fetch, |(_, d): &(usize, DueItem)| d.pk.clone())
                .await?;
            if round.is_empty() {
                break;
            }
            for (shard, item) in round {
                oldest = oldest.min(item.since.get());
                match work_of(&item) {
                    Some(w) => work.push((shards[shard].clone(), item, w)),
                    None => {
                        tracing::warn!(pk = %item.pk, "an open-index item of the outbox is unreadable; skipped")
                    }
                }
            }
        }
        let unasked: Vec<usize> = fair.unasked().collect();
        for i in unasked {
            for (_, item) in fetch(i, 1).await? {
                oldest = oldest.min(item.since.get());
            }
        }
        Ok((work, (now - oldest).div_euclid(1000)))
    }

    /// The scheduled sweep: re-drives what is due through the delivery queue and emits the
    /// gauges the alarms watch (`OldestDueDeliverySeconds`, `DisabledDestinations`).
    /// Each item is taken before it is re-driven ([`REDRIVE_AFTER`]): at most one message per
    /// item per that time, however far behind the workers are. Run inside
    /// [`super::worker::until_deadline`], it stops taking items in time to finish before the
    /// invocation's deadline.
    pub async fn sweep(&self, limit: usize) -> Result<SweepReport, InfraError> {
        use futures_util::StreamExt;
        let (due, oldest_due_secs) = self.due_items(limit).await?;
        let found = due.len();
        let until = Millis::new(self.clock.now_millis()).plus(REDRIVE_AFTER);
        let taken: Vec<Result<Take, crate::store::StoreError>> =
            futures_util::stream::iter(due.into_iter().map(|(shard, item, w)| async move {
                let now = self.clock.now_millis();
                if super::deadline::spare(now, SWEEP_MARGIN_MS).is_some_and(|s| s < 0) {
                    return Ok(Take::Late);
                }
                let moved = self.store.postpone_due(&shard, &item, until).await?;
                Ok(if moved { Take::Taken(w) } else { Take::Written })
            }))
            .buffer_unordered(16)
            .collect()
            .await;
        let mut work = Vec::with_capacity(taken.len());
        let mut left = 0;
        for t in taken {
            match t? {
                Take::Taken(w) => work.push(w),
                Take::Written => {}
                Take::Late => left += 1,
            }
        }
        let redriven = if work.is_empty() {
            0
        } else {
            self.queues.redrive(&work).await?
        };
        let now = self.clock.now_millis();
        let snapshot = self.destinations.snapshot(now).await?;
        let disabled = snapshot
            .destinations
            .iter()
            .filter(|l| l.destination.state == DestinationState::Disabled)
            .count();
        let destinations: Vec<_> = snapshot
            .destinations
            .iter()
            .map(|l| l.destination.clone())
            .collect();
        let parked = self.sweep_parked(&destinations, limit).await?;
        self.metrics.emit(
            now,
            &[
                Metric::count(NAMESPACE, "OldestDueDeliverySeconds", oldest_due_secs),
                Metric::count(
                    NAMESPACE,
                    "DisabledDestinations",
                    i64::try_from(disabled).unwrap_or(i64::MAX),
                ),
            ],
        );
        Ok(SweepReport {
            due: found,
            redriven,
            taken: found - work.len() - left,
            left,
            oldest_due_secs,
            disabled_destinations: disabled,
            parked,
        })
    }

    /// Does one piece of work.
    pub async fn work(&self, w: &Work) -> Result<DeliveryOutcome, InfraError> {
        match w {
            Work::Delivery(r) => self.deliver(r).await,
            // Boxed: its future holds a second delivery's (the re-read after a stale copy).
            Work::Attempt(d) => Box::pin(self.deliver_carried((**d).clone())).await,
            Work::Fanout { source, event_id } => {
                self.expand(&MessageKey::new(source.clone(), event_id.clone()))
                    .await
            }
        }
    }

    /// Delivers (and expands) everything due now, `concurrency` at a time, in this process:
    /// what the sweep re-drives, without the queue. For the local stack and tests.
    pub async fn deliver_due(&self, limit: usize) -> Result<Vec<DeliveryOutcome>, InfraError> {
        use futures_util::StreamExt;
        let (work, _) = self.due_work(limit).await?;
        futures_util::stream::iter(work.iter().map(|w| self.work(w)))
            .buffer_unordered(self.config.concurrency.max(1))
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect()
    }

    /// Expands an event's fan-out item into its deliveries (each created only if absent, so an
    /// expansion repeated after a crash adds nothing), then closes it.
    pub async fn expand(&self, key: &MessageKey) -> Result<DeliveryOutcome, InfraError> {
        let Some(f) = self.store.fanout(key).await? else {
            return Ok(DeliveryOutcome::Missing);
        };
        if f.expanded_at.is_some() {
            return Ok(DeliveryOutcome::Skipped(Skip::Terminal));
        }
        for id in &f.destinations {
            let d = OutboundDelivery::new(id, key, f.event_type.clone(), f.created_at);
            self.store.ensure_delivery(&d).await?;
        }
        let now = self.clock.now();
        let expires = now.plus(Duration::from_secs(self.config.retention.as_secs()));
        self.store.close_fanout(&f, now, expires).await?;
        tracing::info!(source = %key.source, event_id = %key.event_id, deliveries = f.destinations.len(), "fan-out expanded");
        Ok(DeliveryOutcome::Expanded(f.destinations.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::destination::did;

    fn due(pk: &str, sk: &str) -> DueItem {
        DueItem {
            pk: pk.into(),
            sk: sk.into(),
            due: Millis::new(0),
            since: Millis::new(0),
            status: String::new(),
            source: "stripe".into(),
            event_id: "evt_1".into(),
            next_attempt_at: None,
        }
    }

    #[test]
    fn open_index_items_name_their_work() {
        let w = work_of(&due("OUT#crm#stripe#evt#with#hashes", "OUT")).unwrap();
        assert_eq!(
            w,
            Work::Delivery(DeliveryRef {
                destination: did("crm"),
                source: SourceName::parse("stripe").unwrap(),
                event_id: EventId::parse("evt#with#hashes").unwrap(),
            })
        );
        assert!(matches!(
            work_of(&due("FAN#stripe#evt_1", "FAN")),
            Some(Work::Fanout { .. })
        ));
        assert_eq!(work_of(&due("OUT#crm", "OUT")), None);
        assert_eq!(work_of(&due("MSG#a#b", "MSG")), None);
        assert_eq!(work_of(&due("OUT#crm#Bad Source#e", "OUT")), None);
    }
}
