//! [`Ledger`]: the wallets as operators, reports and the handler read them, and the one write
//! outside event processing (creating a wallet), over the core's item store.

use crate::items::{
    email_sk, indexed_tenant, payment_index_key, payment_sk, wallet_pk, EMAIL_PREFIX, ENTRY_PREFIX,
    KIND_WALLET, PAYMENT_PREFIX, WALLET_SK,
};
use crate::model::{EmailRow, Entry, PaymentRow, Wallet};
use crate::reconcile::{reconcile, ReconcileReport};
use inbox_core::store::{Applied, Effect, ItemStore, ItemWriter, StoreError};

/// What [`Ledger::create`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The wallet is stored.
    Created,
    /// The tenant already had a wallet; it was left unchanged.
    AlreadyExists,
}

/// Why a wallet could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The wallet item exists but lacks its tenant or a valid currency.
    #[error("the wallet item of tenant {0:?} is unreadable (no tenant or currency attribute)")]
    Unreadable(String),
}

/// A wallet's entries, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entries {
    pub entries: Vec<Entry>,
    /// Entry items that could not be read (missing attributes), left out of `entries`.
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

/// The wallet ledger on a store (a borrowed view: build one wherever a store is at hand).
#[derive(Debug)]
pub struct Ledger<'s, S> {
    store: &'s S,
}

impl<S> Clone for Ledger<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Ledger<'_, S> {}

impl<'s, S: ItemStore> Ledger<'s, S> {
    pub fn new(store: &'s S) -> Self {
        Self { store }
    }

    pub fn store(&self) -> &'s S {
        self.store
    }

    /// Stores a new wallet unless the tenant has one: one conditional write that never
    /// overwrites (an existing wallet's balance is the sum of its entries).
    pub async fn create(&self, wallet: &Wallet) -> Result<CreateOutcome, StoreError>
    where
        S: ItemWriter,
    {
        match self
            .store
            .commit(vec![Effect::Create(wallet.to_item())])
            .await?
        {
            Applied::Done => Ok(CreateOutcome::Created),
            Applied::EffectConflict | Applied::MessageConflict => Ok(CreateOutcome::AlreadyExists),
        }
    }

    /// The wallet of `tenant`, if it has one.
    pub async fn wallet(&self, tenant: &str) -> Result<Option<Wallet>, LedgerError> {
        match self.store.get_item(&wallet_pk(tenant), WALLET_SK).await? {
            Some(item) => Wallet::from_item(&item)
                .map(Some)
                .ok_or_else(|| LedgerError::Unreadable(tenant.to_owned())),
            None => Ok(None),
        }
    }

    /// Every readable wallet, by tenant.
    pub async fn wallets(&self) -> Result<Vec<Wallet>, StoreError> {
        let mut wallets: Vec<Wallet> = self
            .store
            .items_of_kind(KIND_WALLET)
            .await?
            .iter()
            .filter_map(Wallet::from_item)
            .collect();
        wallets.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        Ok(wallets)
    }

    /// The wallet's entries, oldest first.
    pub async fn entries(&self, wallet: &Wallet) -> Result<Entries, StoreError> {
        let items = self
            .store
            .query_items(&wallet_pk(&wallet.tenant), ENTRY_PREFIX)
            .await?;
        let entries: Vec<Entry> = items
            .iter()
            .filter_map(|i| Entry::from_item(i, wallet.currency))
            .collect();
        Ok(Entries {
            unreadable: items.len() - entries.len(),
            entries,
        })
    }

    /// The wallet's email rows.
    pub async fn email_rows(&self, tenant: &str) -> Result<Vec<EmailRow>, StoreError> {
        Ok(self
            .store
            .query_items(&wallet_pk(tenant), EMAIL_PREFIX)
            .await?
            .iter()
            .map(EmailRow::from_item)
            .collect())
    }

    /// The wallet's email and payment rows.
    pub async fn rows(&self, wallet: &Wallet) -> Result<Rows, StoreError> {
        let payments = self
            .store
            .query_items(&wallet_pk(&wallet.tenant), PAYMENT_PREFIX)
            .await?
            .iter()
            .map(PaymentRow::from_item)
            .collect();
        Ok(Rows {
            emails: self.email_rows(&wallet.tenant).await?,
            payments,
        })
    }

    /// One email's row, if any event reached it.
    pub async fn email_row(
        &self,
        tenant: &str,
        message_id: &str,
    ) -> Result<Option<EmailRow>, StoreError> {
        let item = self
            .store
            .get_item(&wallet_pk(tenant), &email_sk(message_id))
            .await?;
        Ok(item.as_ref().map(EmailRow::from_item))
    }

    /// One payment's row, if any event reached it.
    pub async fn payment_row(
        &self,
        tenant: &str,
        payment_key: &str,
    ) -> Result<Option<PaymentRow>, StoreError> {
        let item = self
            .store
            .get_item(&wallet_pk(tenant), &payment_sk(payment_key))
            .await?;
        Ok(item.as_ref().map(PaymentRow::from_item))
    }

    /// The tenant a payment was credited to, once its payment event was processed.
    pub async fn payment_tenant(&self, payment_key: &str) -> Result<Option<String>, StoreError> {
        let (pk, sk) = payment_index_key(payment_key);
        let item = self.store.get_item(&pk, sk).await?;
        Ok(item.as_ref().map(indexed_tenant))
    }

    /// Checks every wallet (see [`crate::reconcile`]).
    pub async fn reconcile(
        &self,
        now_ms: i64,
        stale_after_ms: i64,
    ) -> Result<ReconcileReport, StoreError> {
        reconcile(self.store, now_ms, stale_after_ms).await
    }
}
