//! Autopay's Stripe module: everything Stripe-specific about charging a saved card lives here,
//! behind the wallet's neutral [`wallet_ledger::autopay::Charger`] (the ledger, the scheduler and
//! the dunning ladder see only a charge request and a charge outcome; the composition root, the
//! charging function's `main`, builds a [`StripeCharger`] and hands it over). A second provider
//! is a second crate like this one.
//!
//! - [`config`]: `STRIPE_API_BASE`, the secret key (`STRIPE_SECRET_KEY` locally,
//!   `STRIPE_SECRET_ARN` from Secrets Manager; [`config::SecretKey`] never shows it),
//!   `STRIPE_RATE`.
//! - [`form`]: the wire format out: form encoding in bracket notation, the off-session
//!   PaymentIntent a charge is, the search that finds an attempt's intents.
//! - [`answer`]: the wire format in: intents and errors, declines mapped to soft / hard / needs
//!   the customer (the specification table is there).
//! - [`retry`]: which answers are retried with the same key, and the backoff (full jitter); pure.
//! - [`transport`]: the capability requests go through; [`http`]: hyper + rustls, the pinned
//!   `Stripe-Version`, `Authorization: Bearer`.
//! - [`client`]: [`StripeCharger`], the call loop: the account's shared token bucket (the
//!   outbox's, [`inbox_core::outbox::bucket::shared`], one item: [`client::BUCKET_PK`]), retries,
//!   reading the last answer; [`metrics`]: what a call counts, returned for the caller to emit.
//!
//! Why a thin client and not `async-stripe`: measured in `docs/autopay.md` ("The Stripe
//! client").

pub mod answer;
pub mod client;
pub mod config;
pub mod form;
pub mod http;
pub mod metrics;
pub mod retry;
pub mod transport;

pub use client::StripeCharger;
pub use config::{SecretKey, StripeConfig};
pub use http::HttpTransport;
