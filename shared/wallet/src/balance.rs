//! The balance, one slice: a wallet's record and its pure rules (the next state and the money
//! movement per event), how it is laid out in the table (with its shards, refills and limits),
//! its storage (functions of the item store that read and write it), the function instance's
//! views of sharded wallets, its part of the handler, its notices and the wallet's own events. Every other slice builds on it.
//!
//! - [`model`]: the records ([`model::Wallet`], [`model::Entry`], the rows).
//! - [`rules`]: the pure rules (next state and money movement per event).
//! - [`items`]: how those records are laid out in the table (keys, attributes, writes; shards,
//!   refills, limits, the registry and indexes).
//! - [`ledger`]: its storage, functions of the item store (create, read a wallet, its rows,
//!   limits, shards, the registry); [`crate::Ledger`] delegates to them.
//! - [`views`]: [`views::WalletViews`], a function instance's view of sharded wallets.
//! - [`handler`]: the balance's part of the wallet handler (the wallet a movement decides on,
//!   the writes of an event's movements, a failed read as the handler's outcome).
//! - [`notices`]: what movements announce besides the money (low balance, review threshold).
//! - [`events`]: the wallet's own events ([`events::WalletEvent`]), published through the outbox.

pub mod events;
pub mod handler;
pub mod items;
pub mod ledger;
pub mod model;
pub mod notices;
pub mod rules;
pub mod views;
