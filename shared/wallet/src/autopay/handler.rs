//! The wallet handler's autopay, each decision written in the transaction of the event that makes
//! it:
//!
//! - **the threshold**: a hold or debit after which `available` is at or below the top-up
//!   threshold, with autopay active, a saved method and no open attempt, writes the attempt (`Due`
//!   at once; its id derived from the event, so a re-run makes the same one) and the settings item
//!   (`open_attempt`, the month's charges) at the version read: a concurrent event that decided
//!   the same conflicts, is re-run, and then sees the open attempt — a burst of debits across the
//!   threshold makes ONE attempt. The monthly cap refusing makes none: the first refusal of a
//!   month is reported (the `AutopayLimitReached` metric and `wallet.autopay_limit_reached`) and
//!   remembered on the settings (`limit_reported`). See [`crate::autopay::rules`].
//! - **the credit**: a `payment_intent.succeeded` naming an attempt (`metadata.attempt`) is
//!   credited by the payment rules like any top-up (once per payment, whichever of the webhook
//!   and the charging pass's answer comes first); in the same transaction the attempt becomes
//!   `Credited` (at its version: the pass writing it meanwhile conflicts, one of the two is re-run
//!   on what the other wrote), the settings' `open_attempt` is cleared and `wallet.topped_up` is
//!   published. An attempt that had ended (its ladder gave up) but whose charge did succeed is
//!   credited all the same: the money was taken.
//! - **the saved method**: a setup the provider reports saves its customer and payment method on
//!   the settings and names the tenant on the payment-method index; `payment_method.detached` of
//!   the saved method clears it and suspends autopay (`wallet.autopay_suspended`). The index
//!   remembers a detached method, so a setup processed after its detach suspends instead of
//!   saving: the outcome is the same in either order. Each change is journaled.

use crate::autopay::items::{derived_attempt_id, AutopayLog, MethodIndex};
use crate::autopay::ledger::{self, ThresholdError};
use crate::autopay::parse::{MethodNotice, Unsettled};
use crate::autopay::rules::{top_up, TopUp};
use crate::autopay::{Attempt, AttemptState, Autopay, AutopayStatus, Reason, SavedMethod};
use crate::balance::events::WalletEvent;
use crate::balance::handler::{read_failed, wallet, Unhandled};
use crate::balance::model::month_of;
use crate::balance::model::Wallet;
use crate::balance::views::WalletViews;
use crate::money::Money;
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::clock::Millis;
use inbox_core::message::StoredMessage;
use inbox_core::metrics::Metric;
use inbox_core::process::registry::HandlerOutcome;
use inbox_core::store::{Effect, ItemStore};

/// The monthly cap refused an autopay charge (reported once per wallet and month).
fn limit_reached(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "AutopayLimitReached", 1)
        .with_property("Tenant", tenant)
        .with_note(
            "the monthly cap refused an autopay charge; wallet.autopay_limit_reached published",
        )
}

/// An autopay attempt was made at the threshold.
fn attempt_made(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "AutopayAttemptMade", 1)
        .with_property("Tenant", tenant)
        .with_note("a hold or debit took the wallet to its top-up threshold")
}

fn publish(e: &WalletEvent, now: Millis) -> Result<Effect, Unhandled> {
    e.publish(now)
        .map_err(|err| Unhandled::Permanent(format!("the {} event: {err}", e.event_type())))
}

fn journal(m: &StoredMessage, tenant: &TenantId, action: &str, detail: String) -> Effect {
    let log = AutopayLog {
        at: Millis::new(m.received_at),
        actor: m.source.to_string(),
        action: action.to_owned(),
        detail,
    };
    log.create(tenant, m.event_id.as_str())
}

/// What autopay writes after a hold or debit at `now_ms` that left `available` where it is, given
/// the wallet's autopay settings as read: the attempt (its id derived from `origin`, the event or
/// request that crossed, so a re-run makes the same one) and the settings at their version, or
/// the cap's first refusal of the month; nothing otherwise. Shared by the webhook movements and
/// the wallet API's holds. `Err`: the refusal's event could not be written (the reason).
pub(crate) fn threshold_writes(
    autopay: Option<Autopay>,
    tenant: &TenantId,
    available: Money,
    now_ms: i64,
    origin: [&str; 2],
) -> Result<(Vec<Effect>, Vec<Metric>), String> {
    let Some(mut autopay) = autopay else {
        return Ok((Vec::new(), Vec::new()));
    };
    let now = Millis::new(now_ms);
    match top_up(&autopay, available, now_ms) {
        TopUp::Nothing | TopUp::Refused { report: false, .. } => Ok((Vec::new(), Vec::new())),
        TopUp::Attempt { amount, month } => {
            let attempt = Attempt {
                id: derived_attempt_id("thr", &origin),
                tenant: tenant.clone(),
                reason: Reason::Threshold,
                amount,
                state: AttemptState::Due,
                try_no: 0,
                rung: 0,
                first_failure: None,
                due: now,
                idempotency_key: None,
                claimed_at: None,
                provider_ref: None,
                tries: Vec::new(),
                created_at: now,
                version: None,
            };
            autopay
                .count_charge(&month, amount.minor())
                .map_err(|e| e.to_string())?;
            autopay.open_attempt = Some(attempt.id.clone());
            autopay.updated_at = now;
            Ok((
                vec![attempt.replace(), autopay.replace()],
                vec![attempt_made(tenant)],
            ))
        }
        TopUp::Refused { refusal, month, .. } => {
            let event = WalletEvent::LimitReached {
                tenant: tenant.clone(),
                month: month.clone(),
                wanted: refusal.wanted,
                charged: refusal.charged,
                cap: refusal.cap,
            };
            let published = event
                .publish(now)
                .map_err(|err| format!("the {} event: {err}", event.event_type()))?;
            autopay.limit_reported = Some(month);
            autopay.updated_at = now;
            Ok((
                vec![autopay.replace(), published],
                vec![limit_reached(tenant)],
            ))
        }
    }
}

async fn autopay_of<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Option<Autopay>, Unhandled> {
    ledger::autopay(store, tenant)
        .await
        .map_err(read_failed("the autopay settings"))
}

/// What autopay writes after a hold or debit that left `wallet` at `available` (on the
/// viewed AUTOPAY item of a sharded wallet: [`threshold`](crate::autopay::ledger::threshold)).
pub(crate) async fn at_threshold<S: ItemStore>(
    store: &S,
    views: &WalletViews,
    m: &StoredMessage,
    wallet: &Wallet,
    available: Money,
) -> Result<(Vec<Effect>, Vec<Metric>), Unhandled> {
    let origin = [m.source.as_str(), m.event_id.as_str()];
    ledger::threshold(store, wallet, views, available, m.received_at, origin)
        .await
        .map_err(|e| match e {
            ThresholdError::Read(e) => read_failed("the autopay settings")(e),
            ThresholdError::Writes(reason) => Unhandled::Permanent(reason),
        })
}

/// Closes the attempt a credited payment intent names: `Credited`, the settings' open attempt
/// cleared, `wallet.topped_up` published (nothing if it was credited already).
pub(crate) async fn close_attempt<S: ItemStore>(
    store: &S,
    m: &StoredMessage,
    tenant: &TenantId,
    id: &str,
    payment: &str,
    credited: Money,
) -> Result<Vec<Effect>, Unhandled> {
    let found = ledger::attempt(store, tenant, id)
        .await
        .map_err(read_failed("the autopay attempt"))?;
    let Some(mut attempt) = found.filter(|a| a.state != AttemptState::Credited) else {
        return Ok(Vec::new());
    };
    let now = Millis::new(m.received_at);
    // An attempt that had ended gave its month's reservation back: the money was taken
    // after all, so it counts again.
    let recount = matches!(attempt.state, AttemptState::Ended { .. });
    attempt.state = AttemptState::Credited;
    attempt.provider_ref = Some(payment.to_owned());
    let mut effects = vec![attempt.replace()];
    if let Some(mut autopay) = autopay_of(store, tenant).await? {
        let open = autopay.open_attempt.as_deref() == Some(id);
        if open {
            autopay.open_attempt = None;
        }
        if recount {
            autopay
                .count_charge(&month_of(attempt.created_at.get()), attempt.amount.minor())
                .map_err(|e| Unhandled::Permanent(e.to_string()))?;
        }
        if open || recount {
            autopay.updated_at = now;
            effects.push(autopay.replace());
        }
    }
    let event = WalletEvent::ToppedUp {
        tenant: tenant.clone(),
        attempt: id.to_owned(),
        amount: credited,
        payment: payment.to_owned(),
    };
    effects.push(publish(&event, now)?);
    Ok(effects)
}

/// Saves `method` for `tenant` (or, if the provider detached it already, suspends).
pub(crate) async fn method_effects<S: ItemStore>(
    store: &S,
    m: &StoredMessage,
    tenant: &TenantId,
    method: &SavedMethod,
) -> Result<Vec<Effect>, Unhandled> {
    let pm = &method.payment_method;
    let index = ledger::method_index(store, pm)
        .await
        .map_err(read_failed("the payment method's index"))?;
    let now = Millis::new(m.received_at);
    let stored = autopay_of(store, tenant).await?;
    let mut autopay = stored.unwrap_or_else(|| Autopay::new(tenant.clone(), now));
    autopay.updated_at = now;
    if index.as_ref().is_some_and(|i| i.detached) {
        // As if saved, then detached: the same outcome as the other order.
        return suspend_detached(m, autopay, pm, true);
    }
    let mut index = index.unwrap_or_else(|| MethodIndex {
        payment_method: pm.clone(),
        ..Default::default()
    });
    if autopay.method.as_ref() == Some(method) && index.tenant.as_ref() == Some(tenant) {
        return Ok(Vec::new());
    }
    autopay.method = Some(method.clone());
    index.tenant = Some(tenant.clone());
    let detail = format!("customer {}, payment method {pm}", method.customer);
    Ok(vec![
        autopay.replace(),
        index.replace(),
        journal(m, tenant, "method-saved", detail),
    ])
}

/// The writes that suspend `autopay` because `pm` was detached, if it is (or would have
/// been) its method and it is not suspended for that already.
fn suspend_detached(
    m: &StoredMessage,
    mut autopay: Autopay,
    pm: &str,
    holds_it: bool,
) -> Result<Vec<Effect>, Unhandled> {
    let reason = format!("payment method {pm} was detached");
    let done = autopay.method.is_none()
        && autopay.status
            == AutopayStatus::Suspended {
                reason: reason.clone(),
            };
    if !holds_it || done {
        return Ok(Vec::new());
    }
    autopay.method = None;
    autopay.status = AutopayStatus::Suspended {
        reason: reason.clone(),
    };
    let event = WalletEvent::AutopaySuspended {
        tenant: autopay.tenant.clone(),
        subject: pm.to_owned(),
        reason: reason.clone(),
    };
    let tenant = autopay.tenant.clone();
    Ok(vec![
        autopay.replace(),
        publish(&event, Millis::new(m.received_at))?,
        journal(m, &tenant, "suspended", reason),
    ])
}

/// A setup the provider reported (`setup_intent.succeeded`, a Checkout Session in setup mode).
pub(crate) async fn saved_method<S: ItemStore>(
    store: &S,
    m: &StoredMessage,
    notice: MethodNotice,
) -> Result<HandlerOutcome, Unhandled> {
    let Some(tenant) = notice.tenant else {
        return Ok(HandlerOutcome::Ignore(format!(
            "not ours: the setup of payment method {} names no tenant (metadata.tenant)",
            notice.method.payment_method
        )));
    };
    wallet(store, &tenant).await?;
    let effects = method_effects(store, m, &tenant, &notice.method).await?;
    Ok(HandlerOutcome::commit(effects))
}

/// A charge of an attempt failed or was canceled: if it is the attempt's PENDING charge (a
/// delayed-notification method settling as failed), the attempt is due at once, so the
/// charging pass looks the charge up and moves it down the dunning ladder with its own
/// settings (the one place that decides a try's outcome). Anything else moves nothing: a
/// card's decline is recorded by the pass from the API's answer (the same decline replayed
/// under its key), and a charge of an earlier try is done with.
pub(crate) async fn unsettled<S: ItemStore>(
    store: &S,
    m: &StoredMessage,
    notice: Unsettled,
) -> Result<HandlerOutcome, Unhandled> {
    let Some(tenant) = notice.tenant else {
        return Ok(HandlerOutcome::Ignore(format!(
            "payment intent {} of attempt {} names no tenant (metadata.tenant)",
            notice.intent, notice.attempt
        )));
    };
    let found = ledger::attempt(store, &tenant, &notice.attempt)
        .await
        .map_err(read_failed("the autopay attempt"))?;
    let pending = found.filter(|a| {
        a.state == AttemptState::Pending
            && a.provider_ref.as_deref().is_none_or(|r| r == notice.intent)
    });
    let Some(mut attempt) = pending else {
        return Ok(HandlerOutcome::Ignore(format!(
            "payment intent {} of autopay attempt {} did not go through; the attempt is not \
             pending on it, so the charging pass records it from the API's answer",
            notice.intent, notice.attempt
        )));
    };
    attempt.due = Millis::new(m.received_at);
    Ok(HandlerOutcome::commit(vec![attempt.replace()]))
}

/// `payment_method.detached`: remembered on the method's index; autopay suspended if it was
/// the saved method.
pub(crate) async fn detached<S: ItemStore>(
    store: &S,
    m: &StoredMessage,
    pm: String,
) -> Result<HandlerOutcome, Unhandled> {
    let index = ledger::method_index(store, &pm)
        .await
        .map_err(read_failed("the payment method's index"))?;
    let mut index = match index {
        Some(i) if i.detached => return Ok(HandlerOutcome::commit(Vec::new())),
        Some(i) => i,
        None => MethodIndex {
            payment_method: pm.clone(),
            ..Default::default()
        },
    };
    index.detached = true;
    let mut effects = vec![index.replace()];
    if let Some(tenant) = &index.tenant {
        if let Some(autopay) = autopay_of(store, tenant).await? {
            let holds_it = autopay
                .method
                .as_ref()
                .is_some_and(|s| s.payment_method == pm);
            effects.extend(suspend_detached(m, autopay, &pm, holds_it)?);
        }
    }
    Ok(HandlerOutcome::commit(effects))
}
