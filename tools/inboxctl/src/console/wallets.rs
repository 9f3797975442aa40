//! The Wallets pages, through the ledger's own API ([`Ledger`], as `inboxctl wallet …`): every
//! wallet with its balance, held, available, floor and flags (`wallet balance`'s
//! [`WalletView`]); one wallet with its ledger entries (`wallet ledger`), autopay settings and
//! attempts (`wallet autopay show`). Unmatched payments and their bind have a place on the page
//! for when the ledger records them.

use super::events::event_href;
use super::http::{query, Params, Reply};
use super::layout::{self, opt, time};
use super::Console;
use crate::commands::wallet::autopay::view::AutopayView;
use crate::commands::wallet::ledger::EntryView;
use crate::commands::wallet::load_wallet;
use crate::commands::wallet::view::WalletView;
use crate::error::{failed, usage, Result};
use inbox_core::clock::{Clock as _, Millis, SystemClock};
use maud::{html, Markup};
use wallet_ledger::{Ledger, TenantId};

fn wallet_link(tenant: &str) -> String {
    format!("/wallet?{}", query(&[("tenant", tenant)]))
}

fn flags(v: &WalletView) -> Markup {
    html! {
        @if v.overdrawn { span.badge.failed { "overdrawn" } " " }
        @if v.review { span.badge.pending { "review" } " " }
        @if !v.overdrawn && !v.review { span.none { "none" } }
    }
}

pub async fn list(console: &Console<'_>) -> Result<Reply> {
    let ledger = Ledger::new(&console.store);
    let tenants = ledger.tenants().await?;
    let now = SystemClock.now_millis();
    let mut views = Vec::new();
    for t in &tenants.tenants {
        if let Some(w) = ledger.wallet(t).await.map_err(failed)? {
            views.push(WalletView::new(&w, now)?);
        }
    }
    let body = html! {
        h1 { "Wallets" }
        @if !tenants.registry_complete && !tenants.unregistered.is_empty() {
            (layout::notice(&format!("{} wallet(s) are not in the registry yet (inboxctl wallet reindex registers them).", tenants.unregistered.len())))
        }
        @if views.is_empty() { p.none { "No wallets (inboxctl wallet create TENANT --currency usd --price 25)." } } @else {
            table #wallets {
                thead { tr { th { "tenant" } th.num { "balance" } th.num { "held" } th.num { "available" } th.num { "floor" } th { "flags" } } }
                tbody {
                    @for v in &views {
                        tr {
                            td { a href=(wallet_link(&v.tenant)) { (v.tenant) } }
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
        h2 { "Unmatched payments" }
        p.none { "Payments that named no wallet appear here with a bind action once the ledger records them (inboxctl wallet bind)." }
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
    let id = TenantId::parse(tenant).map_err(|e| usage(e.to_string()))?;
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
            dt { "created (UTC)" } dd { (time(view.created_at_ms)) }
        }
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
        h2 { "Unmatched payments" }
        p.none { "Payments that named no wallet appear on the Wallets page with a bind action once the ledger records them." }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/wallets", &view.tenant, body),
    ))
}
