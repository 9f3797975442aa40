//! The Wallets pages, through the ledger's own API ([`Ledger`], as `inboxctl wallet …`): every
//! wallet with its balance, held, available, floor and flags (`wallet balance`'s
//! [`WalletView`]); one wallet with its ledger entries (`wallet ledger`), autopay settings and
//! attempts (`wallet autopay show`); the unmatched payments (`wallet unmatched`'s
//! [`open_payments`] and [`UnmatchedView`]) with a bind each (`wallet bind`'s
//! [`bind_and_replay`]: the ledger's bind, journaled with the operator's name, then the
//! payment's messages replayed), after a confirmation; a refusal shows its reason.

use super::events::event_href;
use super::http::{query, Params, Reply};
use super::layout::{self, csrf, opt, time};
use super::{Console, Session};
use crate::commands::wallet::autopay::view::AutopayView;
use crate::commands::wallet::ledger::EntryView;
use crate::commands::wallet::load_wallet;
use crate::commands::wallet::unmatched::{
    amount_text, bind_and_replay, missed_text, open_payments, view, window_ms, UnmatchedView,
};
use crate::commands::wallet::view::WalletView;
use crate::error::{failed, usage, Result};
use crate::when;
use inbox_core::clock::{Clock as _, Millis, SystemClock};
use maud::{html, Markup};
use wallet_ledger::{Ledger, LedgerError, TenantId, TENANT_GRAMMAR};

fn wallet_link(tenant: &str) -> String {
    format!("/wallet?{}", query(&[("tenant", tenant)]))
}

fn flags(v: &WalletView) -> Markup {
    html! {
        @if v.overdrawn { span.badge.failed { "overdrawn" } " " }
        @if v.review { span.badge.pending { "review" } " " }
        @if v.low { span.badge.pending { "low" } " " }
        @if !v.overdrawn && !v.review && !v.low { span.none { "none" } }
    }
}

pub async fn list(console: &Console<'_>, session: &Session) -> Result<Reply> {
    let ledger = Ledger::new(&console.store);
    let open = open_payments(&console.store).await?;
    let dismissed = ledger.dismissed(i64::MAX).await.map_err(failed)?;
    let tenants = ledger.tenants().await?;
    let now = SystemClock.now_millis();
    // A wallet that cannot be read is named on the page, not a reason to show none; one whose
    // tenant was stored before the grammar is shown, marked (no request reaches it).
    let mut views = Vec::new();
    let mut unreadable = Vec::new();
    for t in &tenants.tenants {
        match ledger.wallet(t).await {
            Ok(Some(w)) => match WalletView::new(&w, now) {
                Ok(v) => views.push((v, t.fits_grammar())),
                Err(e) => unreadable.push(format!("{t:?}: {e}")),
            },
            Ok(None) => {}
            Err(e @ LedgerError::Unreadable(_)) => unreadable.push(format!("{t:?}: {e}")),
            Err(LedgerError::Store(e)) => return Err(failed(e)),
        }
    }
    let window = window_ms(console.ctx)?;
    let views_unmatched: Vec<UnmatchedView<'_>> =
        open.iter().map(|p| view(p, now, window)).collect();
    let body = html! {
        h1 { "Wallets" }
        p { a #compare-stripe href="/wallets/stripe" { "Compare the ledger with Stripe" } " (the last 7 days' payments; read-only)" }
        @if !tenants.registry_complete && !tenants.unregistered.is_empty() {
            (layout::notice(&format!("{} wallet(s) are not in the registry yet (inboxctl wallet reindex registers them).", tenants.unregistered.len())))
        }
        @if !unreadable.is_empty() {
            (layout::error_box(&format!("{} wallet(s) could not be read and are not shown: {}", unreadable.len(), unreadable.join("; "))))
        }
        @if views.is_empty() { p.none { "No wallets (inboxctl wallet create TENANT --currency usd --price 25)." } } @else {
            table #wallets {
                thead { tr { th { "tenant" } th.num { "balance" } th.num { "held" } th.num { "available" } th.num { "floor" } th { "flags" } } }
                tbody {
                    @for (v, fits) in &views {
                        tr {
                            td {
                                a href=(wallet_link(&v.tenant)) { (v.tenant) }
                                @if !fits { " " span.badge.pending title=(format!("stored before the tenant grammar ({TENANT_GRAMMAR}): read only, no request reaches it")) { "legacy id" } }
                            }
                            td.num { (v.formatted.balance) }
                            td.num { (v.formatted.held) }
                            td.num { (v.formatted.available) }
                            td.num { (v.formatted.floor) }
                            td { (flags(v)) }
                        }
                    }
                }
            }
        }
        h2 { "Unmatched payments (" (views_unmatched.len()) ")" }
        @if views_unmatched.is_empty() { p.none { "None: every payment named its wallet." } } @else {
            p { "Payments that named no wallet (no tenant in their metadata). Bind one to its tenant: its messages are replayed and credit that wallet once." }
            table #unmatched {
                thead { tr { th { "payment" } th.num { "amount" } th { "customer" } th { "email" } th { "first seen (UTC)" } th { "age" } th { "bind to tenant" } th { "or dismiss (not ours)" } } }
                tbody {
                    @for u in &views_unmatched {
                        tr data-payment=(u.payment) {
                            td { code { (u.payment) } @if u.over_window { " " span.badge.failed { "over the window" } } }
                            td.num { (u.amount_text) }
                            td { (opt(u.customer)) }
                            td { (opt(u.email)) }
                            td { (time(u.first_seen_ms)) }
                            td { (when::age(u.age_ms)) }
                            td {
                                form.inline method="post" action="/wallet/bind" {
                                    (csrf(&session.csrf))
                                    input type="hidden" name="payment" value=(u.payment);
                                    input name="tenant" placeholder="tenant" required list="tenants";
                                    button type="submit" data-action="bind" { "Bind…" }
                                }
                            }
                            td { (super::dismiss::form(session, u.payment)) }
                        }
                    }
                }
            }
        }
        (super::dismiss::section(session, &dismissed))
        datalist #tenants { @for (v, fits) in &views { @if *fits { option value=(v.tenant) {} } } }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/wallets", "Wallets", body),
    ))
}

pub async fn one(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let tenant = params
        .get("tenant")
        .ok_or_else(|| usage("name a wallet: ?tenant=…"))?;
    let wallet = load_wallet(&console.store, tenant).await?;
    let now = SystemClock.now_millis();
    let view = WalletView::new(&wallet, now)?;
    let ledger = Ledger::new(&console.store);
    let read = ledger.entries(&wallet).await?;
    let id = TenantId::stored(tenant).map_err(|e| usage(e.to_string()))?;
    let autopay = ledger.autopay(&id).await.map_err(failed)?;
    let attempts = ledger.attempts(&id).await.map_err(failed)?;
    let cur = wallet.currency;
    let entries: Vec<EntryView> = read
        .entries
        .into_iter()
        .rev()
        .map(EntryView::from)
        .collect();
    let body = html! {
        h1 { "Wallet of " (view.tenant) " (" (view.currency.to_uppercase()) ")" }
        dl.fields #wallet {
            dt { "balance" } dd { (view.formatted.balance) }
            dt { "held" } dd { (view.formatted.held) }
            dt { "available" } dd { (view.formatted.available) @if view.available < view.floor { " " span.badge.failed { "below the floor" } } }
            dt { "floor" } dd { (view.formatted.floor) }
            dt { "price per email" } dd { (view.formatted.message_price) }
            dt { "review threshold" } dd { (opt(view.formatted.review_threshold.as_ref())) }
            dt { "debits this month" } dd { (view.formatted.month_debits) " in " (view.month) }
            dt { "flags" } dd { (flags(&view)) }
            dt { "shards" } dd { (view.shards) }
            dt { "created (UTC)" } dd { (time(view.created_at_ms)) }
        }
        (super::charts::balance(view.balance, &entries, cur, now))
        h2 { "Ledger (" (entries.len()) " entries, newest first)" }
        @if read.unreadable > 0 { (layout::error_box(&format!("{} entry item(s) could not be read and are not shown", read.unreadable))) }
        @if !entries.is_empty() {
            table #ledger {
                thead { tr { th { "time (UTC)" } th { "kind" } th.num { "amount" } th.num { "balance Δ" } th.num { "held Δ" } th { "email / payment" } th { "event" } } }
                tbody {
                    @for e in &entries {
                        tr {
                            td { (time(e.at_ms)) }
                            td { (e.kind.as_str()) }
                            td.num { (cur.amount(e.amount).to_string()) }
                            td.num { (cur.amount(e.balance_delta).delta()) }
                            td.num { (cur.amount(e.held_delta).delta()) }
                            td { (opt(e.email_id.as_ref().or(e.payment_id.as_ref()))) }
                            td {
                                a href=(event_href(&e.event_source, &e.event_id)) { code { (e.event_source) "/" (e.event_id) } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Autopay" }
        @match &autopay {
            None => p.none { "Not set (inboxctl wallet autopay set " (view.tenant) " …)." },
            Some(a) => pre #autopay { (serde_json::to_string_pretty(&AutopayView::new(a, Millis::new(now))).unwrap_or_default()) },
        }
        h2 { "Autopay attempts (" (attempts.len()) ")" }
        @if !attempts.is_empty() {
            table #attempts {
                thead { tr { th { "created (UTC)" } th { "reason" } th.num { "amount" } th { "state" } th.num { "try" } th { "due (UTC)" } th { "provider ref" } } }
                tbody {
                    @for a in &attempts {
                        tr {
                            td { (time(a.created_at.get())) }
                            td { (format!("{:?}", a.reason)) }
                            td.num { (a.amount.to_string()) }
                            td { (format!("{:?}", a.state)) }
                            td.num { (a.try_no + 1) }
                            td { (time(a.due.get())) }
                            td { (opt(a.provider_ref.as_ref())) }
                        }
                    }
                }
            }
        }
        p { a href="/wallets#unmatched" { "Unmatched payments" } " (to bind to this wallet) are on the Wallets page." }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/wallets", &view.tenant, body),
    ))
}

/// `POST /wallet/bind`: without `confirm`, the confirmation naming the payment, its amount and
/// the tenant; with it, the bind as `inboxctl wallet bind PAYMENT TENANT --operator …` does it.
/// A refusal (bound already, to another tenant, no wallet) or a failed AWS call shows its reason.
pub async fn bind(console: &Console<'_>, session: &Session, form: &Params) -> Result<Reply> {
    let payment = form
        .get("payment")
        .ok_or_else(|| usage("name a payment: payment=…"))?;
    let tenant_text = form.get("tenant").unwrap_or("").trim();
    let frame = console.frame();
    let tenant = match TenantId::parse(tenant_text) {
        Ok(t) => t,
        Err(e) => {
            return Ok(not_bound(
                console,
                payment,
                &format!("tenant {tenant_text:?}: {e}"),
                400,
            ))
        }
    };
    if form.get("confirm") != Some("yes") {
        let found = Ledger::new(&console.store)
            .unmatched_payment(payment)
            .await
            .map_err(failed)?;
        let Some(p) = found.filter(|p| p.awaits_tenant()) else {
            return Ok(not_bound(
                console,
                payment,
                "it is no longer unmatched (bound already, or never kept)",
                409,
            ));
        };
        let body = html! {
            h1 { "Bind payment " code { (payment) } " to " code { (tenant.as_str()) } "?" }
            p {
                (amount_text(p.amount, p.currency.as_deref())) " from " (opt(p.email.as_deref().or(p.customer.as_deref())))
                ". The bind is journaled on the payment as made by " code { (console.operator) }
                "; its " (p.messages.len()) " message(s) are replayed and credit the wallet of " code { (tenant.as_str()) } " once when processed."
            }
            form.actions method="post" action="/wallet/bind" {
                (csrf(&session.csrf))
                input type="hidden" name="payment" value=(payment);
                input type="hidden" name="tenant" value=(tenant.as_str());
                input type="hidden" name="confirm" value="yes";
                button.danger type="submit" #confirm { "Yes, bind to " (tenant.as_str()) }
                a href="/wallets" { "cancel" }
            }
        };
        return Ok(Reply::html(
            200,
            layout::page(&frame, "/wallets", "Confirm bind", body),
        ));
    }
    let retry = console.ctx.retry_queue().await?;
    let report =
        match bind_and_replay(&console.store, &retry, payment, &tenant, &console.operator).await {
            Ok(r) => r,
            Err(e) => {
                // The ledger refused it (bound already, no such wallet, another currency): 409;
                // the table could not be reached: 503, worth trying again.
                let status = match &e {
                    crate::error::Error::Failed(cause)
                        if cause
                            .downcast_ref::<inbox_core::store::StoreError>()
                            .is_some() =>
                    {
                        503
                    }
                    _ => 409,
                };
                return Ok(not_bound(console, payment, &e.to_string(), status));
            }
        };
    let p = &report.bound.payment;
    let body = html! {
        h1 { "Bound " code { (p.payment_key) } " to " code { (tenant.as_str()) } }
        (layout::notice(&format!(
            "Bound by {}: {} of {} message(s) replayed; the wallet is credited {} once they are processed.",
            console.operator,
            report.replayed.len() - report.missed().len(),
            report.replayed.len(),
            amount_text(p.amount, p.currency.as_deref()),
        )))
        @if report.bound.refund_total > 0 { p { "Less the " (report.bound.refund_total) " refunded meanwhile." } }
        @if let Some(text) = missed_text(&report, &tenant) { (layout::error_box(&text)) }
        table #replayed {
            thead { tr { th { "message" } th { "outcome" } th { "detail" } } }
            tbody { @for r in &report.replayed { tr { td { code { (r.message) } } td { (r.outcome) } td { (opt(r.detail.as_ref())) } } } }
        }
        p { a #to-wallet href=(wallet_link(tenant.as_str())) { "The wallet of " (tenant.as_str()) } " · " a href="/wallets" { "Back to the wallets" } }
    };
    Ok(Reply::html(
        200,
        layout::page(&frame, "/wallets", "Bound", body),
    ))
}

/// The page of a bind that did not happen, with why, answered with `status` (400 a tenant that
/// cannot be one, 409 a refusal, 503 an unreachable table: never 200).
fn not_bound(console: &Console<'_>, payment: &str, why: &str, status: u16) -> Reply {
    let body = html! {
        h1 { "Payment " code { (payment) } " not bound" }
        div #bind-refused { (layout::error_box(why)) }
        p { a href="/wallets" { "Back to the wallets" } }
    };
    Reply::html(
        status,
        layout::page(&console.frame(), "/wallets", "Not bound", body),
    )
}
