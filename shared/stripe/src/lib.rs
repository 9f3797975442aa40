//! Autopay's Stripe module: everything Stripe-specific about charging a saved card, and about
//! the hosted Checkout a wallet is topped up through, lives here, behind the wallet's neutral
//! [`wallet_ledger::autopay::Charger`] (the ledger, the scheduler and the dunning ladder see only
//! a charge request and a charge outcome; the charging function's `main` builds a
//! [`StripeCharger`]) and [`wallet_ledger::payments::checkout::Checkout`] (the wallet API sees a top-up
//! request and the session's id and URL; its `main` builds a [`StripeCheckout`]). A second
//! provider is a second crate like this one.
//!
//! - [`config`]: `STRIPE_API_BASE`, the secret key (`STRIPE_SECRET_KEY` locally,
//!   `STRIPE_SECRET_ARN` from Secrets Manager; [`config::SecretKey`] never shows it),
//!   `STRIPE_RATE`.
//! - [`form`]: the wire format out: form encoding in bracket notation, the off-session
//!   PaymentIntent a charge is, the search that finds an attempt's intents, the Checkout Session
//!   a top-up is (its tenant on the session and on its PaymentIntent).
//! - [`answer`]: the wire format in: intents and errors, declines mapped to soft / hard / needs
//!   the customer; a session or its refusal (the specification tables are there).
//! - [`retry`]: which answers are retried with the same key, and the backoff (full jitter); pure.
//! - [`transport`]: the capability requests go through; [`http`]: hyper + rustls, the pinned
//!   `Stripe-Version`, `Authorization: Bearer`.
//! - [`client`]: [`StripeClient`], the call loop every request goes through: the account's
//!   shared token bucket (the outbox's, [`inbox_core::outbox::bucket::shared`], one item:
//!   [`client::BUCKET_PK`]), retries with the same key, the last answer or why there is none;
//!   [`metrics`]: what a call counts, returned for the caller to emit.
//! - [`charger`]: [`StripeCharger`], autopay's charges and finds on the client.
//! - [`checkout`]: [`StripeCheckout`], the wallet API's Checkout Sessions on the client.
//! - [`events`]: [`events::StripeEvents`], Stripe's events listed on the client; [`catch_up`]:
//!   the events the inbox lacks stored through the core's own put (`inboxctl stripe catch-up`).
//! - [`reconcile`]: [`reconcile::StripePayments`], Stripe's PaymentIntents listed and retrieved
//!   for the ledger's reconciliation against Stripe.
//!
//! Why a thin client and not `async-stripe`: measured in `docs/autopay.md` ("The Stripe
//! client").

pub mod answer;
pub mod catch_up;
pub mod charger;
pub mod checkout;
pub mod client;
pub mod config;
pub mod events;
pub mod form;
pub mod http;
pub mod metrics;
pub mod reconcile;
pub mod retry;
#[cfg(test)]
mod script;
pub mod transport;

pub use charger::StripeCharger;
pub use checkout::StripeCheckout;
pub use client::StripeClient;
pub use config::{SecretKey, StripeConfig};
pub use http::HttpTransport;
