//! The operator's facade: [`Ledger`], the one type operators, reports and tools read and change
//! the wallets through, and what its methods answer. Each method delegates to the storage of the
//! slice it belongs to, where its rules are written: [`crate::balance::ledger`] (creating and
//! reading a wallet, its rows, limits and shards, the registry), [`crate::autopay::ledger`]
//! (autopay's settings, attempts and journal) and [`crate::payments::ledger`] (the unmatched
//! payments, listed and bound); and [`reads`]: the partition keys each reader of the ledger reads
//! (its role's read list).

pub mod reads;

use crate::autopay::items::{AutopayLog, MethodIndex};
use crate::autopay::{self, Attempt, Autopay};
use crate::balance::items::LimitsLog;
use crate::balance::ledger as balance;
use crate::balance::model::{EmailRow, PaymentIndex, PaymentRow, Wallet};
use crate::payments::ledger as payments;
use crate::payments::unmatched::UnmatchedPayment;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::{DueIndex, Item, ItemStore, ItemWriter, StoreError};

pub use crate::autopay::ledger::{pause, resume, AutopayError};
pub use crate::balance::ledger::{
    CreateOutcome, Entries, LedgerError, LimitsChange, LimitsSet, Reindexed, Rows, ShardsError,
    ShardsSet, Tenants,
};
pub use crate::payments::ledger::{BindError, Bound, DismissError, LIST_LIMIT};

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

    // The balance: `balance/ledger.rs` and its files.

    /// Registers the tenant, then stores its new wallet unless it has one (never overwritten):
    /// [`balance::create`].
    pub async fn create(&self, wallet: &Wallet) -> Result<CreateOutcome, StoreError>
    where
        S: ItemWriter,
    {
        balance::create(self.store, wallet).await
    }

    /// The wallet of `tenant`, if it has one: for a wallet of K > 1 shards their sums as of one
    /// moment as far as refills go (K + 1 reads: see [`Ledger::wallet_and_item`]).
    pub async fn wallet(&self, tenant: &TenantId) -> Result<Option<Wallet>, LedgerError> {
        balance::wallet(self.store, tenant).await
    }

    /// The wallet of `tenant` (its shards summed, settled) and its wallet item (shard 0) as
    /// stored: [`balance::wallet_and_item`].
    pub async fn wallet_and_item(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<(Wallet, Item)>, LedgerError> {
        balance::wallet_and_item(self.store, tenant).await
    }

    /// The wallet as its K shards read at once (K reads), what the movements decide on:
    /// [`balance::read_wallet`].
    pub async fn wallet_as_read(&self, tenant: &TenantId) -> Result<Option<Wallet>, LedgerError> {
        Ok(balance::read_wallet(self.store, tenant)
            .await?
            .map(|(w, _)| w))
    }

    /// The registry alone (no scan): [`balance::registry`].
    pub async fn registry(&self) -> Result<(bool, Vec<TenantId>), StoreError> {
        balance::registry(self.store).await
    }

    /// The tenants with a wallet (the registry, and a scan until it is complete):
    /// [`balance::tenants`].
    pub async fn tenants(&self) -> Result<Tenants, StoreError> {
        balance::tenants(self.store).await
    }

    /// Registers every wallet and marks the registry complete: [`balance::reindex`].
    pub async fn reindex(&self, now_ms: i64) -> Result<Reindexed, StoreError>
    where
        S: ItemWriter,
    {
        balance::reindex(self.store, now_ms).await
    }

    /// Sets the wallet's limits as `actor` and journals it; `None` if the tenant has no wallet:
    /// [`balance::set_limits`].
    pub async fn set_limits(
        &self,
        tenant: &TenantId,
        actor: &str,
        now_ms: i64,
        change: LimitsChange,
    ) -> Result<Option<LimitsSet>, LedgerError>
    where
        S: ItemWriter,
    {
        balance::set_limits(self.store, tenant, actor, now_ms, change).await
    }

    /// The wallet's limits journal, oldest first.
    pub async fn limits_log(&self, tenant: &TenantId) -> Result<Vec<LimitsLog>, LedgerError> {
        balance::limits_log(self.store, tenant).await
    }

    /// Raises the wallet's count of shards to `k`: [`balance::set_shards`].
    pub async fn set_shards(&self, tenant: &TenantId, k: u32) -> Result<ShardsSet, ShardsError>
    where
        S: ItemWriter,
    {
        balance::set_shards(self.store, tenant, k).await
    }

    /// The wallet's entries, oldest first: [`balance::entries`].
    pub async fn entries(&self, wallet: &Wallet) -> Result<Entries, StoreError> {
        balance::entries(self.store, wallet).await
    }

    /// The wallet's email rows.
    pub async fn email_rows(&self, tenant: &TenantId) -> Result<Vec<EmailRow>, LedgerError> {
        balance::email_rows(self.store, tenant).await
    }

    /// The wallet's email and payment rows.
    pub async fn rows(&self, wallet: &Wallet) -> Result<Rows, LedgerError> {
        balance::rows(self.store, wallet).await
    }

    /// One email's row, if any event reached it.
    pub async fn email_row(
        &self,
        tenant: &TenantId,
        message_id: &str,
    ) -> Result<Option<EmailRow>, LedgerError> {
        balance::email_row(self.store, tenant, message_id).await
    }

    /// One payment's row, if any event reached it.
    pub async fn payment_row(
        &self,
        tenant: &TenantId,
        payment_key: &str,
    ) -> Result<Option<PaymentRow>, LedgerError> {
        balance::payment_row(self.store, tenant, payment_key).await
    }

    /// A payment's index item: [`balance::payment_index`].
    pub async fn payment_index(
        &self,
        payment_key: &str,
    ) -> Result<Option<PaymentIndex>, LedgerError> {
        balance::payment_index(self.store, payment_key).await
    }

    /// The tenant a payment was credited to, once an event with a tenant was processed.
    pub async fn payment_tenant(&self, payment_key: &str) -> Result<Option<TenantId>, LedgerError> {
        balance::payment_tenant(self.store, payment_key).await
    }

    // Autopay: `autopay/ledger.rs`.

    /// The wallet's autopay settings, if anything set them.
    pub async fn autopay(&self, tenant: &TenantId) -> Result<Option<Autopay>, LedgerError> {
        autopay::ledger::autopay(self.store, tenant).await
    }

    /// One autopay attempt of the wallet.
    pub async fn attempt(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<Attempt>, LedgerError> {
        autopay::ledger::attempt(self.store, tenant, id).await
    }

    /// Every autopay attempt of the wallet, in id order.
    pub async fn attempts(&self, tenant: &TenantId) -> Result<Vec<Attempt>, LedgerError> {
        autopay::ledger::attempts(self.store, tenant).await
    }

    /// The journal of the wallet's autopay changes, oldest first.
    pub async fn autopay_journal(&self, tenant: &TenantId) -> Result<Vec<AutopayLog>, LedgerError> {
        autopay::ledger::autopay_journal(self.store, tenant).await
    }

    /// A payment method's index item (its tenant, whether it was detached).
    pub async fn method_index(
        &self,
        payment_method: &str,
    ) -> Result<Option<MethodIndex>, LedgerError> {
        autopay::ledger::method_index(self.store, payment_method).await
    }

    /// Changes the wallet's autopay as `actor` at `now` (`change` edits the settings and says
    /// what it did, or refuses), journaled, at the version read: [`autopay::ledger::set_autopay`].
    pub async fn set_autopay(
        &self,
        tenant: &TenantId,
        actor: &str,
        action: &str,
        now: Millis,
        change: impl FnOnce(&mut Autopay) -> Result<String, String>,
    ) -> Result<Autopay, AutopayError>
    where
        S: ItemWriter,
    {
        autopay::ledger::set_autopay(self.store, tenant, actor, action, now, change).await
    }

    // The unmatched payments: `payments/ledger.rs`.

    /// A payment's unmatched item, if it was ever kept as unmatched.
    pub async fn unmatched_payment(
        &self,
        payment_key: &str,
    ) -> Result<Option<UnmatchedPayment>, LedgerError> {
        payments::unmatched_payment(self.store, payment_key).await
    }

    /// The open unmatched payments first seen at or before `seen_by` (ms), oldest first, at most
    /// [`LIST_LIMIT`]: [`payments::unmatched`].
    pub async fn unmatched(&self, seen_by: i64) -> Result<Vec<UnmatchedPayment>, LedgerError>
    where
        S: DueIndex,
    {
        payments::unmatched(self.store, seen_by).await
    }

    /// The dismissed unmatched payments, oldest dismissal first, at most [`LIST_LIMIT`].
    pub async fn dismissed(&self, by: i64) -> Result<Vec<UnmatchedPayment>, LedgerError>
    where
        S: DueIndex,
    {
        payments::dismissed(self.store, by).await
    }

    /// Dismisses an open unmatched payment as not the product's, with `reason`:
    /// [`payments::dismiss`].
    pub async fn dismiss(
        &self,
        payment_key: &str,
        operator: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<UnmatchedPayment, DismissError>
    where
        S: ItemWriter,
    {
        payments::dismiss(self.store, payment_key, operator, reason, now_ms).await
    }

    /// Binds an open (or dismissed) unmatched payment to `tenant`; the caller then replays
    /// [`Bound::messages`]: [`payments::bind`].
    pub async fn bind(
        &self,
        payment_key: &str,
        tenant: &TenantId,
        operator: &str,
        now_ms: i64,
    ) -> Result<Bound, BindError>
    where
        S: ItemWriter,
    {
        payments::bind(self.store, payment_key, tenant, operator, now_ms).await
    }
}
