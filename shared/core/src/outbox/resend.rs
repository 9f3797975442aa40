//! The operator's resends of deliveries, shared by `inboxctl` and the tests: retry a delivery (a new
//! round of the schedule, same `webhook-id`), replay an event to one destination or all, and
//! re-drive the deliveries a paused destination parked once it is resumed. A retry or replay
//! renews the event's body first ([`MessageStore::renew_body`]: a resend may come late in the
//! body's life), and resends nothing when the body is already gone.

use super::admin;
use super::delivery::{DeliveryRef, DeliveryStatus, OutboundDelivery};
use super::destination::{DestinationId, DestinationState};
use super::queue::{OutboxQueues, Work};
use super::schema::{outbox_shards, DELIVERY_SK};
use super::store::OutboxStore;
use super::worker::PAUSED;
use crate::clock::Millis;
use crate::domain::MessageKey;
use crate::process::InfraError;
use crate::store::{Applied, ItemStore, MessageStore, StoreError};
use serde::Serialize;
use std::time::Duration;

/// What a retry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryOutcome {
    /// Back to `pending`, a new round of attempts; re-driven if a queue was given.
    Retried,
    /// Created (a replay to a destination that had no delivery of the event).
    Created,
    Missing,
    /// Being delivered right now, or (without `force`) not failed.
    NotRetryable(DeliveryStatus),
    /// It changed meanwhile; try again.
    Conflict,
    /// The event's body can no longer be read (expired after the retention, or deleted): there is
    /// nothing to send, so nothing was changed.
    BodyGone,
}

/// Renews the body of `key` for a resend; `false` when it is gone.
async fn renewed<S: MessageStore>(store: &S, key: &MessageKey) -> Result<bool, InfraError> {
    match store.renew_body(key).await {
        Ok(()) => Ok(true),
        Err(StoreError::Unreadable(e)) => {
            tracing::warn!(source = %key.source, event_id = %key.event_id, error = %crate::error::one_line(e.as_ref()), "not resent: the event's body is gone");
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// Puts a delivery back to `pending` (attempts of the new round at 0, the journal kept, a note
/// naming the operator) and re-drives it through `queue` when given (else the sweep finds it
/// within a minute). Without `force`, only failed deliveries. The event's body is renewed first.
pub async fn retry<S: OutboxStore + MessageStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    r: &DeliveryRef,
    operator: &str,
    force: bool,
    now: i64,
) -> Result<RetryOutcome, InfraError> {
    retry_with(store, queue, r, operator, force, now, true).await
}

/// [`retry`], renewing the body first when `renew` (a replay renews it once for all).
async fn retry_with<S: OutboxStore + MessageStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    r: &DeliveryRef,
    operator: &str,
    force: bool,
    now: i64,
    renew: bool,
) -> Result<RetryOutcome, InfraError> {
    let Some(d) = store.delivery(r).await? else {
        return Ok(RetryOutcome::Missing);
    };
    let allowed = match d.status {
        DeliveryStatus::Failed => true,
        DeliveryStatus::Delivering => d.lease_until.is_some_and(|l| l <= now) && force,
        _ => force,
    };
    if !allowed {
        return Ok(RetryOutcome::NotRetryable(d.status));
    }
    if renew && !renewed(store, &r.key()).await? {
        return Ok(RetryOutcome::BodyGone);
    }
    let mut x = d.clone();
    x.note(
        now,
        format!(
            "retried by {operator} (was {}, {} attempts)",
            d.status.as_str(),
            d.attempts
        ),
    );
    x.status = DeliveryStatus::Pending;
    x.attempts = 0;
    x.next_attempt_at = Some(now);
    x.lease_until = None;
    x.expires_at = None;
    x.notice_pending = None;
    if store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
        return Ok(RetryOutcome::Conflict);
    }
    if let Some(q) = queue {
        q.redrive(&[Work::Delivery(r.clone())]).await?;
    }
    Ok(RetryOutcome::Retried)
}

/// Delivers `key` again: to `only` if given, else to every destination that has a delivery of it
/// and every active destination that wants it now (created for those without one). Existing
/// deliveries keep their `webhook-id`. The event's body is renewed once first; when it is gone,
/// every target answers [`RetryOutcome::BodyGone`].
pub async fn replay<S: OutboxStore + ItemStore + MessageStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    key: &MessageKey,
    only: Option<&DestinationId>,
    operator: &str,
    now: i64,
) -> Result<Vec<(DestinationId, RetryOutcome)>, InfraError> {
    let Some(message) = store.get_head(key).await? else {
        return Ok(Vec::new());
    };
    let body_kept = renewed(store, key).await?;
    let destinations = admin::list(store).await.map_err(|e| match e {
        admin::AdminError::Store(s) => InfraError::Store(s),
        other => InfraError::Store(crate::store::StoreError::Rejected(other.to_string().into())),
    })?;
    let event_type = message.event_type.as_ref().map(|t| t.as_str());
    let mut targets: Vec<DestinationId> = destinations
        .iter()
        .filter(|d| only.is_none_or(|o| *o == d.id))
        .filter(|d| {
            only.is_some()
                || (d.state == DestinationState::Active && d.wants(key.source.as_str(), event_type))
        })
        .map(|d| d.id.clone())
        .collect();
    if only.is_none() {
        for d in store.all_deliveries().await? {
            if d.key() == *key && !targets.contains(&d.destination) {
                targets.push(d.destination);
            }
        }
    }
    let mut out = Vec::new();
    for id in targets {
        let r = DeliveryRef {
            destination: id.clone(),
            source: key.source.clone(),
            event_id: key.event_id.clone(),
        };
        if !body_kept {
            out.push((id, RetryOutcome::BodyGone));
            continue;
        }
        let outcome = match store.delivery(&r).await? {
            Some(_) => retry_with(store, queue, &r, operator, true, now, false).await?,
            None => {
                let mut d = OutboundDelivery::new(&id, key, message.event_type.clone(), now);
                d.note(now, format!("replayed by {operator}"));
                match store.save_delivery(&d, None).await? {
                    Applied::Done => {
                        if let Some(q) = queue {
                            q.redrive(&[Work::Delivery(r.clone())]).await?;
                        }
                        RetryOutcome::Created
                    }
                    _ => RetryOutcome::Conflict,
                }
            }
        };
        out.push((id, outcome));
    }
    Ok(out)
}

/// Whether `d` waits only because its destination was paused: deferred for it (the last note)
/// after its last attempt, and not due by `at`.
fn parked_by_pause(d: &OutboundDelivery, at: i64) -> bool {
    let Some(note) = d.notes.last() else {
        return false;
    };
    matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Retrying)
        && note.note.starts_with(PAUSED)
        && d.journal.last().is_none_or(|a| a.at <= note.at)
        && d.next_attempt_at.is_some_and(|t| t > at)
}

/// How long after a resume its re-driven deliveries are due: longer than the destinations' cache
/// (`DESTINATION_CACHE_MS`, 5 s by default), so that no worker still sees the destination paused
/// and parks them again (with a longer cache, those wait for the hourly re-check).
pub const RESUME_DELAY: Duration = Duration::from_secs(10);

/// Re-drives the deliveries that `destination` parked while it was paused (call it once the
/// destination is active again): each is due `after` from `now` (longer than the destinations'
/// cache, so no worker still sees the pause) and, when `queue` is given, scheduled through it then
/// (else the sweep finds it within a minute). Paused deliveries are parked instead of re-checked
/// every minute, so this is what sends them. How many were re-driven.
pub async fn resume<S: OutboxStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    destination: &DestinationId,
    operator: &str,
    now: i64,
    after: Duration,
) -> Result<usize, InfraError> {
    let prefix = format!("OUT#{destination}#");
    let due_at = now.saturating_add(i64::try_from(after.as_millis()).unwrap_or(i64::MAX / 4));
    let mut redriven = 0;
    for shard in outbox_shards() {
        // Every open delivery of the shard, whenever due: the parked ones are due far ahead.
        for item in store
            .due_work_items(&shard, Millis::new(i64::MAX), usize::MAX)
            .await?
        {
            if item.sk != DELIVERY_SK || !item.pk.starts_with(&prefix) {
                continue;
            }
            let Some(Work::Delivery(r)) = super::work_of(&item) else {
                continue;
            };
            let Some(d) = store.delivery(&r).await? else {
                continue;
            };
            if !parked_by_pause(&d, due_at) {
                continue;
            }
            let mut x = d.clone();
            x.next_attempt_at = Some(due_at);
            x.note(now, format!("destination resumed by {operator}: re-driven"));
            if store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
                continue; // a worker moved it meanwhile: it is no longer parked
            }
            if let Some(q) = queue {
                // Durable as due: if this send fails, the sweep re-drives it.
                if let Err(e) = q.schedule(&Work::Delivery(r.clone()), after).await {
                    tracing::warn!(delivery = %r, error = %e, "not queued; the sweep will find it");
                }
            }
            redriven += 1;
        }
    }
    Ok(redriven)
}
