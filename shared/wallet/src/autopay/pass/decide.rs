//! The charging pass's decisions, pure: what an attempt becomes when a try is claimed, when the
//! provider's reply is recorded, when it cannot be charged at all, when a recurring period falls
//! due, and when a charge's credit is late. Each returns a [`Transition`]: the records to write in
//! one transaction, the events published with them and the metrics that become true once they
//! commit. The pass ([`super::Pass`]) does the I/O; recurring periods are [`super::recurring`]'s.
//!
//! | the try | the attempt becomes | autopay | events |
//! |---|---|---|---|
//! | claimed (`Due`, or `Charging` past its lease) | `Charging`, the try's key (and, on a new try, the claim's time), due at the lease's end | — | — |
//! | succeeded | `Charged`, due at the credit deadline | — | — (the credit publishes `topped_up`) |
//! | pending (the charge exists, settles later) | `Pending`, the charge's reference, due at the next look-up ([`PENDING_LOOK`]) | — | — (its settlement decides) |
//! | declined soft, a rung left | `Due` at the rung's time from the FIRST failure, the next try | — | `autopay_failed` (next try's time) |
//! | declined hard, needs the customer, the last rung | `Ended` with the reason | `Suspended`, open attempt cleared, its month's reservation given back, the wallet flagged | `autopay_failed` (no next try), `autopay_suspended` |
//! | indeterminate | `Charging`, the SAME key (and the charge's reference if the answer named one: then it is looked up, never sent again), due at the lease's end | — | — |

//!
//! Whether a `Charging` try may be sent again at all is [`super::resend`]'s table.

use super::super::attempt::{Attempt, AttemptState, Autopay, AutopayStatus, TryRecord};
use super::super::charge::{idempotency_key, ChargeReply};
use super::super::ladder::{ChargeOutcome, Ladder, LadderEnd, NextTry};
use super::resend::first_claim;
use crate::balance::events::WalletEvent;
use crate::balance::model::month_of;
use crate::METRICS_NAMESPACE;
use inbox_core::clock::Millis;
use inbox_core::metrics::Metric;
use std::time::Duration;

/// One transaction's worth of change: what to write, publish and count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub attempt: Attempt,
    /// The wallet's autopay, when it changes (at the version it was read).
    pub autopay: Option<Autopay>,
    /// Published in the same write ([`WalletEvent::publish`]).
    pub events: Vec<WalletEvent>,
    /// Sets the wallet's `autopay_suspended` flag in the same write.
    pub flag_wallet: bool,
    /// True once the write commits; emitted by the charging function.
    pub metrics: Vec<Metric>,
}

impl Transition {
    pub(super) fn of(attempt: Attempt) -> Self {
        Self {
            attempt,
            autopay: None,
            events: Vec::new(),
            flag_wallet: false,
            metrics: Vec::new(),
        }
    }
}

pub(super) fn metric(name: &str, attempt: &Attempt) -> Metric {
    Metric::count(METRICS_NAMESPACE, name, 1)
        .with_property("Tenant", attempt.tenant.as_str())
        .with_property("Attempt", attempt.id.clone())
}

/// The try is claimed before its call: `Charging`, its idempotency key stored, due again at the
/// lease's end (a crash after the call repeats the same key then). A `Charging` attempt keeps its
/// key and its first claim's time: the try is the same. A new try records when it was first
/// claimed: the key's age at the provider counts from then, whether or not any answer was
/// recorded (a run killed mid-call records none).
pub fn claim(attempt: &Attempt, now: Millis, lease: Duration) -> Attempt {
    let (key, claimed_at, provider_ref) = match (&attempt.state, &attempt.idempotency_key) {
        (AttemptState::Charging, Some(key)) => (
            key.clone(),
            first_claim(attempt).unwrap_or(now),
            attempt.provider_ref.clone(),
        ),
        // A new try: no charge of it exists yet (a former try's declined charge is not its own).
        _ => (
            idempotency_key(&attempt.tenant, &attempt.id, attempt.try_no),
            now,
            None,
        ),
    };
    Attempt {
        state: AttemptState::Charging,
        idempotency_key: Some(key),
        claimed_at: Some(claimed_at),
        provider_ref,
        due: now.plus(lease),
        ..attempt.clone()
    }
}

/// How often a pending charge is looked up when its webhook has not settled it.
pub const PENDING_LOOK: Duration = Duration::from_secs(24 * 3600);

/// How long a charge may stay pending before it is reported (`AutopayPendingLong`): SEPA Direct
/// Debit takes up to 14 business days, the longest of Stripe's delayed-notification methods.
pub const PENDING_LONG: Duration = Duration::from_secs(21 * 24 * 3600);

/// Why a ladder ended, as the attempt and the suspension say it.
pub fn end_reason(end: &LadderEnd) -> String {
    match end {
        LadderEnd::Succeeded => "succeeded".into(),
        LadderEnd::HardDecline { code } => format!("hard_decline: {code}"),
        LadderEnd::NeedsCustomer { code } => format!("needs_customer: {code}"),
        LadderEnd::Exhausted { tries, code } => {
            format!("ladder_exhausted: {code} after {tries} tries")
        }
    }
}

/// What the timings of a recorded reply are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timings {
    pub ladder: Ladder,
    pub lease: Duration,
    /// How long after a success its credit may take before reconciliation asks the provider.
    pub credit_within: Duration,
}

/// The ladder a wallet's declines follow: its own (`inboxctl wallet autopay set --ladder`) when
/// it set one other than the default, else the function's (`AUTOPAY_LADDER_DAYS`).
pub fn ladder_of<'a>(autopay: Option<&'a Autopay>, configured: &'a Ladder) -> &'a Ladder {
    match autopay {
        Some(a) if a.ladder != Ladder::default() => &a.ladder,
        _ => configured,
    }
}

/// The reply to the claimed try of `attempt` (`Charging`, as re-read after the call), recorded.
pub fn record(
    attempt: &Attempt,
    autopay: Option<&Autopay>,
    reply: &ChargeReply,
    timings: &Timings,
    now: Millis,
) -> Transition {
    let mut next = attempt.clone();
    if reply.provider_ref.is_some() {
        next.provider_ref = reply.provider_ref.clone();
    }
    let journal = |outcome: &str, next_due| TryRecord {
        try_no: attempt.try_no,
        at: now,
        outcome: outcome.to_owned(),
        next_due,
    };
    let first_failure = attempt.first_failure.unwrap_or(now);
    match ladder_of(autopay, &timings.ladder).after(attempt.rung, &reply.outcome, first_failure) {
        NextTry::End(LadderEnd::Succeeded) => {
            next.state = AttemptState::Charged;
            next.due = now.plus(timings.credit_within);
            next.tries.push(journal("succeeded", None));
            let mut t = Transition::of(next);
            let m = metric("AutopayCharged", attempt)
                .with_property("Replayed", reply.replayed.to_string());
            t.metrics.push(m);
            t
        }
        NextTry::Pending => {
            next.state = AttemptState::Pending;
            next.due = now.plus(PENDING_LOOK);
            let mut t = match next.tries.last_mut() {
                Some(last) if last.try_no == attempt.try_no && last.outcome == "pending" => {
                    last.next_due = Some(next.due);
                    Transition::of(next)
                }
                _ => {
                    next.tries.push(journal("pending", Some(next.due)));
                    let mut t = Transition::of(next);
                    t.metrics.push(metric("AutopayPending", attempt).with_note(
                        "the provider took the charge and settles it later; never sent again",
                    ));
                    t
                }
            };
            let since = first_claim(attempt).unwrap_or(attempt.created_at);
            if since.plus(PENDING_LONG) <= now {
                t.metrics.push(
                    metric("AutopayPendingLong", attempt)
                        .with_note("a charge is still pending past the longest settlement time"),
                );
            }
            t
        }
        NextTry::Repeat => {
            next.due = now.plus(timings.lease);
            // One line per try however often it is repeated (the first keeps its time).
            match next.tries.last_mut() {
                Some(last) if last.try_no == attempt.try_no && last.outcome == "indeterminate" => {
                    last.next_due = Some(next.due);
                }
                _ => next.tries.push(journal("indeterminate", Some(next.due))),
            }
            let mut t = Transition::of(next);
            t.metrics.push(metric("AutopayIndeterminate", attempt).with_note(
                "the provider's answer was not decisive; the charge it named is looked up, else the same key is repeated",
            ));
            t
        }
        NextTry::Rung { rung, due } => {
            let code = decline_code(&reply.outcome);
            next.state = AttemptState::Due;
            next.rung = rung;
            next.try_no = attempt.try_no + 1;
            next.first_failure = Some(first_failure);
            next.idempotency_key = None;
            next.claimed_at = None;
            next.provider_ref = None;
            next.due = due;
            next.tries.push(journal(&code, Some(due)));
            let mut t = Transition::of(next);
            t.events.push(WalletEvent::AutopayFailed {
                tenant: attempt.tenant.clone(),
                attempt: attempt.id.clone(),
                try_no: attempt.try_no,
                code: code.clone(),
                next_try_at: Some(due),
            });
            t.metrics.push(declined(attempt, &reply.outcome));
            t
        }
        NextTry::End(end) => {
            let code = decline_code(&reply.outcome);
            let mut t = ended(attempt, autopay, &end_reason(&end), now, true);
            t.attempt.provider_ref = next.provider_ref;
            t.attempt.first_failure = Some(first_failure);
            if let Some(last) = t.attempt.tries.last_mut() {
                last.outcome = code.clone();
            }
            t.events.insert(
                0,
                WalletEvent::AutopayFailed {
                    tenant: attempt.tenant.clone(),
                    attempt: attempt.id.clone(),
                    try_no: attempt.try_no,
                    code,
                    next_try_at: None,
                },
            );
            t.metrics.insert(0, declined(attempt, &reply.outcome));
            t
        }
    }
}

fn decline_code(outcome: &ChargeOutcome) -> String {
    match outcome {
        ChargeOutcome::DeclinedSoft { code }
        | ChargeOutcome::DeclinedHard { code }
        | ChargeOutcome::NeedsCustomer { code } => code.clone(),
        ChargeOutcome::Succeeded => "succeeded".into(),
        ChargeOutcome::Pending => "pending".into(),
        ChargeOutcome::Indeterminate => "indeterminate".into(),
    }
}

fn declined(attempt: &Attempt, outcome: &ChargeOutcome) -> Metric {
    let kind = match outcome {
        ChargeOutcome::DeclinedHard { .. } => "hard",
        ChargeOutcome::NeedsCustomer { .. } => "needs_customer",
        _ => "soft",
    };
    metric("AutopayDeclined", attempt)
        .with_property("Code", decline_code(outcome))
        .with_property("Kind", kind)
}

/// `attempt` ended without a charge, with `reason`; its wallet's open attempt cleared. With
/// `suspend`, autopay is suspended with the reason, the wallet flagged and
/// `wallet.autopay_suspended` published.
pub fn ended(
    attempt: &Attempt,
    autopay: Option<&Autopay>,
    reason: &str,
    now: Millis,
    suspend: bool,
) -> Transition {
    let mut next = attempt.clone();
    next.state = AttemptState::Ended {
        reason: reason.to_owned(),
    };
    next.idempotency_key = None;
    next.tries.push(TryRecord {
        try_no: attempt.try_no,
        at: now,
        outcome: reason.to_owned(),
        next_due: None,
    });
    let mut t = Transition::of(next);
    let mut counted = metric("AutopayEnded", attempt).with_property("Reason", reason);
    if let Some(autopay) = autopay {
        let mut a = autopay.clone();
        if a.open_attempt.as_deref() == Some(attempt.id.as_str()) {
            a.open_attempt = None;
            // Nothing was charged: the month's reservation made with the attempt is given back.
            a.give_back(&month_of(attempt.created_at.get()), attempt.amount.minor());
        }
        if suspend {
            a.status = AutopayStatus::Suspended {
                reason: reason.to_owned(),
            };
            t.flag_wallet = true;
            t.events.push(WalletEvent::AutopaySuspended {
                tenant: attempt.tenant.clone(),
                subject: attempt.id.clone(),
                reason: reason.to_owned(),
            });
            counted = metric("AutopaySuspended", attempt)
                .with_property("Reason", reason)
                .with_note("autopay suspended: the wallet's owner must act");
        }
        a.updated_at = now;
        t.autopay = Some(a);
    }
    t.metrics.push(counted);
    t
}

/// Why a `Due` attempt cannot be charged at all (ended before any call), if it cannot:
/// `Some((reason, suspend))`.
pub fn refusal(autopay: Option<&Autopay>) -> Option<(String, bool)> {
    let Some(autopay) = autopay else {
        return Some((
            "no_autopay: the wallet has no autopay settings".into(),
            false,
        ));
    };
    match &autopay.status {
        AutopayStatus::Paused => return Some(("autopay_paused".into(), false)),
        AutopayStatus::Suspended { reason } => {
            return Some((format!("autopay_suspended: {reason}"), false))
        }
        AutopayStatus::Active => {}
    }
    if autopay.method.is_none() {
        return Some(("no_payment_method: none saved".into(), true));
    }
    None
}

/// A `Charged` attempt whose credit did not come by its deadline: journaled with what the
/// provider says now, due again for the next look; never charged again.
pub fn uncredited(
    attempt: &Attempt,
    found: Option<&ChargeReply>,
    now: Millis,
    credit_within: Duration,
) -> Transition {
    let says = match found {
        None => "no charge found".to_owned(),
        Some(reply) => format!(
            "{} {}",
            decline_code(&reply.outcome),
            reply.provider_ref.as_deref().unwrap_or("(no reference)")
        ),
    };
    let mut next = attempt.clone();
    next.due = now.plus(credit_within);
    if let Some(r) = found.and_then(|f| f.provider_ref.clone()) {
        next.provider_ref = Some(r);
    }
    next.tries.push(TryRecord {
        try_no: attempt.try_no,
        at: now,
        outcome: format!("uncredited: the provider says {says}"),
        next_due: Some(next.due),
    });
    let mut t = Transition::of(next);
    t.metrics.push(
        metric("AutopayUncredited", attempt)
            .with_property("ProviderSays", says)
            .with_note("a charge's credit did not come by its deadline; never charged again"),
    );
    t
}

#[cfg(test)]
mod tests;
