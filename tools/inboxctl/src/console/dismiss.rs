//! Dismissing an unmatched payment from the Wallets page (`inboxctl wallet unmatched dismiss`'s
//! [`dismiss_payment`]: the ledger's dismissal, journaled with the operator's name and the
//! reason, after a confirmation), and the dismissed payments listed under the open ones, each
//! still bindable. A refusal answers 409 with its reason.

use super::http::{Params, Reply};
use super::layout::{self, csrf, opt, time};
use super::{Console, Session};
use crate::commands::wallet::unmatched::{amount_text, dismiss_payment};
use crate::error::{usage, Result};
use maud::{html, Markup};
use wallet_ledger::payments::unmatched::Resolution;
use wallet_ledger::{Ledger, UnmatchedPayment};

/// The form that dismisses `payment` (a reason is required).
pub fn form(session: &Session, payment: &str) -> Markup {
    html! {
        form.inline method="post" action="/wallet/dismiss" {
            (csrf(&session.csrf))
            input type="hidden" name="payment" value=(payment);
            input name="reason" placeholder="why it is not ours" required maxlength="500";
            button type="submit" data-action="dismiss" { "Dismiss…" }
        }
    }
}

/// The dismissed payments, with who dismissed each, when and why, and a bind form each.
pub fn section(session: &Session, dismissed: &[UnmatchedPayment]) -> Markup {
    html! {
        h2 { "Dismissed payments (" (dismissed.len()) ")" }
        @if dismissed.is_empty() { p.none { "None dismissed." } } @else {
            p { "Payments an operator said are not ours: not counted by the UnmatchedPayments alarm. One that turns out to be ours can still be bound." }
            table #dismissed {
                thead { tr { th { "payment" } th.num { "amount" } th { "email" } th { "dismissed (UTC)" } th { "by" } th { "reason" } th { "bind to tenant" } } }
                tbody {
                    @for p in dismissed {
                        @if let Resolution::Dismissed { at, by, reason } = &p.resolution {
                            tr data-payment=(p.payment_key) {
                                td { code { (p.payment_key) } }
                                td.num { (amount_text(p.amount, p.currency.as_deref())) }
                                td { (opt(p.email.as_deref())) }
                                td { (time(*at)) }
                                td { (by) }
                                td { (reason) }
                                td {
                                    form.inline method="post" action="/wallet/bind" {
                                        (csrf(&session.csrf))
                                        input type="hidden" name="payment" value=(p.payment_key);
                                        input name="tenant" placeholder="tenant" required list="tenants";
                                        button type="submit" data-action="bind" { "Bind…" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /wallet/dismiss`: without `confirm`, the confirmation naming the payment, its amount
/// and the reason; with it, the dismissal as `inboxctl wallet unmatched dismiss PAYMENT --reason …
/// --operator …` does it.
pub async fn dismiss(console: &Console<'_>, session: &Session, form: &Params) -> Result<Reply> {
    let payment = form
        .get("payment")
        .ok_or_else(|| usage("name a payment: payment=…"))?;
    let reason = form.get("reason").unwrap_or("").trim();
    if form.get("confirm") != Some("yes") {
        let found = Ledger::new(&console.store)
            .unmatched_payment(payment)
            .await
            .map_err(crate::error::failed)?;
        let Some(p) = found.filter(UnmatchedPayment::is_open) else {
            return Ok(refused(
                console,
                payment,
                "it is not an open unmatched payment (bound, matched, dismissed already, or never kept)",
            ));
        };
        let body = html! {
            h1 { "Dismiss payment " code { (payment) } "?" }
            p {
                (amount_text(p.amount, p.currency.as_deref())) " from " (opt(p.email.as_deref().or(p.customer.as_deref())))
                ". It leaves the unmatched list and the UnmatchedPayments alarm's count; its record stays (listed as dismissed) and it can still be bound. Journaled as dismissed by " code { (console.operator) } " because: "
            }
            blockquote #reason { (reason) }
            form.actions method="post" action="/wallet/dismiss" {
                (csrf(&session.csrf))
                input type="hidden" name="payment" value=(payment);
                input type="hidden" name="reason" value=(reason);
                input type="hidden" name="confirm" value="yes";
                button.danger type="submit" #confirm { "Yes, dismiss" }
                a href="/wallets" { "cancel" }
            }
        };
        return Ok(Reply::html(
            200,
            layout::page(&console.frame(), "/wallets", "Confirm dismissal", body),
        ));
    }
    let p = match dismiss_payment(&console.store, payment, &console.operator, reason).await {
        Ok(p) => p,
        Err(e) => return Ok(refused(console, payment, &e.to_string())),
    };
    let body = html! {
        h1 { "Dismissed " code { (p.payment_key) } }
        (layout::notice(&format!(
            "Dismissed by {}: {} is no longer listed as unmatched nor counted by the alarm.",
            console.operator,
            amount_text(p.amount, p.currency.as_deref()),
        )))
        p { a href="/wallets#dismissed" { "Back to the wallets" } }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/wallets", "Dismissed", body),
    ))
}

/// The page of a dismissal that did not happen, with why (409: the payment's state refused it).
fn refused(console: &Console<'_>, payment: &str, why: &str) -> Reply {
    let body = html! {
        h1 { "Payment " code { (payment) } " not dismissed" }
        div #dismiss-refused { (layout::error_box(why)) }
        p { a href="/wallets" { "Back to the wallets" } }
    };
    Reply::html(
        409,
        layout::page(&console.frame(), "/wallets", "Not dismissed", body),
    )
}
