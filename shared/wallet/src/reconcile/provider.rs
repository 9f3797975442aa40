//! The ledger against the payment provider's own records: what Stripe reports of one payment
//! (a PaymentIntent carrying the product's `metadata.tenant`, with its latest charge's refunds)
//! and what the ledger recorded of it (its payment row in the tenant's wallet), compared, as a
//! decision table (pure: the time is the caller's). [`pass`] finds the pairs; this decides.
//!
//! | Stripe says                        | the ledger                                   | verdict                                   |
//! |------------------------------------|----------------------------------------------|-------------------------------------------|
//! | nothing (not listed, 404)          | nothing, or nothing credited                 | same                                      |
//! | nothing                            | credited, the row changed within the grace   | wait (`credited moments ago`)             |
//! | nothing                            | credited                                     | **credited, not in Stripe**               |
//! | `processing`                       | nothing credited                             | wait (`processing`: days for bank debits) |
//! | `processing`, `requires_*`, `canceled` | credited                                 | **credited, not in Stripe** (not paid)    |
//! | `requires_*`, `canceled`           | nothing credited                             | same                                      |
//! | `succeeded`, created within grace  | nothing credited                             | wait (`its webhook may be on its way`)    |
//! | `succeeded`                        | nothing, or nothing credited                 | **paid in Stripe, not credited**          |
//! | `succeeded`                        | another currency, or credited ≠ received     | **amounts differ**                        |
//! | `succeeded`                        | refunds recorded ≠ the charge's refunded     | **refunds differ**                        |
//! | `succeeded`                        | the same amounts                             | same                                      |
//!
//! Amounts are minor units of the currency each side names (Stripe's `amount_received` and the
//! charge's cumulative `amount_refunded`; the row's `credited` and `refund_total`, the largest
//! cumulative refund Stripe reported, in the wallet's currency).

use crate::tenant::TenantId;
use serde::Serialize;

pub mod pass;

/// Where a PaymentIntent is, as far as money goes
/// (https://docs.stripe.com/payments/paymentintents/lifecycle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The money was received (`succeeded`).
    Succeeded,
    /// Asynchronous methods (bank debits) "can take up to a few days to process".
    Processing,
    /// `requires_payment_method`, `requires_confirmation`, `requires_action`,
    /// `requires_capture`: no money received (yet).
    Unpaid,
    /// `canceled`: never paid.
    Canceled,
}

impl Status {
    /// Stripe's status string; `None` for one it does not document.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "succeeded" => Some(Self::Succeeded),
            "processing" => Some(Self::Processing),
            "requires_payment_method"
            | "requires_confirmation"
            | "requires_action"
            | "requires_capture" => Some(Self::Unpaid),
            "canceled" => Some(Self::Canceled),
            _ => None,
        }
    }
}

/// One payment as the provider reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reported {
    /// The PaymentIntent's id (the ledger's payment key).
    pub id: String,
    /// `metadata.tenant` (autopay's charges and the checkout's intents carry it).
    pub tenant: Option<TenantId>,
    /// `metadata.attempt`: autopay's attempt.
    pub attempt: Option<String>,
    pub status: Status,
    /// `amount_received`.
    pub received: i64,
    /// Lower-case ISO currency.
    pub currency: String,
    /// When it was created (Unix seconds).
    pub created: i64,
    /// The latest charge's cumulative `amount_refunded` (0 without a charge).
    pub refunded: i64,
}

/// One payment as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Booked {
    pub payment_key: String,
    pub tenant: TenantId,
    /// The wallet's currency (lower case).
    pub currency: String,
    /// Credited to the wallet.
    pub credited: i64,
    /// The largest cumulative refund recorded.
    pub refund_total: i64,
    /// When its row last changed (ms), if it says.
    pub updated_at: Option<i64>,
}

/// The kinds of difference, each its own metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Stripe received the money; the ledger credited nothing.
    PaidNotCredited,
    /// The ledger credited money Stripe does not report as received.
    CreditedNotInStripe,
    /// Both have the payment; the amount or the currency differs.
    AmountsDiffer,
    /// Stripe's refunds of the payment and the ledger's differ.
    RefundsDiffer,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::PaidNotCredited,
        Kind::CreditedNotInStripe,
        Kind::AmountsDiffer,
        Kind::RefundsDiffer,
    ];

    /// Its metric (namespace [`crate::METRICS_NAMESPACE`]).
    pub fn metric(self) -> &'static str {
        match self {
            Self::PaidNotCredited => "StripePaidNotCredited",
            Self::CreditedNotInStripe => "StripeCreditedNotInStripe",
            Self::AmountsDiffer => "StripeAmountsDiffer",
            Self::RefundsDiffer => "StripeRefundsDiffer",
        }
    }

    /// What it means and what to do (the report's and the docs' words).
    pub fn meaning(self) -> &'static str {
        match self {
            Self::PaidNotCredited => "paid in Stripe, not credited: run `inboxctl stripe catch-up`; if it stays, find the intent's events in the inbox",
            Self::CreditedNotInStripe => "credited, not in Stripe: the wallet holds money Stripe never received; find the entry's event and correct the wallet",
            Self::AmountsDiffer => "amounts differ: the wallet was credited another amount (or currency) than Stripe received",
            Self::RefundsDiffer => "refunds differ: Stripe's refunds of the payment are not what the ledger took back",
        }
    }
}

/// What the comparison of one payment says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Same,
    /// Not a difference yet, and why.
    Wait(&'static str),
    Differs(Kind),
}

/// The comparison of one payment at `now_s` (Unix seconds): Stripe's report (`None`: Stripe
/// has no such intent) and the ledger's (`None`: no row), with `grace_s` for what is in flight.
pub fn decide(
    reported: Option<&Reported>,
    booked: Option<&Booked>,
    now_s: i64,
    grace_s: i64,
) -> Verdict {
    let credited = booked.filter(|b| b.credited != 0);
    let Some(r) = reported else {
        return match credited {
            None => Verdict::Same,
            Some(b) if b.updated_at.is_some_and(|t| t / 1000 > now_s - grace_s) => {
                Verdict::Wait("credited moments ago")
            }
            Some(_) => Verdict::Differs(Kind::CreditedNotInStripe),
        };
    };
    match (r.status, credited) {
        (Status::Processing, None) => {
            Verdict::Wait("processing: a bank debit takes days to settle")
        }
        (Status::Processing | Status::Unpaid | Status::Canceled, Some(_)) => {
            Verdict::Differs(Kind::CreditedNotInStripe)
        }
        (Status::Unpaid | Status::Canceled, None) => Verdict::Same,
        (Status::Succeeded, None) if r.created > now_s - grace_s => {
            Verdict::Wait("its webhook may be on its way")
        }
        (Status::Succeeded, None) => Verdict::Differs(Kind::PaidNotCredited),
        (Status::Succeeded, Some(b)) => {
            if !b.currency.eq_ignore_ascii_case(&r.currency) || b.credited != r.received {
                Verdict::Differs(Kind::AmountsDiffer)
            } else if b.refund_total != r.refunded {
                Verdict::Differs(Kind::RefundsDiffer)
            } else {
                Verdict::Same
            }
        }
    }
}

#[cfg(test)]
mod tests;
