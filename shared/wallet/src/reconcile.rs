//! Reconciliation: what should never happen, counted. Holds older than a threshold with no
//! terminal event, holds past their expiry the sweep has not released, wallets whose balance or held amount disagrees with the sum of their entries
//! (or that cannot be read), entries whose webhook event is missing from the inbox (or, for
//! the wallet API's holds and releases, whose hold has no pointer), and payments unmatched for
//! longer than a window ([`crate::payments::unmatched`]: one `Query` of the open index, bounded by time; the
//! ordinary intent-then-session case is matched within seconds and never counted), and autopay
//! attempts the charging pass has not taken long after their due ([`crate::autopay::overdue`]:
//! the attempts' shards of the open index, no scan). Amounts in the
//! report are in each wallet's (or payment's) minor unit.
//!
//! It neither lies nor scans:
//!
//! - wallets are found through the wallet registry ([`Ledger::tenants`]: one `Query`), with a
//!   fallback scan only until the registry is marked complete (`inboxctl wallet reindex`);
//! - a wallet is compared with its entries consistently: the wallet is read, then its entries,
//!   then the wallet again; only when both reads agree (same amounts and the same change counter,
//!   which every movement increments in the same transaction as its entry) is the comparison made,
//!   else it is read again, up to [`SETTLE_READS`] times. A busy wallet that never settles is
//!   reported as unsettled (not compared, no alarm) rather than as a mismatch;
//! - a wallet item that is not valid (an amount that is not a number, unreadable entries, sums
//!   that overflow) is reported, never read as 0;
//! - entries are checked against the inbox only while their message must still be there: within
//!   the configured retention (`DELIVERY_RETENTION_DAYS`) less [`ORPHAN_MARGIN_MS`].

pub use crate::autopay::overdue::{OverdueAttempt, OVERDUE_GRACE_MS};
use crate::balance::items::wallet_pk;
use crate::balance::model::{Entry, Wallet};
use crate::balance::rules::EmailState;
pub use crate::email::holds::expiry::{ExpiredHold, EXPIRY_GRACE_MS};
use crate::email::holds::items::{hold_sk, HOLDS_SOURCE};
use crate::ledger::{Ledger, LedgerError};
use crate::money::checked_sum;
pub use crate::payments::unmatched::LongUnmatched;
use crate::tenant::TenantId;
use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::store::schema::{message_pk, MESSAGE_SK};
use inbox_core::store::{DueIndex, ItemStore, StoreError};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

pub mod provider;
mod report;
pub use report::{Mismatch, OrphanEntry, ReconcileReport, StaleHold, UnreadableWallet};

/// How often a wallet is read around its entries before it counts as unsettled.
pub const SETTLE_READS: usize = 5;

/// How much younger than the retention an entry must be to be checked against the inbox (a
/// message expires a retention after it was processed, never before).
pub const ORPHAN_MARGIN_MS: i64 = 3_600_000;

/// The default of how long a payment may stay unmatched before it is counted: an hour
/// (`RECONCILE_UNMATCHED_AFTER_MINUTES`).
pub const DEFAULT_UNMATCHED_AFTER_MS: i64 = 3_600_000;

/// What a reconciliation checks against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileOptions {
    /// How old a hold may get without a terminal event.
    pub stale_after_ms: i64,
    /// Entries younger than this (ms before now) must find their webhook event in the inbox.
    pub orphan_window_ms: i64,
    /// How long a payment may stay unmatched before it is counted (`UnmatchedPayments`).
    pub unmatched_after_ms: i64,
}

impl ReconcileOptions {
    /// For an inbox that keeps processed messages for `retention` (`DELIVERY_RETENTION_DAYS`):
    /// entries are checked against the inbox within the retention less [`ORPHAN_MARGIN_MS`].
    pub fn new(stale_after_ms: i64, retention: Duration) -> Self {
        let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        Self {
            stale_after_ms,
            orphan_window_ms: retention_ms.saturating_sub(ORPHAN_MARGIN_MS).max(0),
            unmatched_after_ms: DEFAULT_UNMATCHED_AFTER_MS,
        }
    }

    /// Counts the payments unmatched for longer than `ms` instead of the default hour.
    pub fn with_unmatched_after(mut self, ms: i64) -> Self {
        self.unmatched_after_ms = ms;
        self
    }
}

/// Whether the inbox holds the message `(source, event id)` (ids that cannot be keys: never).
async fn in_inbox<S: ItemStore>(
    store: &S,
    source: &str,
    event_id: &str,
) -> Result<bool, StoreError> {
    let (Ok(source), Ok(event_id)) = (SourceName::parse(source), EventId::parse(event_id)) else {
        return Ok(false);
    };
    let pk = message_pk(&MessageKey::new(source, event_id));
    Ok(store.get_item(&pk, MESSAGE_SK).await?.is_some())
}

/// Checks every wallet at `now_ms` (see the module docs).
///
/// The pass is boxed: it nests the store's (the AWS SDK's deep) futures several levels down, and
/// an unboxed future type that deep exceeds rustc's layout depth limit in a caller's `main`.
pub fn reconcile<'a, S: ItemStore + DueIndex>(
    store: &'a S,
    now_ms: i64,
    options: ReconcileOptions,
) -> Pin<Box<dyn Future<Output = Result<ReconcileReport, StoreError>> + Send + 'a>> {
    Box::pin(check(store, now_ms, options))
}

/// A wallet and its entries, read consistently (or why not).
enum Read {
    /// Deleted meanwhile.
    Gone,
    Unreadable(String),
    Unsettled,
    Settled(Box<Wallet>, Vec<Entry>),
}

/// Reads the wallet, its entries, and the wallet again until both wallet reads agree.
async fn settled<S: ItemStore>(
    ledger: Ledger<'_, S>,
    tenant: &TenantId,
) -> Result<Read, StoreError> {
    let wallet = |w: Result<Option<Wallet>, LedgerError>| match w {
        Ok(Some(w)) => Ok(Ok(w)),
        Ok(None) => Ok(Err(Read::Gone)),
        Err(LedgerError::Unreadable(reason)) => Ok(Err(Read::Unreadable(reason))),
        Err(LedgerError::Store(e)) => Err(e),
    };
    for _ in 0..SETTLE_READS {
        let before = match wallet(ledger.wallet(tenant).await)? {
            Ok(w) => w,
            Err(read) => return Ok(read),
        };
        let entries = ledger.entries(&before).await?;
        let after = match wallet(ledger.wallet(tenant).await)? {
            Ok(w) => w,
            Err(read) => return Ok(read),
        };
        let same = (before.changes, before.balance, before.held)
            == (after.changes, after.balance, after.held);
        if !same {
            continue;
        }
        if entries.unreadable > 0 {
            return Ok(Read::Unreadable(format!(
                "{} of its {} entry items are unreadable",
                entries.unreadable,
                entries.total()
            )));
        }
        return Ok(Read::Settled(Box::new(after), entries.entries));
    }
    Ok(Read::Unsettled)
}

async fn check<S: ItemStore + DueIndex>(
    store: &S,
    now_ms: i64,
    options: ReconcileOptions,
) -> Result<ReconcileReport, StoreError> {
    let ledger = Ledger::new(store);
    let found = ledger.tenants().await?;
    let mut report = ReconcileReport {
        registry_complete: found.registry_complete,
        unregistered_wallets: found.unregistered,
        ..ReconcileReport::default()
    };
    // Waited longer than the window: first seen strictly before `now − window`.
    let waited_since = now_ms
        .saturating_sub(options.unmatched_after_ms)
        .saturating_sub(1);
    report.unmatched_payments = match ledger.unmatched(waited_since).await {
        Ok(found) => found.into_iter().map(LongUnmatched::from).collect(),
        Err(LedgerError::Store(e)) => return Err(e),
        // An unreadable unmatched item is the table's problem: refused as the store refuses it.
        Err(LedgerError::Unreadable(reason)) => return Err(StoreError::Unreadable(reason.into())),
    };
    report.overdue_attempts =
        crate::autopay::overdue::overdue(store, inbox_core::clock::Millis::new(now_ms)).await?;
    let mut events_seen: HashMap<(String, String), bool> = HashMap::new();
    for tenant in found.tenants {
        let unreadable = |reason: String| UnreadableWallet {
            tenant: tenant.clone(),
            reason,
        };
        let (wallet, entries) = match settled(ledger, &tenant).await? {
            Read::Gone => continue,
            Read::Unsettled => {
                report.wallets += 1;
                report.unsettled_wallets.push(tenant);
                continue;
            }
            Read::Unreadable(reason) => {
                report.wallets += 1;
                report.unreadable_wallets.push(unreadable(reason));
                continue;
            }
            Read::Settled(wallet, entries) => (wallet, entries),
        };
        report.wallets += 1;
        report.entries += entries.len();
        let sums = checked_sum(
            entries.iter().map(|e| e.balance_delta.minor()),
            "the sum of its balance deltas",
        )
        .and_then(|b| {
            Ok((
                b,
                checked_sum(
                    entries.iter().map(|e| e.held_delta.minor()),
                    "the sum of its held deltas",
                )?,
            ))
        });
        match sums {
            Err(overflow) => report
                .unreadable_wallets
                .push(unreadable(overflow.to_string())),
            Ok((entries_balance, entries_held))
                if entries_balance != wallet.balance.minor()
                    || entries_held != wallet.held.minor() =>
            {
                report.mismatched_wallets.push(Mismatch {
                    tenant: tenant.clone(),
                    balance: wallet.balance.minor(),
                    entries_balance,
                    held: wallet.held.minor(),
                    entries_held,
                });
            }
            Ok(_) => {}
        }
        match ledger.email_rows(&tenant).await {
            Ok(emails) => {
                for email in emails.into_iter().filter(|e| e.state == EmailState::Held) {
                    if let Some(at) = email
                        .expires_at
                        .map(|t| t.get())
                        .filter(|t| now_ms - t > EXPIRY_GRACE_MS)
                    {
                        report.expired_holds.push(ExpiredHold {
                            tenant: tenant.clone(),
                            message_id: email.message_id.clone(),
                            amount: email.amount.get(),
                            expires_at: at,
                        });
                    }
                    let held_at = email.held_at.or(email.updated_at).map_or(0, |t| t.get());
                    if now_ms.saturating_sub(held_at) > options.stale_after_ms {
                        report.stale_holds.push(StaleHold {
                            tenant: tenant.clone(),
                            message_id: email.message_id,
                            amount: email.amount.get(),
                            held_at,
                        });
                    }
                }
            }
            Err(LedgerError::Unreadable(reason)) => {
                report.unreadable_wallets.push(unreadable(reason));
            }
            Err(LedgerError::Store(e)) => return Err(e),
        }
        for e in entries
            .into_iter()
            .filter(|e| now_ms.saturating_sub(e.at) <= options.orphan_window_ms)
        {
            let key = (e.event_source.clone(), e.event_id.clone());
            let exists = match events_seen.get(&key) {
                Some(x) => *x,
                None => {
                    let x = if e.event_source == HOLDS_SOURCE {
                        // A hold the wallet API placed (or released): its origin is its pointer.
                        store
                            .get_item(&wallet_pk(&tenant), &hold_sk(&e.event_id))
                            .await?
                            .is_some()
                    } else {
                        in_inbox(store, &e.event_source, &e.event_id).await?
                    };
                    events_seen.insert(key, x);
                    x
                }
            };
            if !exists {
                report.orphan_entries.push(OrphanEntry {
                    tenant: e.tenant,
                    entry_id: e.id,
                    event_source: e.event_source,
                    event_id: e.event_id,
                });
            }
        }
    }
    Ok(report)
}
