//! What one charging pass did: its counts (the invocation's result and log line), the charges
//! whose credit is late, and the metrics of the writes that committed, for the charging function
//! to emit.

use crate::money::Money;
use crate::tenant::TenantId;
use inbox_core::metrics::Metric;
use serde::Serialize;

/// A charge the provider made (or said it made) whose credit never came by its deadline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Uncredited {
    pub tenant: String,
    pub attempt: String,
    /// Minor units.
    pub amount: i64,
    pub currency: String,
    /// The provider's id of the charge, when it knows one.
    pub provider_ref: Option<String>,
    /// The provider confirms the charge succeeded (so crediting it is due).
    pub succeeded: bool,
}

impl Uncredited {
    pub(super) fn new(
        tenant: &TenantId,
        attempt: &str,
        amount: Money,
        provider_ref: Option<String>,
        succeeded: bool,
    ) -> Self {
        Self {
            tenant: tenant.as_str().to_owned(),
            attempt: attempt.to_owned(),
            amount: amount.minor(),
            currency: amount.currency().as_str().to_owned(),
            provider_ref,
            succeeded,
        }
    }
}

/// One pass's outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PassReport {
    /// Attempts read as due.
    pub due: usize,
    /// Tries sent to the provider (each a claimed try, its key stored first).
    pub tries: usize,
    /// The provider's requests those tries took (its technical retries included).
    pub requests: u64,
    pub succeeded: usize,
    pub declined: usize,
    /// Charges the provider took to settle later (recorded `Pending`, or looked up still so).
    pub pending: usize,
    pub indeterminate: usize,
    /// Tries sent again past the key's window, after the provider's records proved no charge.
    pub resent_after_proof: usize,
    /// Items of the due lists that could not be read: skipped (each named in the log and
    /// counted in `AutopayUnreadable`), the rest of the pass charged.
    pub unreadable: usize,
    /// The first few of them (key and reason), for the log.
    pub unreadable_samples: Vec<String>,
    /// Attempts ended (the ladder ended, or nothing could be charged).
    pub ended: usize,
    /// Autopay suspensions written.
    pub suspended: usize,
    /// Recurring periods made attempts.
    pub recurring_made: usize,
    /// Recurring periods waiting for the wallet's open attempt.
    pub recurring_waiting: usize,
    /// Recurring periods skipped (autopay not active) or refused by the cap: `Ended` attempts.
    pub recurring_skipped: usize,
    pub limit_reached: usize,
    /// Writes that lost to another writer: re-read and decided again.
    pub conflicts: usize,
    /// Attempts found changed after their call (the webhook credited one meanwhile): left alone.
    pub left_alone: usize,
    /// Due attempts not started because the invocation's deadline was near: the next run's.
    pub deferred: usize,
    pub uncredited: Vec<Uncredited>,
    /// Uncredited charges the ledger credited.
    pub settled: usize,
    /// Store or provider errors (the attempt stays as it was: the next run retries it).
    pub errors: usize,
    /// The first few errors, for the log line.
    pub error_samples: Vec<String>,
    /// Of the committed writes, emitted by the charging function.
    #[serde(skip)]
    pub metrics: Vec<Metric>,
}

/// At most this many errors are kept as samples.
const ERROR_SAMPLES: usize = 10;

impl PassReport {
    pub(super) fn error(&mut self, what: &str, e: impl std::fmt::Display) {
        self.errors += 1;
        if self.error_samples.len() < ERROR_SAMPLES {
            self.error_samples.push(format!("{what}: {e}"));
        }
    }

    /// Whether nothing was due and nothing failed.
    pub fn is_idle(&self) -> bool {
        self.due == 0
            && self.recurring_made == 0
            && self.recurring_skipped == 0
            && self.errors == 0
            && self.unreadable == 0
    }
}
