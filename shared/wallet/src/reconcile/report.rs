//! The reconciliation's report: what it found, each kind a list, and its counts as metrics.

use super::{ExpiredHold, LongUnmatched, OverdueAttempt};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::metrics::Metric;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleHold {
    pub tenant: TenantId,
    pub message_id: String,
    pub amount: i64,
    pub held_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub tenant: TenantId,
    pub balance: i64,
    pub entries_balance: i64,
    pub held: i64,
    pub entries_held: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrphanEntry {
    pub tenant: TenantId,
    pub entry_id: String,
    pub event_source: String,
    pub event_id: String,
}

/// A wallet that could not be compared with its entries because something in it is not valid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreadableWallet {
    pub tenant: TenantId,
    pub reason: String,
}

/// The report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    pub wallets: usize,
    pub entries: usize,
    pub stale_holds: Vec<StaleHold>,
    /// Holds past their expiry (and its grace) that the sweep has not released: a problem.
    pub expired_holds: Vec<ExpiredHold>,
    pub mismatched_wallets: Vec<Mismatch>,
    pub orphan_entries: Vec<OrphanEntry>,
    /// Wallets (or their rows or entries) that are not valid: a problem, counted with the
    /// mismatches.
    pub unreadable_wallets: Vec<UnreadableWallet>,
    /// Wallets that changed between every pair of reads ([`SETTLE_READS`]): busy, not compared
    /// this time. Not a problem by itself.
    pub unsettled_wallets: Vec<TenantId>,
    /// Whether the wallets were found through the complete registry alone (no scan).
    pub registry_complete: bool,
    /// Wallets only the fallback scan found: `inboxctl wallet reindex` registers them.
    pub unregistered_wallets: Vec<TenantId>,
    /// Payments unmatched for longer than [`ReconcileOptions::unmatched_after_ms`], oldest first
    /// (at most [`crate::balance::ledger::LIST_LIMIT`]): a problem until bound.
    pub unmatched_payments: Vec<LongUnmatched>,
    /// Autopay attempts still due [`OVERDUE_GRACE_MS`] after their due: the charging pass is
    /// not taking them (a lease that ended and was never re-driven, a look-up never made).
    pub overdue_attempts: Vec<OverdueAttempt>,
}

impl ReconcileReport {
    /// Whether everything reconciles.
    pub fn is_clean(&self) -> bool {
        self.stale_holds.is_empty()
            && self.expired_holds.is_empty()
            && self.mismatched_wallets.is_empty()
            && self.orphan_entries.is_empty()
            && self.unreadable_wallets.is_empty()
            && self.unmatched_payments.is_empty()
            && self.overdue_attempts.is_empty()
    }

    /// The counts as metrics (`StaleHolds`, `ExpiredHolds`, `MismatchedWallets` — unreadable wallets included —,
    /// `OrphanEntries`, `UnmatchedPayments`, `OverdueAutopayAttempts`; one EMF document when
    /// emitted together).
    pub fn metrics(&self) -> Vec<Metric> {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        vec![
            Metric::count(
                METRICS_NAMESPACE,
                "StaleHolds",
                count(self.stale_holds.len()),
            ),
            Metric::count(
                METRICS_NAMESPACE,
                "ExpiredHolds",
                count(self.expired_holds.len()),
            ),
            Metric::count(
                METRICS_NAMESPACE,
                "MismatchedWallets",
                count(self.mismatched_wallets.len() + self.unreadable_wallets.len()),
            ),
            Metric::count(
                METRICS_NAMESPACE,
                "OrphanEntries",
                count(self.orphan_entries.len()),
            ),
            Metric::count(
                METRICS_NAMESPACE,
                "UnmatchedPayments",
                count(self.unmatched_payments.len()),
            ),
            Metric::count(
                METRICS_NAMESPACE,
                "OverdueAutopayAttempts",
                count(self.overdue_attempts.len()),
            ),
        ]
    }
}
