//! Autopay's pure rules: when a wallet is charged and how much, and what follows a charge that
//! failed. No I/O and no provider here: the scheduler, the charging function and the ledger apply
//! these, and a payment provider's answers arrive already mapped onto [`ChargeOutcome`].
//!
//! - [`calendar`]: recurring charge dates, each computed from the anchor ([`Schedule`]).
//! - [`threshold`]: the one charge that brings a wallet back to its target ([`TopUpRule`]), and
//!   the monthly cap ([`MonthlyCap`]).
//! - [`ladder`]: the dunning ladder for declined charges ([`Ladder`], [`ChargeOutcome`]), counted
//!   from the first failure.

pub mod calendar;
pub mod ladder;
pub mod threshold;

pub use calendar::{Every, Schedule};
pub use ladder::{ChargeOutcome, Ladder, LadderEnd, NextTry};
pub use threshold::{CapRefusal, MonthlyCap, TopUpRule};
