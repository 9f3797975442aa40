//! The worker's steps 5 and 6 ([`super::worker`]): claim the delivery (the attempt is counted
//! here, after the attempt limit is checked), read its body and sign it, and POST it; the result
//! goes to step 7 (`record.rs`).

use super::attempt::AttemptResult;
use super::cache::Loaded;
use super::delivery::{AttemptRecord, DeliveryStatus, OutboundDelivery};
use super::sign::{SOURCE_HEADER, TYPE_HEADER};
use super::store::{OutboxStore, WorkerState};
use super::transport::{Outgoing, Transport};
use super::worker::{ms, Deliverer, DeliveryOutcome, DeliveryPorts, Skip};
use crate::clock::Clock;
use crate::process::InfraError;
use crate::store::Applied;
use std::time::{Duration, Instant};

impl<P: DeliveryPorts> Deliverer<P> {
    /// Steps 5 to 7: claim, send, record.
    pub(super) async fn attempt(
        &self,
        d: OutboundDelivery,
        loaded: &Loaded,
        state: WorkerState,
        now: i64,
        lease: Duration,
    ) -> Result<DeliveryOutcome, InfraError> {
        let dest = &loaded.destination;
        let mut claimed = d.clone();
        if d.status == DeliveryStatus::Delivering {
            claimed.journal_attempt(AttemptRecord {
                at: d.lease_until.unwrap_or(now),
                attempt: d.attempts,
                status: None,
                duration_ms: 0,
                error: Some("no result recorded: the worker stopped after claiming (its lease lapsed); the request may have been sent".into()),
                body: String::new(),
                outcome: "lease lapsed".into(),
            });
        }
        if let Some(why) = super::attempt::exhausted(&dest.schedule, d.attempts) {
            return self.fail_unsent(claimed, why, now).await;
        }
        let attempt = d.attempts.saturating_add(1);
        claimed.status = DeliveryStatus::Delivering;
        claimed.attempts = attempt;
        claimed.lease_until = Some(now + ms(lease));
        claimed.next_attempt_at = None;
        // Out of the backlog while it is tried: a lapsed lease is found in its open shard.
        claimed.parked = None;
        if self.store.save_delivery(&claimed, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped(Skip::Conflict));
        }
        claimed.version = d.version + 1;
        let (body, signer) = match self.sendable(&d.key(), loaded).await? {
            Ok(sendable) => sendable,
            Err(why) => {
                let refused = AttemptResult::Refused(why);
                return self.record(claimed, loaded, state, refused, 0, now).await;
            }
        };
        let mut headers = match signer.sign(&d.webhook_id, self.clock.now_secs(), body.bytes()) {
            Ok(h) => h,
            Err(e) => {
                return self
                    .record(
                        claimed,
                        loaded,
                        state,
                        AttemptResult::Refused(e.to_string()),
                        0,
                        now,
                    )
                    .await
            }
        };
        headers.push(("content-type".into(), "application/json".into()));
        headers.push((SOURCE_HEADER.into(), d.source.to_string()));
        if let Some(t) = &d.event_type {
            headers.push((TYPE_HEADER.into(), t.to_string()));
        }
        let started = Instant::now();
        let result = self
            .transport
            .post(Outgoing {
                url: &dest.url,
                headers: &headers,
                body: body.bytes(),
                timeout: dest.timeout(),
            })
            .await;
        let duration = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.record(claimed, loaded, state, result, duration, now)
            .await
    }
}
