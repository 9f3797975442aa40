//! Recurring periods, pure: the attempt of the period `next` of a wallet's recurring charge, due
//! at its date computed from the anchor ([`Schedule::due_at`](crate::autopay::Schedule::due_at),
//! never from the day a charge succeeded), its id derived from the period (a re-run makes the same
//! one), checked against the monthly cap.
//!
//! | the wallet | the period |
//! |---|---|
//! | another attempt open | waits for it |
//! | autopay paused or suspended | skipped: an `Ended` attempt says why (`AutopaySkipped`) |
//! | the cap refuses it | refused: an `Ended` attempt, `wallet.autopay_limit_reached` (`AutopayLimitReached`) |
//! | otherwise | a `Due` attempt, the wallet's open attempt, counted in the month |
//!
//! In every case but the first, `next` advances in the same write.

use super::decide::{ended, metric, Transition};
use crate::autopay::attempt::{Attempt, AttemptState, Autopay, AutopayStatus, Reason, Recurring};
use crate::autopay::charge::tenant_tag;
use crate::balance::events::WalletEvent;
use crate::balance::model::month_of;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;

/// A recurring charge's next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecurringStep {
    /// No recurring charge, or its next period is not due (or past the calendar's end).
    NotDue,
    /// Another attempt of the wallet is open: the period waits for it to end.
    Waits { open: String },
    /// The period's attempt (`Due`, or `Ended` when it is skipped or refused) and the autopay
    /// advanced past it.
    Make(Box<Transition>),
}

/// The attempt id of period `k` of `recurring` of `tenant`: the same on every re-run, new for a
/// new anchor, and never another tenant's (ids name the charge at the provider, whose account
/// every tenant shares: [`tenant_tag`]).
pub fn recurring_id(tenant: &TenantId, recurring: &Recurring, k: u32) -> String {
    let anchor = recurring.schedule.anchor();
    format!(
        "rec-{}-{:04}{:02}{:02}-{}-{k}",
        tenant_tag(tenant),
        anchor.year(),
        anchor.month(),
        anchor.day(),
        recurring.schedule.every().as_str()
    )
}

/// The next step of `autopay`'s recurring charge at `now`: the period `next` is made an
/// attempt at its due date (computed from the anchor), checked against the monthly cap; a paused
/// or suspended autopay skips it (an `Ended` attempt says so).
pub fn recurring(autopay: &Autopay, now: Millis) -> RecurringStep {
    let Some(recurring) = &autopay.recurring else {
        return RecurringStep::NotDue;
    };
    let k = recurring.next;
    let Some(due) = recurring.schedule.due_at(k).filter(|due| *due <= now) else {
        return RecurringStep::NotDue;
    };
    if let Some(open) = &autopay.open_attempt {
        return RecurringStep::Waits { open: open.clone() };
    }
    let attempt = Attempt {
        id: recurring_id(&autopay.tenant, recurring, k),
        tenant: autopay.tenant.clone(),
        reason: Reason::Recurring { period: k },
        amount: recurring.amount,
        state: AttemptState::Due,
        try_no: 0,
        rung: 0,
        first_failure: None,
        due,
        idempotency_key: None,
        claimed_at: None,
        provider_ref: None,
        tries: Vec::new(),
        created_at: now,
        version: None,
    };
    let mut next = autopay.clone();
    next.updated_at = now;
    if let Some(r) = next.recurring.as_mut() {
        r.next = k.saturating_add(1);
    }
    let skip = match &autopay.status {
        AutopayStatus::Active => None,
        AutopayStatus::Paused => Some("autopay_paused".to_owned()),
        AutopayStatus::Suspended { reason } => Some(format!("autopay_suspended: {reason}")),
    };
    if let Some(reason) = skip {
        let mut t = ended(&attempt, None, &reason, now, false);
        t.metrics = vec![metric("AutopaySkipped", &attempt)
            .with_property("Reason", reason)
            .with_note("a recurring charge fell due while autopay was not active; skipped")];
        t.autopay = Some(next);
        return RecurringStep::Make(Box::new(t));
    }
    let month = month_of(now.get());
    let charged = recurring
        .amount
        .currency()
        .amount(autopay.month_charged.get(&month).copied().unwrap_or(0));
    if let Some(cap) = autopay.cap {
        if let Err(refusal) = cap.allows(charged, recurring.amount) {
            let mut t = ended(
                &attempt,
                None,
                &format!("limit_reached: {refusal}"),
                now,
                false,
            );
            t.events.push(WalletEvent::LimitReached {
                tenant: autopay.tenant.clone(),
                month: month.clone(),
                wanted: refusal.wanted,
                charged: refusal.charged,
                cap: refusal.cap,
            });
            t.metrics = vec![metric("AutopayLimitReached", &attempt)
                .with_property("Month", month)
                .with_note("the monthly cap refused a recurring charge")];
            t.autopay = Some(next);
            return RecurringStep::Make(Box::new(t));
        }
    }
    if let Err(overflow) = next.count_charge(&month, recurring.amount.minor()) {
        let mut t = ended(
            &attempt,
            None,
            &format!("limit_reached: {overflow}"),
            now,
            false,
        );
        t.autopay = Some(next);
        return RecurringStep::Make(Box::new(t));
    }
    next.open_attempt = Some(attempt.id.clone());
    let mut t = Transition::of(attempt);
    t.autopay = Some(next);
    RecurringStep::Make(Box::new(t))
}
