//! `inboxctl wallet ledger`: a wallet's entries (every change of balance or held, with the webhook
//! event that made it) and, with `--rows`, its per-email and per-payment rows.

use super::load_wallet;
use crate::cli::WalletLedgerArgs;
use crate::context::Context;
use crate::error::{failed, Context as _, Result};
use crate::output::{or_dash, print_json, say, table, truncate};
use crate::when;
use serde::Serialize;
use wallet_ledger::balance::rules::EntryKind;
use wallet_ledger::{EmailRow, Entry, Ledger, PaymentRow, Wallet};

/// One ledger entry as printed.
#[derive(Debug, Serialize)]
pub(crate) struct EntryView {
    pub id: String,
    /// RFC 3339, UTC (the time the webhook event was received).
    pub at: String,
    pub at_ms: i64,
    pub kind: EntryKind,
    pub amount: i64,
    pub balance_delta: i64,
    pub held_delta: i64,
    /// The email's message id (hold, hold release, debit, bounce refund).
    pub email_id: Option<String>,
    /// The payment's id (top-up, top-up refund).
    pub payment_id: Option<String>,
    pub event_source: String,
    pub event_id: String,
}

impl From<Entry> for EntryView {
    fn from(e: Entry) -> Self {
        let (email_id, payment_id) = if e.is_payment() {
            (None, Some(e.subject))
        } else {
            (Some(e.subject), None)
        };
        Self {
            id: e.id,
            at: when::rfc3339(e.at),
            at_ms: e.at,
            kind: e.kind,
            amount: e.amount.minor(),
            balance_delta: e.balance_delta.minor(),
            held_delta: e.held_delta.minor(),
            email_id,
            payment_id,
            event_source: e.event_source,
            event_id: e.event_id,
        }
    }
}

/// A per-email row.
#[derive(Debug, Serialize)]
struct EmailRowView {
    message_id: String,
    /// new, held, debited, released, refunded.
    state: String,
    amount: i64,
    /// The webhook event ids that moved it, in processing order.
    events: Vec<String>,
    held_at: Option<String>,
    held_at_ms: Option<i64>,
    updated_at: Option<String>,
    updated_at_ms: Option<i64>,
    version: Option<u64>,
}

impl From<EmailRow> for EmailRowView {
    fn from(r: EmailRow) -> Self {
        Self {
            message_id: r.message_id,
            state: serde_json::to_value(r.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            amount: r.amount.get(),
            events: r.events,
            held_at: r.held_at.map(|t| when::rfc3339(t.get())),
            held_at_ms: r.held_at.map(|t| t.get()),
            updated_at: r.updated_at.map(|t| when::rfc3339(t.get())),
            updated_at_ms: r.updated_at.map(|t| t.get()),
            version: r.version,
        }
    }
}

/// A per-payment row.
#[derive(Debug, Serialize)]
struct PaymentRowView {
    payment_key: String,
    /// unknown, awaiting (a delayed payment method), paid, failed.
    funds: String,
    /// What a checkout awaiting funds expects.
    expected: i64,
    credited: i64,
    /// The largest cumulative refund Stripe reported.
    refund_total: i64,
    /// Taken back: never more than credited.
    refunded: i64,
    events: Vec<String>,
    updated_at: Option<String>,
    updated_at_ms: Option<i64>,
    version: Option<u64>,
}

impl From<PaymentRow> for PaymentRowView {
    fn from(r: PaymentRow) -> Self {
        Self {
            payment_key: r.payment_key,
            funds: serde_json::to_value(r.funds)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            expected: r.expected.get(),
            credited: r.credited.get(),
            refund_total: r.refund_total.get(),
            refunded: r.refunded.get(),
            events: r.events,
            updated_at: r.updated_at.map(when::rfc3339),
            updated_at_ms: r.updated_at,
            version: r.version,
        }
    }
}

/// The last `limit` of `v` (most recent last).
fn last<T>(mut v: Vec<T>, limit: usize) -> Vec<T> {
    let skip = v.len().saturating_sub(limit);
    v.split_off(skip)
}

#[derive(Debug, Serialize)]
struct LedgerView {
    tenant: String,
    currency: String,
    /// Every entry of the wallet.
    total_entries: usize,
    /// Entries that could not be read (missing attributes), left out of `entries`.
    unreadable_entries: usize,
    limit: u32,
    /// Whether older entries were left out (`--limit`).
    truncated: bool,
    /// Oldest first.
    entries: Vec<EntryView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    emails: Option<Vec<EmailRowView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payments: Option<Vec<PaymentRowView>>,
}

pub(super) async fn ledger(ctx: &Context, args: WalletLedgerArgs) -> Result<()> {
    let store = ctx.store().await?;
    let ledger = Ledger::new(&store);
    let tenant = args.tenant.as_str();
    let wallet = load_wallet(&store, tenant).await?;
    let read = ledger
        .entries(&wallet)
        .await
        .context(format!("reading the entries of {tenant:?}"))?;
    let (total, unreadable, entries) = (read.total(), read.unreadable, read.entries);
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let truncated = entries.len() > limit;
    let entries: Vec<EntryView> = last(entries, limit)
        .into_iter()
        .map(EntryView::from)
        .collect();
    let (emails, payments) = if args.rows {
        let rows = ledger
            .rows(&wallet)
            .await
            .context(format!("reading the rows of {tenant:?}"))?;
        let mut emails: Vec<EmailRowView> = rows.emails.into_iter().map(Into::into).collect();
        emails.sort_by_key(|r| r.updated_at_ms);
        let mut payments: Vec<PaymentRowView> = rows.payments.into_iter().map(Into::into).collect();
        payments.sort_by_key(|r| r.updated_at_ms);
        (Some(last(emails, limit)), Some(last(payments, limit)))
    } else {
        (None, None)
    };
    let view = LedgerView {
        tenant: wallet.tenant.to_string(),
        currency: wallet.currency.as_str().to_owned(),
        total_entries: total,
        unreadable_entries: unreadable,
        limit: args.limit,
        truncated,
        entries,
        emails,
        payments,
    };
    if ctx.json() {
        return print_json(&view);
    }
    print_ledger(&view, &wallet)
}

fn print_ledger(view: &LedgerView, wallet: &Wallet) -> Result<()> {
    let cur = wallet.currency;
    say(format!(
        "Ledger of {} ({cur}): balance {}, held {}, available {}",
        view.tenant,
        wallet.balance,
        wallet.held,
        wallet.available().map_err(failed)?
    ))?;
    if view.entries.is_empty() {
        say("no entries")?;
    } else {
        let mut t = table([
            "time (UTC)",
            "kind",
            "amount",
            "balance Δ",
            "held Δ",
            "email / payment",
            "event (source/id)",
        ]);
        for e in &view.entries {
            let subject = match (&e.email_id, &e.payment_id) {
                (Some(m), _) => format!("email {m}"),
                (None, Some(p)) => format!("payment {p}"),
                (None, None) => "-".to_owned(),
            };
            t.add_row(vec![
                when::human(e.at_ms),
                e.kind.as_str().to_owned(),
                cur.amount(e.amount).to_string(),
                cur.amount(e.balance_delta).delta(),
                cur.amount(e.held_delta).delta(),
                truncate(&subject, 48),
                format!("{}/{}", e.event_source, e.event_id),
            ]);
        }
        say(t)?;
    }
    if view.truncated {
        eprintln!(
            "showing the last {} of {} entries (--limit)",
            view.entries.len(),
            view.total_entries
        );
    }
    if view.unreadable_entries > 0 {
        eprintln!(
            "warning: {} entry item(s) could not be read and are not shown",
            view.unreadable_entries
        );
    }
    let events = |ids: &[String]| truncate(&ids.join(", "), 80);
    if let Some(emails) = &view.emails {
        say(format!("\nEmails ({})", emails.len()))?;
        if !emails.is_empty() {
            let mut t = table([
                "message id",
                "state",
                "amount",
                "held since (UTC)",
                "updated (UTC)",
                "events",
            ]);
            for r in emails {
                t.add_row(vec![
                    truncate(&r.message_id, 48),
                    r.state.clone(),
                    cur.amount(r.amount).to_string(),
                    or_dash(r.held_at_ms.map(when::human)),
                    or_dash(r.updated_at_ms.map(when::human)),
                    events(&r.events),
                ]);
            }
            say(t)?;
        }
    }
    if let Some(payments) = &view.payments {
        say(format!("\nPayments ({})", payments.len()))?;
        if !payments.is_empty() {
            let mut t = table([
                "payment",
                "funds",
                "credited",
                "refunded",
                "updated (UTC)",
                "events",
            ]);
            for r in payments {
                let funds = if r.funds == "awaiting" {
                    format!("awaiting {}", cur.amount(r.expected))
                } else {
                    r.funds.clone()
                };
                t.add_row(vec![
                    truncate(&r.payment_key, 48),
                    funds,
                    cur.amount(r.credited).to_string(),
                    cur.amount(r.refunded).to_string(),
                    or_dash(r.updated_at_ms.map(when::human)),
                    events(&r.events),
                ]);
            }
            say(t)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_n() {
        assert_eq!(last(vec![1, 2, 3, 4], 2), vec![3, 4]);
        assert_eq!(last(vec![1, 2], 5), vec![1, 2]);
    }
}
