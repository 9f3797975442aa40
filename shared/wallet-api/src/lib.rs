//! The wallet HTTP API of the sending platform, transport-neutral (the `wallet-api` function
//! maps API Gateway's events onto it): a hold before each send, its release, a wallet's
//! balance, and hosted top-ups, each POST under a Stripe-style `Idempotency-Key`.
//!
//! | route | answer |
//! |---|---|
//! | `POST /wallets/{tenant}/holds` `{"message_id", "amount"?}` | `201 {"hold_id", "amount", "available"}`, `402 insufficient_funds`, `404 wallet_not_found` |
//! | `POST /wallets/{tenant}/holds/{hold_id}/release` | `200`, `404 hold_not_found`, `409 hold_settled` |
//! | `GET /wallets/{tenant}` | `200` balance, held, available, floor, price, flags, this month's debits |
//! | `POST /wallets/{tenant}/checkout-sessions` `{"amount", "success_url", "cancel_url", "save_payment_method"?}` | `201 {"id", "url"}` |
//!
//! - [`request`]: [`ApiRequest`], the [`request::Route`] of a path, and the inputs parsed once
//!   (tenant, `Idempotency-Key`, each route's body; a bad field is a 400 naming it).
//! - [`idempotency`]: the keys' records in the table (marker first, the answer in the action's
//!   own transaction), the pure rule of what a key's record allows ([`idempotency::decide`]).
//! - [`service`]: [`WalletApi`], which routes a request and carries it out.
//! - [`error`]: [`error::ApiError`] and its JSON answer `{error, message}`.
//! - [`response`]: [`ApiResponse`], an answer (status, headers, JSON body).
//! - [`config`]: `WALLET_API_IDEMPOTENCY_HOURS` (documented with the core's `Var`).
//!
//! The page for callers: `docs/wallet-api.md`.

pub mod config;
pub mod error;
pub mod idempotency;
pub mod request;
pub mod response;
pub mod service;

pub use config::ApiConfig;
pub use error::ApiError;
pub use request::ApiRequest;
pub use response::ApiResponse;
pub use service::WalletApi;

/// The partition-key patterns the wallet API reads in the table (`dynamodb:LeadingKeys` of its
/// role in template.yaml, compared by tests/it/template.rs): the ledger's, the wallets'
/// partitions, where [`idempotency`] keeps its records too. Nothing else: no registry, no index,
/// no message.
pub fn table_reads() -> Vec<String> {
    wallet_ledger::ledger::reads::api_reads()
}

#[cfg(test)]
mod tests;
