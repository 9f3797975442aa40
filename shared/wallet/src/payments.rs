//! Payments, one slice: the handler's Stripe payments (tenant through the payment index, refunds
//! settled), the payments that name no tenant, and the neutral face of a hosted checkout. It
//! builds on [`crate::balance`] and [`crate::autopay`].
//!
//! - [`parse`]: Stripe's payment events parsed ([`parse::StripeNotice`], with autopay's).
//! - [`handler`]: the wallet handler's Stripe payments.
//! - [`unmatched`]: payments that succeeded naming no tenant, kept for a human
//!   ([`unmatched::UnmatchedPayment`]) until a later event names the tenant or an operator binds
//!   them, and their items.
//! - [`ledger`]: the ledger's unmatched payments (listed, bound to a tenant).
//! - [`checkout`]: the neutral face of a provider's hosted checkout (a top-up the wallet API
//!   starts).

pub mod checkout;
pub mod handler;
pub mod ledger;
pub mod parse;
pub mod unmatched;
