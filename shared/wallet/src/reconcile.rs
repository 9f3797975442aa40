//! Reconciliation: what should never happen, counted. Holds older than a threshold with no
//! terminal event, wallets whose balance or held amount disagrees with the sum of their entries,
//! and entries whose webhook event is missing from the inbox. Amounts in the report are in each
//! wallet's minor unit.

use crate::ledger::Ledger;
use crate::rules::EmailState;
use crate::METRICS_NAMESPACE;
use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::metrics::Metric;
use inbox_core::store::schema::{message_pk, MESSAGE_SK};
use inbox_core::store::{ItemStore, StoreError};
use serde::Serialize;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleHold {
    pub tenant: String,
    pub message_id: String,
    pub amount: i64,
    pub held_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub tenant: String,
    pub balance: i64,
    pub entries_balance: i64,
    pub held: i64,
    pub entries_held: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrphanEntry {
    pub tenant: String,
    pub entry_id: String,
    pub event_source: String,
    pub event_id: String,
}

/// The report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    pub wallets: usize,
    pub entries: usize,
    pub stale_holds: Vec<StaleHold>,
    pub mismatched_wallets: Vec<Mismatch>,
    pub orphan_entries: Vec<OrphanEntry>,
}

impl ReconcileReport {
    /// Whether everything reconciles.
    pub fn is_clean(&self) -> bool {
        self.stale_holds.is_empty()
            && self.mismatched_wallets.is_empty()
            && self.orphan_entries.is_empty()
    }

    /// The counts as metrics (`StaleHolds`, `MismatchedWallets`, `OrphanEntries`; one EMF
    /// document when emitted together).
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
                "MismatchedWallets",
                count(self.mismatched_wallets.len()),
            ),
            Metric::count(
                METRICS_NAMESPACE,
                "OrphanEntries",
                count(self.orphan_entries.len()),
            ),
        ]
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

/// How far back entries are checked against the inbox by default: processed messages expire
/// after the retention period (30 days by default), so older entries would all look orphaned.
pub const DEFAULT_ORPHAN_WINDOW_MS: i64 = 29 * 86_400_000;

/// Checks every wallet. `stale_after_ms`: how old a hold may get without a terminal event.
/// Entries are checked for their webhook event within [`DEFAULT_ORPHAN_WINDOW_MS`].
pub async fn reconcile<S: ItemStore>(
    store: &S,
    now_ms: i64,
    stale_after_ms: i64,
) -> Result<ReconcileReport, StoreError> {
    reconcile_within(store, now_ms, stale_after_ms, DEFAULT_ORPHAN_WINDOW_MS).await
}

/// [`reconcile`] with the window (ms before `now_ms`) in which entries must find their webhook
/// event in the inbox: it should be shorter than the messages' retention.
///
/// The pass is boxed: it nests the store's (the AWS SDK's deep) futures several levels down, and
/// an unboxed future type that deep exceeds rustc's layout depth limit in a caller's `main`.
pub fn reconcile_within<'a, S: ItemStore>(
    store: &'a S,
    now_ms: i64,
    stale_after_ms: i64,
    orphan_window_ms: i64,
) -> Pin<Box<dyn Future<Output = Result<ReconcileReport, StoreError>> + Send + 'a>> {
    Box::pin(check(store, now_ms, stale_after_ms, orphan_window_ms))
}

async fn check<S: ItemStore>(
    store: &S,
    now_ms: i64,
    stale_after_ms: i64,
    orphan_window_ms: i64,
) -> Result<ReconcileReport, StoreError> {
    let ledger = Ledger::new(store);
    let mut report = ReconcileReport::default();
    let mut events_seen: HashMap<(String, String), bool> = HashMap::new();
    for wallet in ledger.wallets().await? {
        report.wallets += 1;
        let entries = ledger.entries(&wallet).await?.entries;
        report.entries += entries.len();
        let entries_balance: i64 = entries.iter().map(|e| e.balance_delta.minor()).sum();
        let entries_held: i64 = entries.iter().map(|e| e.held_delta.minor()).sum();
        if entries_balance != wallet.balance.minor() || entries_held != wallet.held.minor() {
            report.mismatched_wallets.push(Mismatch {
                tenant: wallet.tenant.clone(),
                balance: wallet.balance.minor(),
                entries_balance,
                held: wallet.held.minor(),
                entries_held,
            });
        }
        for email in ledger.email_rows(&wallet.tenant).await? {
            if email.state == EmailState::Held {
                let held_at = email.held_at.or(email.updated_at).unwrap_or(0);
                if now_ms - held_at > stale_after_ms {
                    report.stale_holds.push(StaleHold {
                        tenant: wallet.tenant.clone(),
                        message_id: email.message_id,
                        amount: email.amount,
                        held_at,
                    });
                }
            }
        }
        for e in entries
            .into_iter()
            .filter(|e| now_ms - e.at <= orphan_window_ms)
        {
            let key = (e.event_source.clone(), e.event_id.clone());
            let exists = match events_seen.get(&key) {
                Some(x) => *x,
                None => {
                    let x = in_inbox(store, &e.event_source, &e.event_id).await?;
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
