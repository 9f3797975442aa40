//! Autopay's records and the storage boundary of the charging pass: a wallet's [`Autopay`]
//! settings (its rules, its saved payment method, whether it is active, and its one open
//! attempt) and each [`Attempt`] (one business decision to charge: a threshold crossed, a
//! recurring period due) with its tries. How they are laid out in the table is the ledger's item
//! layout's business; the charging pass reads and writes them through [`AttemptStore`].
//!
//! An attempt's life:
//!
//! | state | means | due index |
//! |---|---|---|
//! | `Due` | its next try is due at `due` | yes, at `due` |
//! | `Charging` | try `try_no` began: its idempotency key is stored, the answer is not recorded yet | yes, at the lease's end: a crash repeats the same key |
//! | `Charged` | the provider said succeeded; the credit comes from its payment's webhook | yes, at the reconciliation deadline |
//! | `Credited` | its payment's webhook credited the wallet (in the same transaction) | no (terminal) |
//! | `Ended` | the ladder ended without a charge, or a limit refused it, with the reason | no (terminal) |

use super::calendar::Schedule;
use super::ladder::Ladder;
use super::threshold::{MonthlyCap, TopUpRule};
use crate::money::Money;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::{Effect, StoreError};
use std::collections::BTreeMap;
use std::future::Future;

/// A recurring charge: `amount` on each date of `schedule`; `next` is the index of the next charge
/// not yet made an attempt (so a scheduler that was down makes the one it missed, once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recurring {
    pub schedule: Schedule,
    pub amount: Money,
    pub next: u32,
}

/// The provider's customer and saved payment method (from its setup events or the operator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedMethod {
    pub customer: String,
    pub payment_method: String,
}

/// Whether autopay may charge.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AutopayStatus {
    #[default]
    Active,
    /// The operator paused it.
    Paused,
    /// Autopay stopped itself: the ladder ended, the saved method was detached.
    Suspended { reason: String },
}

/// A wallet's autopay settings and its open attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autopay {
    pub tenant: TenantId,
    pub top_up: Option<TopUpRule>,
    pub recurring: Option<Recurring>,
    pub cap: Option<MonthlyCap>,
    pub ladder: Ladder,
    pub method: Option<SavedMethod>,
    pub status: AutopayStatus,
    /// The one attempt not yet `Credited` or `Ended` (at most one per wallet).
    pub open_attempt: Option<String>,
    /// Amounts of the attempts made per month (`YYYY_MM`, minor units), for the cap.
    pub month_charged: BTreeMap<String, i64>,
    /// The last month (`YYYY_MM`) whose cap refusal was reported (metric and event): once a month.
    pub limit_reported: Option<String>,
    pub updated_at: Millis,
    /// `None` before it is first stored.
    pub version: Option<u64>,
}

/// Why an attempt was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `available` fell to the threshold.
    Threshold,
    /// Charge `period` of the recurring schedule.
    Recurring { period: u32 },
}

/// Where an attempt stands (see the module's table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptState {
    Due,
    Charging,
    Charged,
    Credited,
    Ended { reason: String },
}

impl AttemptState {
    /// `Credited` or `Ended`: nothing more happens to it.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Credited | Self::Ended { .. })
    }
}

/// One try of an attempt, journaled on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TryRecord {
    pub try_no: u32,
    pub at: Millis,
    /// `succeeded`, `indeterminate`, or the decline's code.
    pub outcome: String,
    /// When the next try is due, if one is.
    pub next_due: Option<Millis>,
}

/// One business decision to charge a wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Stable for the decision (derived from the event or the period that made it), so a re-run
    /// of the transaction that made it makes the same one.
    pub id: String,
    pub tenant: TenantId,
    pub reason: Reason,
    pub amount: Money,
    pub state: AttemptState,
    /// The current try (0: the first).
    pub try_no: u32,
    /// The dunning ladder's rung of the current try.
    pub rung: usize,
    pub first_failure: Option<Millis>,
    pub due: Millis,
    /// The current try's key, stored before its call.
    pub idempotency_key: Option<String>,
    /// The provider's id of the latest charge.
    pub provider_ref: Option<String>,
    pub tries: Vec<TryRecord>,
    pub created_at: Millis,
    /// `None` before it is first stored.
    pub version: Option<u64>,
}

/// A write that lost to another writer of the same item: read it again and decide again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Done,
    Conflict,
}

/// What the charging pass needs of the table.
pub trait AttemptStore: Send + Sync {
    /// The attempts whose `due` is at or before `now`, oldest first, at most `limit` (a sparse
    /// index: no scan).
    fn due_attempts(
        &self,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Attempt>, StoreError>> + Send;

    /// The wallets whose recurring charge is due at or before `now`, at most `limit` (a sparse
    /// index: no scan).
    fn due_recurring(
        &self,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Autopay>, StoreError>> + Send;

    fn autopay(
        &self,
        tenant: &TenantId,
    ) -> impl Future<Output = Result<Option<Autopay>, StoreError>> + Send;

    fn attempt(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> impl Future<Output = Result<Option<Attempt>, StoreError>> + Send;

    /// Writes `attempt` at the version read (a new one when `version` is `None`), `autopay` too
    /// when given (at its version), and `also` (e.g. an event to publish), in one transaction.
    fn write(
        &self,
        attempt: &Attempt,
        autopay: Option<&Autopay>,
        also: Vec<Effect>,
    ) -> impl Future<Output = Result<Written, StoreError>> + Send;
}
