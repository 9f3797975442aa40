//! `inboxctl wallet unmatched` and `inboxctl wallet bind`: the payments kept because they named
//! no tenant ([`wallet_ledger::unmatched`]), as [`Ledger::unmatched`] lists them, and
//! [`Ledger::bind`] (the ledger's rules) followed by the replay of the payment's messages with
//! `inboxctl replay`'s own code ([`replay_key`]).

use crate::cli::WalletBindArgs;
use crate::commands::replay::{replay_key, Replayed};
use crate::context::Context;
use crate::error::{failed, usage, Context as _, Result};
use crate::output::{or_dash, print_json, say, table, truncate};
use crate::when;
use inbox_core::clock::{Clock as _, SystemClock};
use serde::Serialize;
use serde_json::json;
use wallet_ledger::{BindError, Currency, Ledger, LedgerError, TenantId, UnmatchedPayment};

/// The window after which an unmatched payment is counted (`RECONCILE_UNMATCHED_AFTER_MINUTES`).
pub(super) fn window_ms(ctx: &Context) -> Result<i64> {
    wallet_ledger::config::unmatched_after_ms(ctx.env()).map_err(|e| usage(e.to_string()))
}

/// `25.00 USD (2500)` when the currency is known, else the minor units and what was said.
pub(super) fn amount_text(amount: i64, currency: Option<&str>) -> String {
    match currency.map(Currency::parse) {
        Some(Ok(c)) => super::money_and_minor(c.amount(amount)),
        Some(Err(_)) => format!("{amount} {}", currency.unwrap_or_default()),
        None => format!("{amount} (currency unknown)"),
    }
}

/// One unmatched payment as printed.
#[derive(Debug, Serialize)]
struct UnmatchedView<'a> {
    payment: &'a str,
    amount: i64,
    currency: Option<&'a str>,
    amount_text: String,
    customer: Option<&'a str>,
    email: Option<&'a str>,
    /// RFC 3339, UTC.
    first_seen: String,
    first_seen_ms: i64,
    age_ms: i64,
    /// Waited longer than the window: counted by `UnmatchedPayments` (and alarmed).
    over_window: bool,
    messages: &'a [String],
    body_truncated: bool,
}

fn view(p: &UnmatchedPayment, now: i64, window: i64) -> UnmatchedView<'_> {
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

pub(super) async fn list(ctx: &Context) -> Result<()> {
    let window = window_ms(ctx)?;
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let open = match Ledger::new(&store).unmatched(i64::MAX).await {
        Ok(open) => open,
        Err(e @ LedgerError::Unreadable(_)) => return Err(failed(e)),
        Err(LedgerError::Store(e)) => {
            return Err(e).context(format!(
                "listing the unmatched payments in table {}",
                store.table()
            ))
        }
    };
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
        "{} unmatched payment(s), {over} waiting longer than {} min (marked (!), counted by UnmatchedPayments); bind one with: inboxctl wallet bind PAYMENT TENANT",
        views.len(),
        window / 60_000
    ))
}

/// One replayed message of a bind.
#[derive(Debug, Serialize)]
struct ReplayedView {
    message: String,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

pub(super) async fn bind(ctx: &Context, args: WalletBindArgs) -> Result<()> {
    let tenant = TenantId::parse(&args.tenant).map_err(|e| usage(e.to_string()))?;
    let store = ctx.store().await?;
    // The queue first: a bind that could not replay its messages would wait for a second step.
    let retry = ctx.retry_queue().await?;
    let bound = match Ledger::new(&store)
        .bind(
            &args.payment,
            &tenant,
            &args.operator,
            SystemClock.now_millis(),
        )
        .await
    {
        Ok(bound) => bound,
        Err(BindError::Ledger(LedgerError::Store(e))) => {
            return Err(e).context(format!("binding payment {}", args.payment))
        }
        Err(refused) => return Err(failed(refused)),
    };
    let mut replayed = Vec::new();
    for key in &bound.messages {
        let Replayed {
            outcome, detail, ..
        } = replay_key(&store, &retry, key, &args.operator, true).await;
        replayed.push(ReplayedView {
            message: key.to_string(),
            outcome,
            detail,
        });
    }
    let missed: Vec<&ReplayedView> = replayed
        .iter()
        .filter(|r| r.outcome != "replayed")
        .collect();
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
            replayed.len() - missed.len(),
            replayed.len(),
            if bound.refund_total > 0 {
                format!(" (less the {} refunded meanwhile)", bound.refund_total)
            } else {
                String::new()
            }
        ))?;
    }
    if missed.is_empty() {
        return Ok(());
    }
    Err(failed(format!(
        "payment {} is bound to {tenant}, but {} message(s) were not replayed: {}; replay each with `inboxctl replay SOURCE EVENT_ID --force` (a message no longer in the inbox: resend the event from Stripe's dashboard, it now credits {tenant})",
        p.payment_key,
        missed.len(),
        missed
            .iter()
            .map(|r| format!("{} ({})", r.message, r.detail.as_deref().unwrap_or(r.outcome)))
            .collect::<Vec<_>>()
            .join(", ")
    )))
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
