//! Autopay's storage, for the operator's [`crate::Ledger`] and the handler: reads (a wallet's
//! autopay settings, its attempts, the journal of its changes) and [`set_autopay`], the operator's change (`inboxctl wallet
//! autopay …`): ONE transaction of the settings item at the version read and its journal entry,
//! as destinations' changes are journaled in the outbox.

use crate::autopay::handler::threshold_writes;
use crate::autopay::items::{
    attempt_sk, method_index_key, AutopayLog, MethodIndex, ATTEMPT_PREFIX, AUTOPAY_LOG_PREFIX,
    AUTOPAY_SK,
};
use crate::autopay::{Attempt, Autopay, AutopayStatus, TopUpRule};
use crate::balance::items::wallet_pk;
use crate::balance::ledger::{self, rows_of, unreadable, LedgerError};
use crate::balance::model::Wallet;
use crate::balance::views::WalletViews;
use crate::money::Currency;
use crate::money::Money;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::metrics::Metric;
use inbox_core::store::Effect;
use inbox_core::store::{Applied, Item, ItemStore, ItemWriter};

/// Why an autopay change was not made.
#[derive(Debug, thiserror::Error)]
pub enum AutopayError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("no wallet for tenant {0:?}; create it first (inboxctl wallet create)")]
    NoWallet(String),
    /// The change itself refused, or the result does not fit the wallet.
    #[error("{0}")]
    Invalid(String),
    #[error("the autopay of tenant {0:?} changed meanwhile; try again")]
    Conflict(String),
}

impl From<inbox_core::store::StoreError> for AutopayError {
    fn from(e: inbox_core::store::StoreError) -> Self {
        Self::Ledger(LedgerError::Store(e))
    }
}

/// Why autopay's threshold decision ([`threshold`]) was not made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ThresholdError {
    /// The settings could not be read (a store error, or an unreadable item).
    #[error(transparent)]
    Read(#[from] LedgerError),
    /// The decision's writes cannot be made (its event cannot be written, the month's count would
    /// overflow): the reason.
    #[error("{0}")]
    Writes(String),
}

/// Every amount of the settings is in `currency` (the wallet's).
fn check_currency(a: &Autopay, currency: Currency) -> Result<(), String> {
    let mut amounts = Vec::new();
    match a.top_up {
        Some(TopUpRule::ToTarget { threshold, target }) => amounts.extend([threshold, target]),
        Some(TopUpRule::Fixed { threshold, amount }) => amounts.extend([threshold, amount]),
        None => {}
    }
    amounts.extend(a.recurring.iter().map(|r| r.amount));
    amounts.extend(a.cap.iter().map(|c| c.cap()));
    match amounts.iter().find(|m| m.currency() != currency) {
        Some(m) => Err(format!(
            "{m} is not in the wallet's currency ({})",
            currency.as_str()
        )),
        None => Ok(()),
    }
}

fn read<T>(
    item: Option<Item>,
    what: &str,
    from: impl Fn(&Item) -> Result<T, String>,
) -> Result<Option<T>, LedgerError> {
    item.map(|i| from(&i).map_err(unreadable(what))).transpose()
}

/// The wallet's autopay settings, if anything set them.
pub async fn autopay<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Option<Autopay>, LedgerError> {
    let item = store.get_item(&wallet_pk(tenant), AUTOPAY_SK).await?;
    read(
        item,
        &format!("the autopay item of tenant {tenant:?}"),
        Autopay::from_item,
    )
}

/// One autopay attempt of the wallet.
pub async fn attempt<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
    id: &str,
) -> Result<Option<Attempt>, LedgerError> {
    let sk = attempt_sk(id);
    let item = store.get_item(&wallet_pk(tenant), &sk).await?;
    read(
        item,
        &format!("attempt {sk} of tenant {tenant:?}"),
        Attempt::from_item,
    )
}

/// Every autopay attempt of the wallet, in id order.
pub async fn attempts<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Vec<Attempt>, LedgerError> {
    let items = store
        .query_items(&wallet_pk(tenant), ATTEMPT_PREFIX)
        .await?;
    rows_of(&items, tenant, Attempt::from_item)
}

/// The journal of the wallet's autopay changes, oldest first.
pub async fn autopay_journal<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Vec<AutopayLog>, LedgerError> {
    let items = store
        .query_items(&wallet_pk(tenant), AUTOPAY_LOG_PREFIX)
        .await?;
    rows_of(&items, tenant, AutopayLog::from_item)
}

/// A payment method's index item (its tenant, whether it was detached).
pub async fn method_index<S: ItemStore>(
    store: &S,
    payment_method: &str,
) -> Result<Option<MethodIndex>, LedgerError> {
    let (pk, sk) = method_index_key(payment_method);
    let item = store.get_item(&pk, sk).await?;
    read(
        item,
        &format!("the index item of payment method {payment_method:?}"),
        MethodIndex::from_item,
    )
}

/// Changes the wallet's autopay as `actor` at `now`: `change` edits the settings (new ones if
/// none are stored) and says what it did, for the journal, or refuses. The result must be in
/// the wallet's currency; it is written with its journal entry in one transaction, if nobody
/// changed it meanwhile ([`AutopayError::Conflict`] otherwise: nothing written). A change
/// that makes autopay active again does not clear an open attempt: one wallet, one attempt.
pub async fn set_autopay<S: ItemStore + ItemWriter>(
    store: &S,
    tenant: &TenantId,
    actor: &str,
    action: &str,
    now: Millis,
    change: impl FnOnce(&mut Autopay) -> Result<String, String>,
) -> Result<Autopay, AutopayError> {
    let Some(wallet) = ledger::wallet(store, tenant).await? else {
        return Err(AutopayError::NoWallet(tenant.to_string()));
    };
    let stored = autopay(store, tenant).await?;
    let mut next = stored.unwrap_or_else(|| Autopay::new(tenant.clone(), now));
    let detail = change(&mut next).map_err(AutopayError::Invalid)?;
    check_currency(&next, wallet.currency).map_err(AutopayError::Invalid)?;
    next.updated_at = now;
    let log = AutopayLog {
        at: now,
        actor: actor.to_owned(),
        action: action.to_owned(),
        detail,
    };
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let effects = vec![next.replace(), log.create(tenant, &unique)];
    match store.commit(effects).await? {
        Applied::Done => {
            next.version = Some(next.version.map_or(0, |v| v + 1));
            Ok(next)
        }
        _ => Err(AutopayError::Conflict(tenant.to_string())),
    }
}

/// Autopay's writes for a hold or debit that leaves `wallet` at `available`: decided on the
/// viewed AUTOPAY item for a wallet of K > 1 shards (read strongly and kept when none is
/// fresh), and decided again on the item read strongly whenever that decision writes (the
/// write is conditioned on the version read). At K = 1 the item is read strongly, as always.
pub(crate) async fn threshold<S: ItemStore>(
    store: &S,
    wallet: &Wallet,
    views: &WalletViews,
    available: Money,
    now_ms: i64,
    origin: [&str; 2],
) -> Result<(Vec<Effect>, Vec<Metric>), ThresholdError> {
    let tenant = &wallet.tenant;
    if wallet.shard_count() > 1 {
        if let Some(viewed) = views.autopay(tenant) {
            match threshold_writes(viewed, tenant, available, now_ms, origin) {
                Ok((effects, metrics)) if effects.is_empty() => return Ok((effects, metrics)),
                // It writes (or failed): decided again on the item as stored.
                _ => {}
            }
        }
    }
    let autopay = autopay(store, tenant).await?;
    if wallet.shard_count() > 1 {
        views.keep_autopay(tenant, &autopay);
    }
    threshold_writes(autopay, tenant, available, now_ms, origin).map_err(ThresholdError::Writes)
}

/// Pauses autopay (the operator's `pause`): no new attempt is made; the open one, if any, goes on.
pub fn pause(a: &mut Autopay) -> Result<String, String> {
    a.status = AutopayStatus::Paused;
    Ok("paused".into())
}

/// Resumes autopay (the operator's `resume`, also after a suspension).
pub fn resume(a: &mut Autopay) -> Result<String, String> {
    let was = match &a.status {
        AutopayStatus::Suspended { reason } => format!("suspended ({reason})"),
        AutopayStatus::Paused => "paused".into(),
        AutopayStatus::Active => "active".into(),
    };
    a.status = AutopayStatus::Active;
    Ok(format!("resumed (was {was})"))
}
