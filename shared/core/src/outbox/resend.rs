//! The operator's resends of deliveries, shared by `inboxctl` and the tests: retry a delivery (a new
//! round of the schedule, same `webhook-id`), replay an event to one destination or all, and
//! re-drive the deliveries a paused destination parked once it is resumed. A retry or replay
//! renews the event's body first ([`MessageStore::renew_body`]: a resend may come late in the
//! body's life), and resends nothing when the body is already gone.

use super::admin;
use super::delivery::{DeliveryRef, DeliveryStatus, OutboundDelivery};
use super::destination::{DestinationId, DestinationState};
use super::parking;
use super::queue::{OutboxQueues, Work};
use super::store::OutboxStore;
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
    x.parked = None;
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

/// How long after a resume its re-driven deliveries are due: longer than the destinations' cache
/// (`DESTINATION_CACHE_MS`, 5 s by default), so that no worker still sees the destination paused
/// and parks them again (with a longer cache, such a delivery waits for the sweep's release).
pub const RESUME_DELAY: Duration = Duration::from_secs(10);

/// Releases the deliveries that `destination` parked (call it once the destination is active
/// again): its backlog in the open index (one `Query`, no scan), oldest first, at the
/// destination's rate ([`parking::release`]), the first due `after` from `now` (longer than the
/// destinations' cache, so no worker still sees the pause) and each scheduled through `queue`
/// when given and its wait fits the queue (else the sweep finds it due). Parked deliveries are
/// not re-checked, so this (or the sweep, within a minute of seeing the destination active) is
/// what sends them. How many were released.
pub async fn resume<S: OutboxStore + ItemStore, Q: OutboxQueues>(
    store: &S,
    queue: Option<&Q>,
    destination: &DestinationId,
    operator: &str,
    now: i64,
    after: Duration,
) -> Result<usize, InfraError> {
    let rate = match admin::get(store, destination).await {
        Ok(Some(d)) => d.rate_per_sec,
        Ok(None) => return Ok(0),
        Err(admin::AdminError::Store(e)) => return Err(InfraError::Store(e)),
        Err(e) => {
            return Err(InfraError::Store(StoreError::Rejected(
                e.to_string().into(),
            )))
        }
    };
    let first = now.saturating_add(i64::try_from(after.as_millis()).unwrap_or(i64::MAX / 4));
    let why = format!("destination resumed by {operator}");
    let mut released = 0;
    loop {
        let batch = parking::release(
            store,
            queue,
            destination,
            rate,
            release_first(first, released, rate),
            now,
            parking::RELEASE_MAX,
            &why,
        )
        .await?;
        released += batch;
        if batch < parking::RELEASE_MAX {
            return Ok(released);
        }
    }
}

/// Where the next batch of a resume's release starts: after the `done` already released.
fn release_first(first: i64, done: usize, rate: f64) -> i64 {
    parking::release_slot(first, done, rate)
}
