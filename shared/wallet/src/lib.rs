//! The prepaid wallet ledger: Stripe top-ups credit a tenant's wallet, email delivery events (of
//! any configured email provider) hold, debit and refund it, each exactly once, in any order. An application of the inbox core: the
//! core runs its handler and stores its items, and knows nothing of wallets.
//!
//! - [`autopay`]: autopay's pure rules: recurring charge dates from an anchor, the one charge a
//!   wallet at its threshold needs, the monthly cap, and the dunning ladder for declines.
//! - [`attempts`]: [`attempts::TableAttempts`], the charging pass's storage over the table
//!   (the due attempts and recurring charges through the sparse open index).
//! - [`events`]: the wallet's own events ([`events::WalletEvent`]: topped up, autopay failed,
//!   suspended, limit reached), published through the outbox in the transaction of what they report.
//! - [`holds`]: holds placed before a send (the wallet API), exact under concurrency, and their
//!   release.
//! - [`checkout`]: the neutral face of a provider's hosted checkout (a top-up the wallet API
//!   starts).
//! - [`notices`]: what movements announce besides the money (low balance, review threshold).
//! - [`money`]: [`Currency`] and [`Money`] (amounts in minor units, formatted `12.34 USD`).
//! - [`tenant`]: [`TenantId`], the tenant a wallet belongs to, parsed once where it enters.
//! - [`rules`]: the pure rules (next state and money movement per event).
//! - [`parse`]: tolerant parsing of the provider events (Stripe's, the mailer's).
//! - [`providers`]: each email provider's delivery events (SES, SendGrid, Mailgun, Postmark,
//!   Resend, the mailer) mapped onto the wallet's email events, with their tenant and message id.
//! - [`model`]: the records — [`Wallet`], [`Entry`], [`EmailRow`], [`PaymentRow`],
//!   [`PaymentIndex`].
//! - [`items`]: how those records are laid out in the table (keys, attributes, writes).
//! - [`handler`]: the [`WalletHandler`] the processor runs (writes and metrics as its outcome);
//!   [`payment`]: its Stripe payments (tenant through the payment index, refunds settled);
//!   [`autopay_handler`]: its autopay (the attempt at the threshold, the credit that closes it,
//!   the saved method).
//! - [`ledger`]: [`Ledger`], what operators and reports use: create a wallet, change its limits
//!   (journaled), find the wallets (registry), read a wallet, its entries and rows.
//! - [`unmatched`]: payments that succeeded naming no tenant, kept for a human
//!   ([`unmatched::UnmatchedPayment`]) until a later event names the tenant or an operator binds
//!   them ([`Ledger::bind`]).
//! - [`reconcile`]: the consistency report (and the count of payments unmatched too long).
//! - [`views`]: [`WalletViews`], a function instance's view of sharded wallets (`WALLET_VIEW_MS`):
//!   a movement reads only its own shard strongly, the rest from a copy at most that old.
//! - [`config`]: the ledger's environment variables (documented with the core's `Var`) and
//!   [`WalletConfig`].

pub mod attempts;
pub mod autopay;
pub mod autopay_handler;
pub mod checkout;
pub mod config;
pub mod events;
pub mod handler;
pub mod holds;
pub mod items;
pub mod ledger;
pub mod model;
pub mod money;
pub mod notices;
pub mod parse;
pub mod payment;
pub mod providers;
pub mod reconcile;
pub mod rules;
pub mod tenant;
pub mod unmatched;
pub mod views;

pub use config::WalletConfig;
pub use handler::{WalletHandler, WalletSources, STRIPE_TYPES};
pub use ledger::{
    BindError, Bound, CreateOutcome, Entries, Ledger, LedgerError, LimitsChange, LimitsSet,
    Reindexed, Rows, ShardsError, ShardsSet, Tenants,
};
pub use model::{month_of, EmailRow, Entry, Limits, PaymentIndex, PaymentRow, RowEntry, Wallet};
pub use money::{Currency, InvalidCurrency, Money, Overflow};
pub use parse::StripeMode;
pub use providers::EmailProvider;
pub use rules::Funds;
pub use tenant::{InvalidTenant, TenantId, MAX_TENANT_CHARS};
pub use unmatched::UnmatchedPayment;
pub use views::WalletViews;

/// The CloudWatch namespace of the ledger's metrics.
pub const METRICS_NAMESPACE: &str = "WebhookIngestor/Wallet";

#[cfg(test)]
mod tests;
