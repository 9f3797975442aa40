//! Autopay: its records, the neutral face of a payment provider, and its pure rules (when a
//! wallet is charged and how much, what follows a charge that failed). No I/O and no provider
//! here: the scheduler, the charging function and the ledger apply these, and a payment
//! provider's answers arrive already mapped onto [`ChargeOutcome`].
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
//! - `fakes` (tests, and the `fakes` feature): an in-memory [`AttemptStore`] and a scripted
//!   [`Charger`].

pub mod attempt;
pub mod calendar;
pub mod charge;
#[cfg(any(test, feature = "fakes"))]
pub mod fakes;
pub mod ladder;
pub mod pass;
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
