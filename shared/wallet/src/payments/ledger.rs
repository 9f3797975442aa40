//! The unmatched payments' storage, as operators see them through [`crate::Ledger`]
//! ([`crate::payments::unmatched`]): listed through the open index (one `Query` of shard
//! `UNMATCHED`, then each item read by key, since the index lags and projects little), and bound
//! to a tenant ([`bind`]): the payment's index then names the
//! tenant, and the messages that reported the payment, replayed through the normal pipeline,
//! credit it as if it had matched at once.

use crate::balance::ledger::{payment_index, unreadable, wallet, LedgerError};
use crate::balance::model::PaymentIndex;
use crate::payments::unmatched::items::{unmatched_key, DISMISSED_SHARD, UNMATCHED_SHARD};
use crate::payments::unmatched::{Resolution, UnmatchedPayment, MAX_REASON_CHARS};
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::domain::MessageKey;
use inbox_core::store::attr::get_s;
use inbox_core::store::{Applied, DueIndex, ItemStore, ItemWriter, StoreError};

/// How often [`bind`] reads again after a concurrent change before it gives up.
const BIND_TRIES: usize = 3;

/// The most open unmatched payments one listing reads.
pub const LIST_LIMIT: usize = 1000;

/// Why a payment was not bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error(
        "no wallet for tenant {0:?}: create it first (inboxctl wallet create), then bind the payment"
    )]
    NoWallet(TenantId),
    #[error("{}", bound_twice(.payment, .tenant, .by, .asked))]
    AlreadyBound {
        payment: String,
        tenant: TenantId,
        by: String,
        asked: TenantId,
    },
    #[error(
        "payment {payment} was matched to tenant {tenant:?} by its event {by_event}: nothing to bind"
    )]
    Matched {
        payment: String,
        tenant: TenantId,
        by_event: String,
    },
    #[error("payment {payment} belongs to tenant {tenant:?} already (its payment index names it): nothing to bind")]
    Belongs { payment: String, tenant: TenantId },
    #[error("payment {0} is not an unmatched payment (inboxctl wallet unmatched lists them)")]
    NotUnmatched(String),
    #[error(
        "payment {payment} is in {currency}, the wallet of {tenant:?} in {wallet}: refused (it could never be credited there)"
    )]
    Currency {
        payment: String,
        currency: String,
        tenant: TenantId,
        wallet: String,
    },
    #[error("payment {0} changed during every try; try again")]
    Busy(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

fn bound_twice(payment: &str, tenant: &TenantId, by: &str, asked: &TenantId) -> String {
    if tenant == asked {
        format!("payment {payment} is already bound to tenant {tenant:?} (by {by}): binding twice is refused")
    } else {
        format!(
            "payment {payment} is bound to tenant {tenant:?} (by {by}), not to {asked:?}: refused"
        )
    }
}

impl From<StoreError> for BindError {
    fn from(e: StoreError) -> Self {
        Self::Ledger(LedgerError::Store(e))
    }
}

/// Why a payment was not dismissed.
#[derive(Debug, thiserror::Error)]
pub enum DismissError {
    #[error(
        "a dismissal needs a reason (--reason): what the payment is, so the next operator knows"
    )]
    NoReason,
    #[error("the reason is {0} characters: at most {MAX_REASON_CHARS}")]
    LongReason(usize),
    #[error("payment {0} is not an unmatched payment (inboxctl wallet unmatched lists them)")]
    NotUnmatched(String),
    #[error("payment {payment} was dismissed already by {by} ({reason:?}): nothing to do")]
    AlreadyDismissed {
        payment: String,
        by: String,
        reason: String,
    },
    #[error("payment {payment} belongs to tenant {tenant:?} ({how}): it cannot be dismissed")]
    Resolved {
        payment: String,
        tenant: TenantId,
        how: String,
    },
    #[error("payment {0} changed during every try; try again")]
    Busy(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl From<StoreError> for DismissError {
    fn from(e: StoreError) -> Self {
        Self::Ledger(LedgerError::Store(e))
    }
}

/// What [`bind`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The payment as now stored (bound).
    pub payment: UnmatchedPayment,
    /// The messages to replay (they credit the tenant now).
    pub messages: Vec<MessageKey>,
    /// Refunds reported before the payment was known (cumulative), settled by its credit.
    pub refund_total: i64,
}

/// A payment's unmatched item, if it was ever kept as unmatched.
pub async fn unmatched_payment<S: ItemStore>(
    store: &S,
    payment_key: &str,
) -> Result<Option<UnmatchedPayment>, LedgerError> {
    let (pk, sk) = unmatched_key(payment_key);
    match store.get_item(&pk, sk).await? {
        Some(item) => UnmatchedPayment::from_item(&item)
            .map(Some)
            .map_err(unreadable(&format!(
                "the unmatched item of payment {payment_key:?}"
            ))),
        None => Ok(None),
    }
}

/// The open unmatched payments first seen at or before `seen_by` (ms), oldest first, at most
/// [`LIST_LIMIT`]: one `Query` of the open index, then each item read (the index lags: what
/// is no longer open is left out).
pub async fn unmatched<S: ItemStore + DueIndex>(
    store: &S,
    seen_by: i64,
) -> Result<Vec<UnmatchedPayment>, LedgerError> {
    let listed = store
        .due_items(UNMATCHED_SHARD, Millis::new(seen_by), LIST_LIMIT)
        .await?;
    let mut open = Vec::with_capacity(listed.len());
    for item in &listed {
        let Some(pk) = get_s(item, "pk") else {
            continue;
        };
        let Some(key) = pk.strip_prefix("PAYMENT#") else {
            continue;
        };
        if let Some(p) = unmatched_payment(store, key).await? {
            if p.is_open() {
                open.push(p);
            }
        }
    }
    open.sort_by_key(|p| p.first_seen);
    Ok(open)
}

/// The dismissed unmatched payments, oldest dismissal first, at most [`LIST_LIMIT`] (one
/// `Query` of their shard, then each item read).
pub async fn dismissed<S: ItemStore + DueIndex>(
    store: &S,
    by: i64,
) -> Result<Vec<UnmatchedPayment>, LedgerError> {
    let listed = store
        .due_items(DISMISSED_SHARD, Millis::new(by), LIST_LIMIT)
        .await?;
    let mut found = Vec::with_capacity(listed.len());
    for item in &listed {
        let Some(key) = get_s(item, "pk").and_then(|pk| pk.strip_prefix("PAYMENT#")) else {
            continue;
        };
        if let Some(p) = unmatched_payment(store, key).await? {
            if matches!(p.resolution, Resolution::Dismissed { .. }) {
                found.push(p);
            }
        }
    }
    Ok(found)
}

/// Dismisses an open unmatched payment as not the product's, as `operator` at `now_ms`, with
/// `reason` (trimmed, 1 to [`MAX_REASON_CHARS`] characters): one conditional write of its
/// item (it leaves the open list and the alarm's count, keeps its body and the messages that
/// reported it, and can still be bound later). Refused with the reason: no reason, a payment
/// never unmatched, dismissed already, or matched or bound to a tenant.
pub async fn dismiss<S: ItemStore + ItemWriter>(
    store: &S,
    payment_key: &str,
    operator: &str,
    reason: &str,
    now_ms: i64,
) -> Result<UnmatchedPayment, DismissError> {
    let reason = reason.trim();
    match reason.chars().count() {
        0 => return Err(DismissError::NoReason),
        n if n > MAX_REASON_CHARS => return Err(DismissError::LongReason(n)),
        _ => {}
    }
    for _ in 0..BIND_TRIES {
        let Some(mut record) = unmatched_payment(store, payment_key).await? else {
            return Err(DismissError::NotUnmatched(payment_key.to_owned()));
        };
        match &record.resolution {
            Resolution::Open => {}
            Resolution::Dismissed { by, reason, .. } => {
                return Err(DismissError::AlreadyDismissed {
                    payment: payment_key.to_owned(),
                    by: by.clone(),
                    reason: reason.clone(),
                })
            }
            Resolution::Bound { tenant, by, .. } => {
                return Err(DismissError::Resolved {
                    payment: payment_key.to_owned(),
                    tenant: tenant.clone(),
                    how: format!("bound by {by}"),
                })
            }
            Resolution::Matched {
                tenant, by_event, ..
            } => {
                return Err(DismissError::Resolved {
                    payment: payment_key.to_owned(),
                    tenant: tenant.clone(),
                    how: format!("matched by its event {by_event}"),
                })
            }
        }
        record.resolution = Resolution::Dismissed {
            at: now_ms,
            by: operator.to_owned(),
            reason: reason.to_owned(),
        };
        match store.commit(vec![record.replace(None)]).await? {
            Applied::Done => {
                return Ok(UnmatchedPayment {
                    version: record.version.map(|v| v + 1).or(Some(0)),
                    ..record
                })
            }
            Applied::EffectConflict | Applied::MessageConflict => continue,
        }
    }
    Err(DismissError::Busy(payment_key.to_owned()))
}

/// Binds an open (or dismissed) unmatched payment to `tenant`, as `operator` at `now_ms`, in one conditional
/// transaction: the payment's index names the tenant (keeping what it recorded: refund
/// totals, a method parked for autopay) and the unmatched item is marked bound. The caller
/// then replays [`Bound::messages`] through the pipeline: they credit the tenant once, the
/// refunds already waiting with it. Refused with the reason: no wallet, another currency, a
/// payment already bound (to this tenant or another), matched, known, or never unmatched.
pub async fn bind<S: ItemStore + ItemWriter>(
    store: &S,
    payment_key: &str,
    tenant: &TenantId,
    operator: &str,
    now_ms: i64,
) -> Result<Bound, BindError> {
    let Some(wallet) = wallet(store, tenant).await? else {
        return Err(BindError::NoWallet(tenant.clone()));
    };
    for _ in 0..BIND_TRIES {
        let index = payment_index(store, payment_key).await?;
        let record = unmatched_payment(store, payment_key).await?;
        let known = index.as_ref().and_then(|i| i.tenant.clone());
        let mut record = match (record, known) {
            (Some(r), _) if !r.awaits_tenant() => return Err(resolved(r, tenant)),
            (_, Some(known)) => {
                return Err(BindError::Belongs {
                    payment: payment_key.to_owned(),
                    tenant: known,
                })
            }
            (None, None) => return Err(BindError::NotUnmatched(payment_key.to_owned())),
            (Some(r), None) => r,
        };
        if let Some(currency) = record.currency.clone() {
            if currency != wallet.currency.as_str() {
                return Err(BindError::Currency {
                    payment: payment_key.to_owned(),
                    currency,
                    tenant: tenant.clone(),
                    wallet: wallet.currency.as_str().to_owned(),
                });
            }
        }
        let read = index.is_some();
        let mut named = index.unwrap_or_else(|| PaymentIndex {
            payment_key: payment_key.to_owned(),
            ..Default::default()
        });
        named.tenant = Some(tenant.clone());
        named.unmatched = false;
        record.resolution = Resolution::Bound {
            tenant: tenant.clone(),
            at: now_ms,
            by: operator.to_owned(),
        };
        let effects = vec![named.replace(read, None), record.replace(None)];
        match store.commit(effects).await? {
            Applied::Done => {
                return Ok(Bound {
                    messages: record.message_keys(),
                    refund_total: named.refund_total.get(),
                    payment: UnmatchedPayment {
                        version: record.version.map(|v| v + 1).or(Some(0)),
                        ..record
                    },
                })
            }
            Applied::EffectConflict | Applied::MessageConflict => continue,
        }
    }
    Err(BindError::Busy(payment_key.to_owned()))
}

/// The refusal for a payment that is no longer open.
fn resolved(r: UnmatchedPayment, asked: &TenantId) -> BindError {
    match r.resolution {
        Resolution::Bound { tenant, by, .. } => BindError::AlreadyBound {
            payment: r.payment_key,
            tenant,
            by,
            asked: asked.clone(),
        },
        Resolution::Matched {
            tenant, by_event, ..
        } => BindError::Matched {
            payment: r.payment_key,
            tenant,
            by_event,
        },
        Resolution::Open | Resolution::Dismissed { .. } => BindError::NotUnmatched(r.payment_key),
    }
}
