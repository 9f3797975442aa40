//! Reconciliation: what should never happen, counted. Holds older than a threshold with no
//! terminal event, wallets whose balance or held amount disagrees with the sum of their entries,
//! and entries whose webhook event is missing from the inbox.

use super::{
    get_n, get_s, wallet_pk, EmailRow, Entry, Wallet, EMAIL_PREFIX, ENTRY_PREFIX, KIND_WALLET,
};
use inbox_core::store::schema::MESSAGE_SK;
use inbox_core::store::{ItemStore, StoreError};
use serde::Serialize;
use std::collections::HashMap;

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

    /// The counts as one CloudWatch embedded-metric-format document.
    pub fn emf(&self, now_ms: i64) -> String {
        serde_json::json!({
            "_aws": {
                "Timestamp": now_ms,
                "CloudWatchMetrics": [{
                    "Namespace": "WebhookIngestor/Wallet",
                    "Dimensions": [[]],
                    "Metrics": [
                        {"Name": "StaleHolds", "Unit": "Count"},
                        {"Name": "MismatchedWallets", "Unit": "Count"},
                        {"Name": "OrphanEntries", "Unit": "Count"}
                    ]
                }]
            },
            "StaleHolds": self.stale_holds.len(),
            "MismatchedWallets": self.mismatched_wallets.len(),
            "OrphanEntries": self.orphan_entries.len()
        })
        .to_string()
    }
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
pub async fn reconcile_within<S: ItemStore>(
    store: &S,
    now_ms: i64,
    stale_after_ms: i64,
    orphan_window_ms: i64,
) -> Result<ReconcileReport, StoreError> {
    let mut report = ReconcileReport::default();
    let mut events_seen: HashMap<(String, String), bool> = HashMap::new();
    let mut wallets: Vec<Wallet> = store
        .items_of_kind(KIND_WALLET)
        .await?
        .iter()
        .filter_map(Wallet::from_item)
        .collect();
    wallets.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    for wallet in wallets {
        report.wallets += 1;
        let pk = wallet_pk(&wallet.tenant);
        let entries: Vec<Entry> = store
            .query_items(&pk, ENTRY_PREFIX)
            .await?
            .iter()
            .filter_map(Entry::from_item)
            .collect();
        report.entries += entries.len();
        let entries_balance: i64 = entries.iter().map(|e| e.balance_delta).sum();
        let entries_held: i64 = entries.iter().map(|e| e.held_delta).sum();
        if entries_balance != wallet.balance || entries_held != wallet.held {
            report.mismatched_wallets.push(Mismatch {
                tenant: wallet.tenant.clone(),
                balance: wallet.balance,
                entries_balance,
                held: wallet.held,
                entries_held,
            });
        }
        for row in store.query_items(&pk, EMAIL_PREFIX).await? {
            let email = EmailRow::from_item(&row);
            if email.state == super::rules::EmailState::Held {
                let held_at = email
                    .held_at
                    .or_else(|| get_n(&row, "updated_at"))
                    .unwrap_or(0);
                if now_ms - held_at > stale_after_ms {
                    report.stale_holds.push(StaleHold {
                        tenant: wallet.tenant.clone(),
                        message_id: get_s(&row, "message_id").unwrap_or_default(),
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
                    let pk = format!("MSG#{}#{}", e.event_source, e.event_id);
                    let x = store.get_item(&pk, MESSAGE_SK).await?.is_some();
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
