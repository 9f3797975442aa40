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
//! | `Pending` | the provider took try `try_no` and settles it later (Stripe: `processing`, days for SEPA Direct Debit): never sent again; its webhook (succeeded: credited; failed or canceled: a decline down the ladder) or a look-up of its `provider_ref` ends it | yes, at the next look-up |
//! | `Charged` | the provider said succeeded; the credit comes from its payment's webhook | yes, at the reconciliation deadline |
//! | `Credited` | its payment's webhook credited the wallet (in the same transaction) | no (terminal) |
//! | `Ended` | the ladder ended without a charge, or a limit refused it, with the reason | no (terminal) |

use super::calendar::Schedule;
use super::ladder::Ladder;
use super::threshold::{MonthlyCap, TopUpRule};
use crate::money::Money;
pub use crate::parse::SavedMethod;
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

/// A month's charged total would not fit the counter (a corrupt or absurd amount).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the charged total of {month} would overflow ({charged} + {amount} minor units)")]
pub struct ChargedOverflow {
    pub month: String,
    pub charged: i64,
    pub amount: i64,
}

impl Autopay {
    /// Counts `amount` (minor units) in `month`'s charges, for the monthly cap: an open attempt
    /// reserves its amount when it is made.
    pub fn count_charge(&mut self, month: &str, amount: i64) -> Result<(), ChargedOverflow> {
        let charged = self.month_charged.get(month).copied().unwrap_or(0);
        let total = charged.checked_add(amount).ok_or(ChargedOverflow {
            month: month.to_owned(),
            charged,
            amount,
        })?;
        self.month_charged.insert(month.to_owned(), total);
        Ok(())
    }

    /// Gives back what an attempt that ended without a charge reserved in `month` (never below
    /// zero): the cap counts money charged, succeeded or pending, not attempts.
    pub fn give_back(&mut self, month: &str, amount: i64) {
        if let Some(charged) = self.month_charged.get_mut(month) {
            *charged = charged.saturating_sub(amount).max(0);
        }
    }
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
    Pending,
    Charged,
    Credited,
    Ended { reason: String },
}

impl AttemptState {
    /// Its name, as the module's table and the attempt's item give it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Due => "due",
            Self::Charging => "charging",
            Self::Pending => "pending",
            Self::Charged => "charged",
            Self::Credited => "credited",
            Self::Ended { .. } => "ended",
        }
    }

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
    /// When the current try was first claimed (its key first sent): the key's age at the
    /// provider is measured from it. `None` before the try's first claim.
    pub claimed_at: Option<Millis>,
    /// The provider's id of the current try's charge, once an answer named one (a charge that
    /// exists is never sent again: it is looked up); after a decline, the declined one's.
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

/// A due list: what could be read, and what could not (each with its key and reason), so one
/// unreadable item never stops the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<T> {
    pub items: Vec<T>,
    /// `"{tenant} {key}: {reason}"` of each item that could not be read.
    pub unreadable: Vec<String>,
}

impl<T> Listed<T> {
    pub fn of(items: Vec<T>) -> Self {
        Self {
            items,
            unreadable: Vec::new(),
        }
    }
}

/// What the charging pass needs of the table.
pub trait AttemptStore: Send + Sync {
    /// The attempts whose `due` is at or before `now`, oldest first, at most `limit` (a sparse
    /// index: no scan); an item that cannot be read is listed apart, never an error of the list.
    fn due_attempts(
        &self,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Listed<Attempt>, StoreError>> + Send;

    /// The wallets whose recurring charge is due at or before `now`, at most `limit` (a sparse
    /// index: no scan); unreadable ones listed apart, as above.
    fn due_recurring(
        &self,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Listed<Autopay>, StoreError>> + Send;

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
