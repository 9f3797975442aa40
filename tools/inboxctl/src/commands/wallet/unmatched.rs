//! `inboxctl wallet unmatched` and `inboxctl wallet bind`: the payments kept because they named
//! no tenant ([`wallet_ledger::payments::unmatched`]), as [`Ledger::unmatched`] lists them, and
//! [`Ledger::bind`] (the ledger's rules) followed by the replay of the payment's messages with
//! `inboxctl replay`'s own code ([`replay_key`]). The query ([`open_payments`]), the printed view
//! ([`UnmatchedView`]) and the bind with its replay ([`bind_and_replay`]) are shared with the
//! console's Wallets page.

use crate::cli::{UnmatchedAction, WalletBindArgs, WalletDismissArgs, WalletUnmatchedArgs};
use crate::commands::replay::{replay_key, Replayed};
use crate::context::Context;
use crate::error::{failed, usage, Context as _, Result};
use crate::output::{or_dash, print_json, say, table, truncate};
use crate::when;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::queue::sqs::SqsRetryQueue;
use inbox_core::store::dynamo::DynamoTable;
use serde::Serialize;
use serde_json::json;
use wallet_ledger::payments::unmatched::Resolution;
use wallet_ledger::{
    BindError, Bound, Currency, DismissError, Ledger, LedgerError, TenantId, UnmatchedPayment,
};

/// The window after which an unmatched payment is counted (`RECONCILE_UNMATCHED_AFTER_MINUTES`).
pub(crate) fn window_ms(ctx: &Context) -> Result<i64> {
    wallet_ledger::config::unmatched_after_ms(ctx.env()).map_err(|e| usage(e.to_string()))
}

/// `25.00 USD (2500)` when the currency is known, else the minor units and what was said.
pub(crate) fn amount_text(amount: i64, currency: Option<&str>) -> String {
    match currency.map(Currency::parse) {
        Some(Ok(c)) => super::money_and_minor(c.amount(amount)),
        Some(Err(_)) => format!("{amount} {}", currency.unwrap_or_default()),
        None => format!("{amount} (currency unknown)"),
    }
}

/// One unmatched payment as printed.
#[derive(Debug, Serialize)]
pub(crate) struct UnmatchedView<'a> {
    pub payment: &'a str,
    pub amount: i64,
    pub currency: Option<&'a str>,
    pub amount_text: String,
    pub customer: Option<&'a str>,
    pub email: Option<&'a str>,
    /// RFC 3339, UTC.
    pub first_seen: String,
    pub first_seen_ms: i64,
    pub age_ms: i64,
    /// Waited longer than the window: counted by `UnmatchedPayments` (and alarmed).
    pub over_window: bool,
    pub messages: &'a [String],
    pub body_truncated: bool,
}

pub(crate) fn view(p: &UnmatchedPayment, now: i64, window: i64) -> UnmatchedView<'_> {
    UnmatchedView {
        payment: &p.payment_key,
        amount: p.amount,
        currency: p.currency.as_deref(),
        amount_text: amount_text(p.amount, p.currency.as_deref()),
        customer: p.customer.as_deref(),
        email: p.email.as_deref(),
        first_seen: when::rfc3339(p.first_seen),
        first_seen_ms: p.first_seen,
        age_ms: p.age(now),
        over_window: p.age(now) > window,
        messages: &p.messages,
        body_truncated: p.body_truncated,
    }
}

/// Every payment still unmatched, oldest first (`inboxctl wallet unmatched`).
pub(crate) async fn open_payments(store: &DynamoTable) -> Result<Vec<UnmatchedPayment>> {
    match Ledger::new(store).unmatched(i64::MAX).await {
        Ok(open) => Ok(open),
        Err(e @ LedgerError::Unreadable(_)) => Err(failed(e)),
        Err(LedgerError::Store(e)) => Err(e).context(format!(
            "listing the unmatched payments in table {}",
            store.table()
        )),
    }
}

pub(super) async fn run(ctx: &Context, args: WalletUnmatchedArgs) -> Result<()> {
    match args.action {
        Some(UnmatchedAction::Dismiss(d)) => dismiss(ctx, d).await,
        None if args.dismissed => list_dismissed(ctx).await,
        None => list(ctx).await,
    }
}

/// Dismisses `payment` as `operator` with `reason` ([`Ledger::dismiss`]: a refusal says why).
pub(crate) async fn dismiss_payment(
    store: &DynamoTable,
    payment: &str,
    operator: &str,
    reason: &str,
) -> Result<UnmatchedPayment> {
    match Ledger::new(store)
        .dismiss(payment, operator, reason, SystemClock.now_millis())
        .await
    {
        Ok(p) => Ok(p),
        Err(DismissError::Ledger(LedgerError::Store(e))) => {
            Err(e).context(format!("dismissing payment {payment}"))
        }
        Err(refused) => Err(failed(refused)),
    }
}

async fn dismiss(ctx: &Context, args: WalletDismissArgs) -> Result<()> {
    let store = ctx.store().await?;
    let p = dismiss_payment(&store, &args.payment, &args.operator, &args.reason).await?;
    if ctx.json() {
        return print_json(&json!({
            "payment": p.payment_key,
            "dismissed_by": args.operator,
            "reason": args.reason.trim(),
            "amount": p.amount,
            "currency": p.currency,
        }));
    }
    say(format!(
        "dismissed payment {} ({}) as {}: no longer listed or counted by UnmatchedPayments; `inboxctl wallet unmatched --dismissed` lists it, `inboxctl wallet bind {} TENANT` still binds it",
        p.payment_key,
        amount_text(p.amount, p.currency.as_deref()),
        args.operator,
        p.payment_key
    ))
}

async fn list_dismissed(ctx: &Context) -> Result<()> {
    let store = ctx.store().await?;
    let found = match Ledger::new(&store).dismissed(i64::MAX).await {
        Ok(found) => found,
        Err(e @ LedgerError::Unreadable(_)) => return Err(failed(e)),
        Err(LedgerError::Store(e)) => {
            return Err(e).context(format!(
                "listing the dismissed payments in table {}",
                store.table()
            ))
        }
    };
    let rows: Vec<_> = found
        .iter()
        .filter_map(|p| match &p.resolution {
            Resolution::Dismissed { at, by, reason } => Some((p, *at, by, reason)),
            _ => None,
        })
        .collect();
    if ctx.json() {
        let payments: Vec<_> = rows
            .iter()
            .map(|(p, at, by, reason)| {
                json!({
                    "payment": p.payment_key, "amount": p.amount, "currency": p.currency,
                    "amount_text": amount_text(p.amount, p.currency.as_deref()),
                    "customer": p.customer, "email": p.email,
                    "first_seen": when::rfc3339(p.first_seen),
                    "dismissed_at": when::rfc3339(*at), "dismissed_at_ms": at,
                    "dismissed_by": by, "reason": reason, "messages": p.messages,
                })
            })
            .collect();
        return print_json(&json!({"count": payments.len(), "payments": payments}));
    }
    if rows.is_empty() {
        return say("no dismissed payments");
    }
    let mut t = table([
        "payment",
        "amount",
        "customer",
        "email",
        "dismissed (UTC)",
        "by",
        "reason",
    ]);
    for (p, at, by, reason) in &rows {
        t.add_row(vec![
            p.payment_key.clone(),
            amount_text(p.amount, p.currency.as_deref()),
            or_dash(p.customer.as_deref()),
            or_dash(p.email.as_deref()),
            when::human(*at),
            (*by).clone(),
            truncate(reason, 60),
        ]);
    }
    say(t)?;
    say(format!(
        "{} dismissed payment(s); bind one that turns out to be ours with: inboxctl wallet bind PAYMENT TENANT",
        rows.len()
    ))
}

pub(super) async fn list(ctx: &Context) -> Result<()> {
    let window = window_ms(ctx)?;
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let open = open_payments(&store).await?;
    let views: Vec<UnmatchedView<'_>> = open.iter().map(|p| view(p, now, window)).collect();
    let over = views.iter().filter(|v| v.over_window).count();
    if ctx.json() {
        return print_json(&json!({
            "count": views.len(),
            "over_window": over,
            "unmatched_after_minutes": window / 60_000,
            "payments": views,
        }));
    }
    if views.is_empty() {
        return say("no unmatched payments");
    }
    let mut t = table([
        "payment",
        "amount",
        "customer",
        "email",
        "first seen (UTC)",
        "age",
        "messages",
    ]);
    for v in &views {
        t.add_row(vec![
            format!("{}{}", v.payment, if v.over_window { " (!)" } else { "" }),
            v.amount_text.clone(),
            or_dash(v.customer),
            or_dash(v.email),
            when::human(v.first_seen_ms),
            when::age(v.age_ms),
            truncate(&v.messages.join(", "), 60),
        ]);
    }
    say(t)?;
    say(format!(
        "{} unmatched payment(s), {over} waiting longer than {} min (marked (!), counted by UnmatchedPayments); bind one with: inboxctl wallet bind PAYMENT TENANT, or dismiss one that is not ours: inboxctl wallet unmatched dismiss PAYMENT --reason TEXT",
        views.len(),
        window / 60_000
    ))
}

/// One replayed message of a bind.
#[derive(Debug, Serialize)]
pub(crate) struct ReplayedView {
    pub message: String,
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a bind did: the payment bound, and each of its messages' replay.
pub(crate) struct BindReport {
    pub bound: Bound,
    pub replayed: Vec<ReplayedView>,
}

impl BindReport {
    /// The messages that were not replayed.
    pub fn missed(&self) -> Vec<&ReplayedView> {
        self.replayed
            .iter()
            .filter(|r| r.outcome != "replayed")
            .collect()
    }
}

/// Binds `payment` to `tenant` as `operator` ([`Ledger::bind`]: a refusal says why: bound
/// already, to another tenant, no wallet) and replays its messages as `inboxctl replay --force`
/// does, journaled with the operator's name: their processing credits the wallet once.
pub(crate) async fn bind_and_replay(
    store: &DynamoTable,
    retry: &SqsRetryQueue,
    payment: &str,
    tenant: &TenantId,
    operator: &str,
) -> Result<BindReport> {
    let bound = match Ledger::new(store)
        .bind(payment, tenant, operator, SystemClock.now_millis())
        .await
    {
        Ok(bound) => bound,
        Err(BindError::Ledger(LedgerError::Store(e))) => {
            return Err(e).context(format!("binding payment {payment}"))
        }
        Err(refused) => return Err(failed(refused)),
    };
    let mut replayed = Vec::new();
    for key in &bound.messages {
        let Replayed {
            outcome, detail, ..
        } = replay_key(store, retry, key, operator, true).await;
        replayed.push(ReplayedView {
            message: key.to_string(),
            outcome,
            detail,
        });
    }
    Ok(BindReport { bound, replayed })
}

/// What to do about the messages a bind could not replay.
pub(crate) fn missed_text(report: &BindReport, tenant: &TenantId) -> Option<String> {
    let missed = report.missed();
    if missed.is_empty() {
        return None;
    }
    Some(format!(
        "payment {} is bound to {tenant}, but {} message(s) were not replayed: {}; replay each with `inboxctl replay SOURCE EVENT_ID --force` (a message no longer in the inbox: resend the event from Stripe's dashboard, it now credits {tenant})",
        report.bound.payment.payment_key,
        missed.len(),
        missed
            .iter()
            .map(|r| format!("{} ({})", r.message, r.detail.as_deref().unwrap_or(r.outcome)))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

pub(super) async fn bind(ctx: &Context, args: WalletBindArgs) -> Result<()> {
    let tenant = TenantId::parse(&args.tenant).map_err(|e| usage(e.to_string()))?;
    let store = ctx.store().await?;
    // The queue first: a bind that could not replay its messages would wait for a second step.
    let retry = ctx.retry_queue().await?;
    let report = bind_and_replay(&store, &retry, &args.payment, &tenant, &args.operator).await?;
    let (bound, replayed) = (&report.bound, &report.replayed);
    let p = &bound.payment;
    if ctx.json() {
        print_json(&json!({
            "payment": p.payment_key,
            "tenant": tenant,
            "bound_by": args.operator,
            "amount": p.amount,
            "currency": p.currency,
            "refund_total": bound.refund_total,
            "replayed": replayed,
        }))?;
    } else {
        say(format!(
            "bound payment {} ({}) to tenant {tenant} as {}; {} of {} message(s) replayed through the pipeline: the wallet is credited once when they are processed{}",
            p.payment_key,
            amount_text(p.amount, p.currency.as_deref()),
            args.operator,
            replayed.len() - report.missed().len(),
            replayed.len(),
            if bound.refund_total > 0 {
                format!(" (less the {} refunded meanwhile)", bound.refund_total)
            } else {
                String::new()
            }
        ))?;
    }
    match missed_text(&report, &tenant) {
        None => Ok(()),
        Some(text) => Err(failed(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_say_their_currency_when_known() {
        assert_eq!(amount_text(2500, Some("usd")), "25.00 USD (2500)");
        assert_eq!(amount_text(2500, None), "2500 (currency unknown)");
        assert_eq!(amount_text(7, Some("??")), "7 ??");
    }
}
