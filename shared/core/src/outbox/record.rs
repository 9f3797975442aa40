//! Recording what happened to a delivery (the worker's steps 7 and the no-attempt exits): the
//! attempt's result with its consequences (circuit, disabling the destination, a 429's hold on its
//! rate, the retry or the failure notice), a deferral without an attempt, a failure without an
//! attempt.
//!
//! A failure's notice is never lost: `failed` is committed with the notice pending in the item
//! (in the open index until a deadline), the notice is sent after the commit and then recorded
//! sent. A notice that could not be sent (the queue was down, the worker died, a later write
//! failed) is found by the sweep at its deadline and sent by the worker it re-drives it to, which
//! first takes it over with a conditional write (as the reaper does for a message's quarantine
//! notice, [`crate::process::notice`]). The one case that sends two identical notices: the sender
//! dies between the send and the record.

use super::admin;
use super::attempt::{self, AttemptResult};
use super::breaker::{self, Change, Move};
use super::bucket::Rate;
use super::cache::Loaded;
use super::delivery::{
    body_head, AttemptRecord, DeliveryStatus, OutboundDelivery, ParkReason, Parked,
    PendingDeliveryNotice,
};
use super::destination::{DestinationError, DestinationId, DestinationState};
use super::queue::{DeliveryNotice, OutboxQueues, Work};
use super::store::{OutboxStore, WorkerState};
use super::worker::{
    ms, Deliverer, DeliveryOutcome, DeliveryPorts, Skip, MAX_QUEUE_DELAY_MS, NAMESPACE,
};
use crate::clock::{Clock, Millis};
use crate::metrics::Metric;
use crate::process::InfraError;
use crate::store::Applied;
use std::time::Duration;

impl<P: DeliveryPorts> Deliverer<P> {
    /// Records an attempt's result on the claimed delivery and acts on it.
    pub(super) async fn record(
        &self,
        mut d: OutboundDelivery,
        loaded: &Loaded,
        state: WorkerState,
        result: AttemptResult,
        duration_ms: u64,
        started_at: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        let dest = &loaded.destination;
        let now = self.clock.now_millis();
        let decision = attempt::decide(&dest.schedule, d.attempts, &result, now, (self.jitter)());
        let (status, body) = match &result {
            AttemptResult::Answered { status, body, .. } => (Some(*status), body_head(body)),
            _ => (None, String::new()),
        };
        let outcome = match (decision.status, decision.retry_in) {
            (DeliveryStatus::Retrying, Some(delay)) => {
                format!("retry in {}", super::schedule::format_duration(delay))
            }
            (s, _) => s.as_str().to_owned(),
        };
        d.journal_attempt(AttemptRecord {
            at: started_at,
            attempt: d.attempts,
            status,
            duration_ms,
            error: decision.error.clone(),
            body,
            outcome,
        });
        let claimed_version = d.version;
        d.status = decision.status;
        d.lease_until = None;
        d.last_status = status;
        d.last_error = decision.error.clone();
        d.next_attempt_at = decision.retry_in.map(|r| now + ms(r));
        if decision.status == DeliveryStatus::Failed {
            d.notice_pending = Some(self.pending_notice(now));
        }
        let change = breaker::after(&self.config.breaker, &state.circuit, decision.breaker, now);
        // A retry that would meet an open circuit (open when read: a probe, or a result from
        // before it opened) waits in the backlog: parked in this write, no message; its attempts
        // are kept for its release (`parking.rs`). One whose failure opens the circuit is
        // parked by the worker that meets it next.
        let open_after = state.circuit.opened_at.is_some();
        let parked = decision.status == DeliveryStatus::Retrying && open_after;
        if parked {
            d.parked = Some(Parked {
                reason: ParkReason::Circuit,
                since: now,
            });
        }
        if decision.status == DeliveryStatus::Delivered {
            d.delivered_at = Some(now);
            d.expires_at = Some(
                now.div_euclid(1000)
                    + i64::try_from(self.config.retention.as_secs()).unwrap_or(i64::MAX / 4),
            );
        }
        let recorded = self.store.save_delivery(&d, Some(claimed_version)).await? == Applied::Done;
        if !recorded {
            tracing::warn!(delivery = %d.reference(), "the attempt's result was not recorded: the delivery changed meanwhile (its lease lapsed?)");
        } else {
            d.version = claimed_version + 1;
            if d.notice_pending.is_some() {
                // Before the circuit's writes: an error there must not hold the notice back.
                self.send_notice(&d, now).await;
            }
        }
        let counted = self
            .store
            .change_circuit(&dest.id, change, Millis::new(now))
            .await?;
        if counted.is_some() {
            self.lease_stale(&dest.id);
        }
        let to = breaker::next(
            &self.config.breaker,
            change,
            &state.circuit,
            counted.as_ref(),
            now,
        );
        let moved = self
            .store
            .move_circuit(&dest.id, to, Millis::new(now))
            .await?;
        if moved {
            self.lease_stale(&dest.id);
            let recent = counted.map(|c| c.recent(&self.config.breaker, now));
            match to {
                Move::Open => {
                    tracing::warn!(destination = %dest.id, ?recent, "circuit opened");
                }
                Move::Reopen { .. } => {
                    tracing::info!(destination = %dest.id, "circuit re-opened: its probes failed");
                }
                Move::Close { .. } => {
                    tracing::info!(destination = %dest.id, "circuit closed");
                    self.release_now(dest, now, "the circuit closed").await;
                }
                Move::Stay => {}
            }
        } else if let (
            Move::Stay,
            Change::Count {
                up: true,
                probe: true,
                ..
            },
        ) = (to, change)
        {
            // Half-open, the probes so far up: the next now, not at the next sweep.
            if counted.is_some_and(|c| c.opened_at.is_some()) {
                self.probe_next(&dest.id, now).await;
            }
        }
        if let Some(since) = breaker::disable_since(
            &self.config.breaker,
            &state.circuit,
            change,
            counted.as_ref(),
            now,
        ) {
            let why = format!(
                "failing for {} s without a success (circuit breaker)",
                (now - since) / 1000
            );
            self.disable(&dest.id, &why, now).await;
        }
        if let Some(why) = &decision.disable {
            self.disable(&dest.id, why, now).await;
        }
        if let Some(pause) = attempt::throttle(&result, now, dest.schedule.retry_after_cap()) {
            let rate = Rate {
                per_sec: dest.rate_per_sec,
                burst: dest.burst,
            };
            self.hold(&dest.id, rate, now, pause).await;
        }
        if !recorded {
            return Ok(DeliveryOutcome::Skipped(Skip::Conflict));
        }
        match decision.status {
            DeliveryStatus::Delivered => {
                self.metrics
                    .emit(now, &[Metric::count(NAMESPACE, "DeliveriesDelivered", 1)]);
                Ok(DeliveryOutcome::Delivered)
            }
            DeliveryStatus::Retrying => {
                let delay = decision.retry_in.unwrap_or_default();
                if !parked {
                    self.schedule(&d, delay).await;
                }
                Ok(DeliveryOutcome::Retrying {
                    attempt: d.attempts,
                    delay,
                })
            }
            _ => Ok(DeliveryOutcome::Failed {
                attempts: d.attempts,
            }),
        }
    }

    /// Puts a delivery off until `until` (spread, [`super::deferral`]) without counting an attempt.
    pub(super) async fn defer(
        &self,
        d: OutboundDelivery,
        until: i64,
        why: &'static str,
        now: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        let until = super::deferral::spread(now, until, (self.deferral_jitter)());
        let mut x = d.clone();
        if x.status == DeliveryStatus::Delivering {
            x.status = if x.attempts == 0 {
                DeliveryStatus::Pending
            } else {
                DeliveryStatus::Retrying
            };
        }
        x.lease_until = None;
        x.next_attempt_at = Some(until);
        // A message is on its way: out of the backlog.
        x.parked = None;
        if x.notes.last().is_none_or(|n| !n.note.starts_with(why)) {
            x.note(now, format!("{why}: deferred"));
        }
        if self.store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped(Skip::Conflict));
        }
        x.version = d.version + 1;
        self.schedule(
            &x,
            Duration::from_millis(u64::try_from(until - now).unwrap_or(0)),
        )
        .await;
        Ok(DeliveryOutcome::Deferred { until, why })
    }

    /// Fails a delivery that cannot be sent at all (no attempt).
    pub(super) async fn fail_unsent(
        &self,
        d: OutboundDelivery,
        why: String,
        now: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        let mut x = d.clone();
        x.status = DeliveryStatus::Failed;
        x.lease_until = None;
        x.next_attempt_at = None;
        x.parked = None;
        x.last_error = Some(why.clone());
        x.note(now, format!("failed without an attempt: {why}"));
        x.notice_pending = Some(self.pending_notice(now));
        if self.store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped(Skip::Conflict));
        }
        x.version = d.version + 1;
        self.send_notice(&x, now).await;
        Ok(DeliveryOutcome::Failed {
            attempts: x.attempts,
        })
    }

    /// The notice of a delivery failing at `now`, its sender given until the lease margin ends.
    fn pending_notice(&self, now: i64) -> PendingDeliveryNotice {
        PendingDeliveryNotice {
            failed_at: now,
            deadline: now + ms(self.config.lease_margin),
        }
    }

    /// A failed delivery whose notice's deadline passed (its sender did not record it sent): takes
    /// it over (the deadline moves, so of two workers re-driven to it one goes on), then sends it.
    pub(super) async fn finish_notice(
        &self,
        d: OutboundDelivery,
        now: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        let Some(pending) = d.notice_pending else {
            return Ok(DeliveryOutcome::Skipped(Skip::Terminal));
        };
        let mut x = d.clone();
        x.notice_pending = Some(PendingDeliveryNotice {
            deadline: now + ms(self.config.lease_margin),
            ..pending
        });
        if self.store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped(Skip::Conflict));
        }
        x.version = d.version + 1;
        Ok(if self.send_notice(&x, now).await {
            DeliveryOutcome::NoticeSent
        } else {
            DeliveryOutcome::NoticePending
        })
    }

    /// Sends the pending notice of `d` (as stored, at its version) and records it sent. Never an
    /// error: a notice not sent, or not recorded, stays pending and the sweep finds it again.
    /// `true` when sent.
    async fn send_notice(&self, d: &OutboundDelivery, now: i64) -> bool {
        let Some(pending) = d.notice_pending else {
            return true;
        };
        let notice = DeliveryNotice {
            destination: d.destination.clone(),
            source: d.source.clone(),
            event_id: d.event_id.clone(),
            event_type: d.event_type.clone(),
            webhook_id: d.webhook_id.clone(),
            attempts: d.attempts,
            last_error: d.last_error.clone().unwrap_or_default(),
            failed_at: pending.failed_at,
        };
        if let Err(e) = self.queues.failed(&notice).await {
            tracing::warn!(delivery = %d.reference(), error = %e, "failure notice not sent; the sweep will find it");
            return false;
        }
        let metric = Metric::count(NAMESPACE, "DeliveriesFailed", 1)
            .with_property("Destination", d.destination.clone());
        self.metrics.emit(now, &[metric]);
        let mut sent = d.clone();
        sent.notice_pending = None;
        sent.note(now, "failure notice sent");
        match self.store.save_delivery(&sent, Some(d.version)).await {
            Ok(Applied::Done) => {}
            Ok(_) => {
                tracing::info!(delivery = %d.reference(), "the delivery changed after its notice was sent (retried?)")
            }
            Err(e) => {
                tracing::warn!(delivery = %d.reference(), error = %e.chain(), "failure notice sent but not recorded; the sweep may send it again")
            }
        }
        true
    }

    /// Schedules the next attempt of `d` (as stored) through the queue when the delay fits SQS
    /// (else the sweep finds it); the message carries the delivery ([`Work::carrying`]), so the
    /// attempt starts without reading it.
    pub(super) async fn schedule(&self, d: &OutboundDelivery, delay: Duration) {
        if ms(delay) > MAX_QUEUE_DELAY_MS {
            return;
        }
        if let Err(e) = self.queues.schedule(&Work::carrying(d), delay).await {
            // Durable in the open index: the sweep re-drives it.
            tracing::warn!(delivery = %d.reference(), error = %e, "retry not queued; the sweep will find it");
        }
    }

    /// Disables a destination (journaled), emitting the operational metric and log line.
    async fn disable(&self, id: &DestinationId, why: &str, now: i64) {
        let result = admin::update(&self.store, id, &self.actor, "disabled", now, |d| {
            if d.state == DestinationState::Disabled {
                return Err(DestinationError::Invalid("already disabled".into()));
            }
            d.state = DestinationState::Disabled;
            d.reason = Some(why.to_owned());
            Ok(why.to_owned())
        })
        .await;
        match result {
            Ok(_) => {
                self.destinations.invalidate();
                let metric = Metric::count(NAMESPACE, "DestinationDisabled", 1)
                    .with_property("Destination", id.as_str())
                    .with_note(format!("destination {id} disabled: {why}"));
                self.metrics.emit(now, &[metric]);
            }
            Err(admin::AdminError::Destination(_)) => {}
            Err(e) => {
                tracing::error!(destination = %id, error = %e, "could not disable the destination")
            }
        }
    }
}
