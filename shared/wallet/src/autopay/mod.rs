//! Autopay, one slice: its records, the neutral face of a payment provider, its pure rules (when
//! a wallet is charged and how much, what follows a charge that failed), and beside them its
//! storage, its events parsed and its part of the handler and of the ledger. The pure modules
//! have no I/O and no provider: a payment provider's answers arrive already mapped onto
//! [`ChargeOutcome`]. It builds on [`crate::balance`] and knows nothing of email or payments.
//!
//! - [`attempt`]: the records ([`Autopay`], [`Attempt`]) and the charging pass's storage
//!   boundary ([`AttemptStore`]).
//! - [`charge`]: the neutral face of a payment provider ([`Charger`], [`ChargeRequest`],
//!   [`ChargeReply`]); the provider's module implements it.
//! - [`calendar`]: recurring charge dates, each computed from the anchor ([`Schedule`]).
//! - [`threshold`]: the one charge that brings a wallet back to its target ([`TopUpRule`]), and
//!   the monthly cap ([`MonthlyCap`]).
//! - [`ladder`]: the dunning ladder for declined charges ([`Ladder`], [`ChargeOutcome`]), counted
//!   from the first failure.
//! - [`pass`]: the charging pass ([`Pass`]): recurring periods made attempts, each due attempt
//!   claimed, charged and recorded by the ladder, late credits reported.
//! - [`rules`]: the ledger's autopay rule (a hold or debit at the threshold makes one attempt,
//!   the monthly cap).
//! - [`parse`]: Stripe's autopay events (saved methods, detached methods, attempts) parsed.
//! - [`items`]: how autopay's records are laid out in the table (the autopay item, attempts,
//!   journal, the payment-method index, the open-index shards).
//! - [`table`]: [`table::TableAttempts`], the charging pass's storage over the table.
//! - [`handler`]: the wallet handler's autopay (the attempt at the threshold, the credit that
//!   closes it, the saved method).
//! - [`ledger`]: the ledger's autopay (settings, attempts, journal, the operator's changes).
//! - `fakes` (tests, and the `fakes` feature): an in-memory [`AttemptStore`] and a scripted
//!   [`Charger`].

pub mod attempt;
pub mod calendar;
pub mod charge;
#[cfg(any(test, feature = "fakes"))]
pub mod fakes;
pub mod handler;
pub mod items;
pub mod ladder;
pub mod ledger;
pub mod overdue;
pub mod parse;
pub mod pass;
pub mod rules;
pub mod table;
pub mod threshold;

pub use attempt::{
    Attempt, AttemptState, AttemptStore, Autopay, AutopayStatus, ChargedOverflow, Listed, Reason,
    Recurring, SavedMethod, TryRecord, Written,
};
pub use calendar::{Every, Schedule};
pub use charge::{
    idempotency_key, tenant_tag, ChargeReply, ChargeRequest, Charger, Find, ProviderUnavailable,
};
pub use ladder::{ChargeOutcome, Ladder, LadderEnd, NextTry};
pub use pass::{Pass, PassConfig, PassReport, ReportOnly, Settle, Uncredited};
pub use threshold::{CapRefusal, MonthlyCap, TopUpRule};
