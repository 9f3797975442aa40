//! The wallet's rows and entries as reads ([`entries`], [`rows`], one email's or
//! payment's row, a payment's index item and tenant), and how a query's items are read as rows
//! (`rows_of`, which says which item is unreadable; autopay's attempts and journal use it too).

use super::{unreadable, LedgerError};
use crate::balance::items::{
    email_sk, payment_index_key, payment_sk, row_entries, wallet_pk, EMAIL_PREFIX, ENTRY_PREFIX,
    PAYMENT_PREFIX,
};
use crate::balance::model::{EmailRow, Entry, PaymentIndex, PaymentRow, Wallet};
use crate::tenant::TenantId;
use inbox_core::store::attr::get_s;
use inbox_core::store::{Item, ItemStore, StoreError};

/// A wallet's entries, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entries {
    pub entries: Vec<Entry>,
    /// Entry items (or email rows' lists of entries) that could not be read (missing
    /// attributes), left out of `entries`.
    pub unreadable: usize,
}

impl Entries {
    /// Every entry item, readable or not.
    pub fn total(&self) -> usize {
        self.entries.len() + self.unreadable
    }
}

/// A wallet's per-email and per-payment rows, in key order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rows {
    pub emails: Vec<EmailRow>,
    pub payments: Vec<PaymentRow>,
}

/// The wallet's entries, oldest first (by time, then id: the order of the `ENTRY#` keys):
/// the entry items (payments', and emails' written before rows kept their entries) and the
/// entries the email rows keep.
pub async fn entries<S: ItemStore>(store: &S, wallet: &Wallet) -> Result<Entries, StoreError> {
    let pk = wallet_pk(&wallet.tenant);
    let items = store.query_items(&pk, ENTRY_PREFIX).await?;
    let mut entries: Vec<Entry> = items
        .iter()
        .filter_map(|i| Entry::from_item(i, wallet.currency))
        .collect();
    let mut unreadable = items.len() - entries.len();
    for row in store.query_items(&pk, EMAIL_PREFIX).await? {
        let subject = get_s(&row, "message_id").unwrap_or_default();
        match row_entries(&row) {
            Ok(kept) => entries.extend(
                kept.iter()
                    .map(|e| Entry::of_row(e, &wallet.tenant, subject, wallet.currency)),
            ),
            Err(_) => unreadable += 1,
        }
    }
    entries.sort_by(|a, b| (a.at.max(0), &a.id).cmp(&(b.at.max(0), &b.id)));
    Ok(Entries {
        unreadable,
        entries,
    })
}

/// The wallet's email rows.
pub async fn email_rows<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Vec<EmailRow>, LedgerError> {
    let items = store.query_items(&wallet_pk(tenant), EMAIL_PREFIX).await?;
    rows_of(&items, tenant, EmailRow::from_item)
}

/// The wallet's email and payment rows.
pub async fn rows<S: ItemStore>(store: &S, wallet: &Wallet) -> Result<Rows, LedgerError> {
    let items = store
        .query_items(&wallet_pk(&wallet.tenant), PAYMENT_PREFIX)
        .await?;
    Ok(Rows {
        emails: email_rows(store, &wallet.tenant).await?,
        payments: rows_of(&items, &wallet.tenant, PaymentRow::from_item)?,
    })
}

/// One email's row, if any event reached it.
pub async fn email_row<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
    message_id: &str,
) -> Result<Option<EmailRow>, LedgerError> {
    let sk = email_sk(message_id);
    match store.get_item(&wallet_pk(tenant), &sk).await? {
        Some(item) => EmailRow::from_item(&item)
            .map(Some)
            .map_err(unreadable(&format!("row {sk} of tenant {tenant:?}"))),
        None => Ok(None),
    }
}

/// One payment's row, if any event reached it.
pub async fn payment_row<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
    payment_key: &str,
) -> Result<Option<PaymentRow>, LedgerError> {
    let sk = payment_sk(payment_key);
    match store.get_item(&wallet_pk(tenant), &sk).await? {
        Some(item) => PaymentRow::from_item(&item)
            .map(Some)
            .map_err(unreadable(&format!("row {sk} of tenant {tenant:?}"))),
        None => Ok(None),
    }
}

/// A payment's index item: its tenant once an event with a tenant was processed, or the
/// refunds reported before that.
pub async fn payment_index<S: ItemStore>(
    store: &S,
    payment_key: &str,
) -> Result<Option<PaymentIndex>, LedgerError> {
    let (pk, sk) = payment_index_key(payment_key);
    match store.get_item(&pk, sk).await? {
        Some(item) => PaymentIndex::from_item(&item)
            .map(Some)
            .map_err(unreadable(&format!(
                "the index item of payment {payment_key:?}"
            ))),
        None => Ok(None),
    }
}

/// The tenant a payment was credited to, once an event with a tenant was processed.
pub async fn payment_tenant<S: ItemStore>(
    store: &S,
    payment_key: &str,
) -> Result<Option<TenantId>, LedgerError> {
    Ok(payment_index(store, payment_key)
        .await?
        .and_then(|i| i.tenant))
}

/// Reads every item as a row, or says which one is unreadable.
pub(crate) fn rows_of<T>(
    items: &[Item],
    tenant: &TenantId,
    read: impl Fn(&Item) -> Result<T, String>,
) -> Result<Vec<T>, LedgerError> {
    items
        .iter()
        .map(|i| {
            read(i).map_err(|reason| {
                let sk = get_s(i, "sk").unwrap_or_default();
                LedgerError::Unreadable(format!(
                    "row {sk} of tenant {tenant:?} is unreadable: {reason}"
                ))
            })
        })
        .collect()
}
