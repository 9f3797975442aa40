//! The Wallets page's comparison with Stripe (`/wallets/stripe`, read-only): what `inboxctl
//! wallet reconcile --stripe` shows, on demand (a link, never on every load of the Wallets page:
//! it costs Stripe requests), over the last 7 days, at most [`SHOWN`] differences listed (all
//! counted). Nothing is written but the account's token bucket.

use super::http::Reply;
use super::layout;
use super::Console;
use crate::commands::wallet::against::{compare_with_stripe, label, row};
use crate::error::Result;
use inbox_core::clock::{Clock as _, SystemClock};
use maud::html;
use wallet_ledger::reconcile::provider::Kind;

/// The window the page compares (days).
pub const DAYS: u32 = 7;
/// The most differences the page lists.
pub const SHOWN: usize = 100;

pub async fn page(console: &Console<'_>) -> Result<Reply> {
    let now = SystemClock.now_millis();
    let body = match compare_with_stripe(console.ctx, &console.store, now, DAYS).await {
        Err(e) => html! {
            h1 { "Ledger against Stripe" }
            (layout::error_box(&format!("The comparison could not be made: {e}")))
            p { a href="/wallets" { "Back to the wallets" } }
        },
        Ok(r) => {
            let waiting: usize = r.waiting.values().sum();
            html! {
                h1 { "Ledger against Stripe" }
                p { "PaymentIntents created in the last " (DAYS) " days carrying a tenant in their metadata ("
                    (r.product) " of " (r.listed) " listed), and the ledger's payment rows credited in that window ("
                    (r.retrieved) " retrieved one by one): " (r.requests) " Stripe request(s)." }
                @if !r.registry_complete {
                    (layout::notice("The wallet registry is not complete: wallets created before it are not read (inboxctl wallet reindex)."))
                }
                @if waiting > 0 { p { "Not a difference yet (in flight): " (waiting) "." } }
                @if r.is_clean() { p.none #stripe-clean { "The ledger agrees with Stripe." } } @else {
                    ul #stripe-counts {
                        @for k in Kind::ALL.iter() { @if let Some(n) = r.counts.get(k) {
                            li data-kind=(k.metric()) { (label(*k)) ": " (n) " — " (k.meaning()) }
                        } }
                    }
                    table #stripe-differences {
                        thead { tr { th { "difference" } th { "payment" } th { "tenant" } th { "attempt" } th { "in Stripe" } th.num { "received" } th.num { "credited" } th.num { "refunded (Stripe / ledger)" } } }
                        tbody {
                            @for d in r.differences.iter().take(SHOWN) {
                                tr { @for (i, cell) in row(d).into_iter().enumerate() {
                                    @if i >= 5 { td.num { (cell) } } @else { td { (cell) } }
                                } }
                            }
                        }
                    }
                    @if r.differences.len() > SHOWN { p { "… and " (r.differences.len() - SHOWN) " more: inboxctl wallet reconcile --stripe --json" } }
                }
                p { a href="/wallets" { "Back to the wallets" } }
            }
        }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/wallets", "Ledger against Stripe", body),
    ))
}
