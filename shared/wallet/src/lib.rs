//! The prepaid wallet ledger: Stripe top-ups credit a tenant's wallet, email delivery events (of
//! any configured email provider) hold, debit and refund it, each exactly once, in any order. An application of the inbox core: the
//! core runs its handler and stores its items, and knows nothing of wallets.
//!
//! # Layout
//!
//! Feature slices, each with its rules, its storage and its part of the handler together; a
//! module imports only from the rows above it (checked by `layout_imports_point_down` below):
//!
//! 1. The ground: [`money`] ([`Currency`], [`Money`] in minor units, formatted `12.34 USD`,
//!    [`Minor`]: minor units whose currency the wallet names),
//!    [`tenant`] ([`TenantId`], parsed once where it enters) and [`parse`] (the tolerant parsing
//!    helpers the slices share, and Stripe's `livemode`; each slice parses its own events).
//! 2. [`balance`]: the records ([`Wallet`], [`Entry`], [`EmailRow`], [`PaymentRow`],
//!    [`PaymentIndex`]), the pure rules, the item layout (shards, refills, limits, the registry),
//!    its storage ([`balance::ledger`]: functions of the item store), the views of sharded wallets
//!    ([`WalletViews`], `WALLET_VIEW_MS`), its part of the handler (the wallet a movement decides
//!    on, the writes of its money), the notices and the wallet's own events.
//! 3. [`autopay`]: its records and pure rules (calendar, threshold, cap, dunning ladder), the
//!    charging pass, its items and table ([`autopay::table::TableAttempts`]), its Stripe events
//!    parsed, its part of the handler and of the ledger.
//! 4. [`email`] (the email providers' delivery events and their part of the handler, holds
//!    placed before a send) and [`payments`] (Stripe payments and their part of the handler, the
//!    unmatched ones, hosted checkout), side by side.
//! 5. The top: [`handler`] (the [`WalletHandler`] the processor runs: dispatch by source, its one
//!    impl block), [`ledger`] (the operator's facade: [`Ledger`], its one impl block delegating to
//!    the slices' storage, and what its methods answer), [`reconcile`]
//!    (the consistency report) and [`config`] (the ledger's environment variables, documented with
//!    the core's `Var`, and [`WalletConfig`]).

pub mod money;
pub mod parse;
pub mod tenant;

pub mod balance;

pub mod autopay;

pub mod email;
pub mod payments;

pub mod config;
pub mod handler;
pub mod ledger;
pub mod reconcile;

pub use balance::events::PUBLISHED_SOURCES;
pub use balance::model::{
    month_of, EmailRow, Entry, Limits, PaymentIndex, PaymentRow, RowEntry, Wallet,
};
pub use balance::rules::Funds;
pub use balance::views::WalletViews;
pub use config::WalletConfig;
pub use email::providers::EmailProvider;
pub use handler::{WalletHandler, WalletSources, STRIPE_TYPES};
pub use ledger::{
    BindError, Bound, CreateOutcome, DismissError, Entries, Ledger, LedgerError, LimitsChange,
    LimitsSet, Reindexed, Rows, ShardsError, ShardsSet, Tenants,
};
pub use money::{Currency, InvalidCurrency, Minor, Money, Overflow};
pub use parse::StripeMode;
pub use payments::unmatched::UnmatchedPayment;
pub use tenant::{
    InvalidTenant, TenantId, MAX_STORED_TENANT_CHARS, MAX_TENANT_CHARS, TENANT_GRAMMAR,
};

/// The CloudWatch namespace of the ledger's metrics.
pub const METRICS_NAMESPACE: &str = "WebhookIngestor/Wallet";

#[cfg(test)]
mod tests;
