//! The pass that compares the ledger with the provider over a window: behind two small
//! capabilities, [`Provider`] (Stripe's list and retrieve: `stripe_charges::reconcile`) and
//! [`Book`] (the ledger's payment rows: [`Ledger`] here; fakes in the tests).
//!
//! 1. Every intent the provider lists as created in the window (`now − window`, so every run
//!    overlaps the last: nothing falls between two runs), kept when it carries the product's
//!    `metadata.tenant` (a list filtered here, not Stripe's search, which lags writes: "data is
//!    searchable in under 1 minute", "delayed during an outage"), is compared with the ledger's
//!    row of it ([`decide`]).
//! 2. Every payment row the ledger credited or changed in the window and the list did not name
//!    (a payment created before the window that settled in it, or one Stripe never had) is
//!    retrieved by id (strongly consistent) and compared the same way; a key that is no
//!    PaymentIntent's id (`pi_…`: a checkout without one) is counted as not checked.
//!
//! Each difference is reported with its kind ([`Kind`]), each kind a metric.

use super::{decide, Booked, Kind, Reported, Verdict};
use crate::balance::items::{wallet_pk, PAYMENT_PREFIX};
use crate::balance::model::PaymentRow;
use crate::ledger::{Ledger, LedgerError};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::metrics::Metric;
use inbox_core::store::ItemStore;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::future::Future;

/// The default window: intents created in the last 7 days (a bank debit settles within days).
pub const DEFAULT_WINDOW_SECS: i64 = 7 * 86_400;
/// What is younger than this is in flight, not a difference: a webhook Stripe sends within
/// seconds, or one it retries and the scheduled catch-up stores within its 15 minutes, 10 of
/// settling and the processing after it.
pub const DEFAULT_GRACE_SECS: i64 = 3600;
/// The most differences a report lists (all are counted).
pub const MAX_LISTED: usize = 500;

/// Why the provider gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// The provider's payments.
pub trait Provider: Send + Sync {
    /// Every intent created at or after `created_gte` (Unix seconds).
    fn list(
        &self,
        created_gte: i64,
    ) -> impl Future<Output = Result<Vec<Reported>, ProviderError>> + Send;
    /// One intent by id; `None` when the provider has no such intent.
    fn retrieve(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Reported>, ProviderError>> + Send;
    /// Requests made so far.
    fn requests(&self) -> u32;
}

/// The ledger's payments.
pub trait Book: Send + Sync {
    /// The ledger's row of payment `key`, in the wallet its index names.
    fn booked(&self, key: &str)
        -> impl Future<Output = Result<Option<Booked>, LedgerError>> + Send;
    /// Every payment row changed at or after `since_ms` that credited something.
    fn credited_since(
        &self,
        since_ms: i64,
    ) -> impl Future<Output = Result<Credited, LedgerError>> + Send;
}

/// The ledger's rows of a window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credited {
    pub rows: Vec<Booked>,
    /// Whether every wallet was read: the wallets are found through the registry alone (no
    /// scan); until it is complete (`inboxctl wallet reindex`) older wallets are not read.
    pub registry_complete: bool,
}

/// The pass's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub window_secs: i64,
    pub grace_secs: i64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            window_secs: DEFAULT_WINDOW_SECS,
            grace_secs: DEFAULT_GRACE_SECS,
        }
    }
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub kind: Kind,
    pub payment: String,
    pub tenant: Option<TenantId>,
    /// Autopay's attempt, when the intent names one.
    pub attempt: Option<String>,
    pub stripe: Option<Reported>,
    pub ledger: Option<Booked>,
}

/// What a pass found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProviderReport {
    /// The window's start (Unix seconds).
    pub created_gte: i64,
    /// Intents listed, and those of them carrying the product's metadata.
    pub listed: usize,
    pub product: usize,
    /// Ledger rows of the window the list did not name, retrieved one by one.
    pub retrieved: usize,
    /// Counted by kind (every difference, listed or not).
    pub counts: BTreeMap<Kind, usize>,
    /// The differences, at most [`MAX_LISTED`].
    pub differences: Vec<Difference>,
    /// Not differences yet (in flight), by why.
    pub waiting: BTreeMap<&'static str, usize>,
    /// Ledger rows whose key is no PaymentIntent's: not checked.
    pub unchecked: Vec<String>,
    /// Whether every wallet's rows were read (the registry is complete).
    pub registry_complete: bool,
    /// Requests made to the provider.
    pub requests: u32,
}

impl ProviderReport {
    pub fn is_clean(&self) -> bool {
        self.counts.values().all(|n| *n == 0)
    }

    fn record(&mut self, verdict: Verdict, r: Option<&Reported>, b: Option<&Booked>) {
        match verdict {
            Verdict::Same => {}
            Verdict::Wait(why) => *self.waiting.entry(why).or_insert(0) += 1,
            Verdict::Differs(kind) => {
                *self.counts.entry(kind).or_insert(0) += 1;
                if self.differences.len() < MAX_LISTED {
                    self.differences.push(Difference {
                        kind,
                        payment: r.map_or_else(
                            || b.map(|b| b.payment_key.clone()).unwrap_or_default(),
                            |r| r.id.clone(),
                        ),
                        tenant: b
                            .map(|b| b.tenant.clone())
                            .or_else(|| r.and_then(|r| r.tenant.clone())),
                        attempt: r.and_then(|r| r.attempt.clone()),
                        stripe: r.cloned(),
                        ledger: b.cloned(),
                    });
                }
            }
        }
    }

    /// One metric per kind (0 when none), for the alarms.
    pub fn metrics(&self) -> Vec<Metric> {
        Kind::ALL
            .iter()
            .map(|k| {
                let n = self.counts.get(k).copied().unwrap_or(0);
                Metric::count(
                    METRICS_NAMESPACE,
                    k.metric(),
                    i64::try_from(n).unwrap_or(i64::MAX),
                )
            })
            .collect()
    }
}

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error("Stripe: {0}")]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Compares the provider's payments with the ledger's at `now_s` (Unix seconds).
pub async fn compare<P: Provider, B: Book>(
    provider: &P,
    book: &B,
    now_s: i64,
    options: Options,
) -> Result<ProviderReport, PassError> {
    compare_after(provider, book, now_s, options, &HashSet::new()).await
}

/// [`compare`], right after a catch-up stored the events of the intents `in_flight`: the stream
/// is crediting those this moment, so an intent among them that is paid and not yet credited
/// waits for the next pass (an hour later) instead of being reported; if it is still not
/// credited then, it is.
pub async fn compare_after<P: Provider, B: Book>(
    provider: &P,
    book: &B,
    now_s: i64,
    options: Options,
    in_flight: &HashSet<String>,
) -> Result<ProviderReport, PassError> {
    let created_gte = now_s - options.window_secs;
    let listed = provider.list(created_gte).await?;
    let mut report = ProviderReport {
        created_gte,
        listed: listed.len(),
        ..ProviderReport::default()
    };
    let named: HashSet<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    for r in listed.iter().filter(|r| r.tenant.is_some()) {
        report.product += 1;
        let b = book.booked(&r.id).await?;
        let verdict = match decide(Some(r), b.as_ref(), now_s, options.grace_secs) {
            Verdict::Differs(Kind::PaidNotCredited) if in_flight.contains(&r.id) => {
                Verdict::Wait("its event was caught up moments ago")
            }
            v => v,
        };
        report.record(verdict, Some(r), b.as_ref());
    }
    let credited = book
        .credited_since(created_gte.saturating_mul(1000))
        .await?;
    report.registry_complete = credited.registry_complete;
    for b in credited.rows {
        if named.contains(b.payment_key.as_str()) {
            continue;
        }
        if !b.payment_key.starts_with("pi_") {
            report.unchecked.push(b.payment_key);
            continue;
        }
        report.retrieved += 1;
        let r = provider.retrieve(&b.payment_key).await?;
        report.record(
            decide(r.as_ref(), Some(&b), now_s, options.grace_secs),
            r.as_ref(),
            Some(&b),
        );
    }
    report.requests = provider.requests();
    Ok(report)
}

/// A payment row as the comparison reads it.
fn booked_of(tenant: &TenantId, currency: &str, row: PaymentRow) -> Booked {
    Booked {
        payment_key: row.payment_key,
        tenant: tenant.clone(),
        currency: currency.to_owned(),
        credited: row.credited.get(),
        refund_total: row.refund_total.get(),
        updated_at: row.updated_at,
    }
}

impl<S: ItemStore> Book for Ledger<'_, S> {
    /// The payment's index (its tenant), its wallet (the currency), its row: 3 reads.
    async fn booked(&self, key: &str) -> Result<Option<Booked>, LedgerError> {
        let Some(tenant) = self.payment_tenant(key).await? else {
            return Ok(None);
        };
        let Some(wallet) = self.wallet(&tenant).await? else {
            return Ok(None);
        };
        Ok(self
            .payment_row(&tenant, key)
            .await?
            .map(|row| booked_of(&tenant, wallet.currency.as_str(), row)))
    }

    /// The wallets (the registry alone: this reader may not scan), then each wallet's payment
    /// rows (one `Query` of its `PAY#` items).
    async fn credited_since(&self, since_ms: i64) -> Result<Credited, LedgerError> {
        let mut out = Vec::new();
        let (registry_complete, tenants) = self.registry().await?;
        for tenant in tenants {
            let Some(wallet) = self.wallet(&tenant).await? else {
                continue;
            };
            let items = self
                .store()
                .query_items(&wallet_pk(&tenant), PAYMENT_PREFIX)
                .await?;
            for item in &items {
                let row = PaymentRow::from_item(item).map_err(|reason| {
                    LedgerError::Unreadable(format!("a payment row of tenant {tenant:?}: {reason}"))
                })?;
                if row.credited.get() != 0 && row.updated_at.is_none_or(|t| t >= since_ms) {
                    out.push(booked_of(&tenant, wallet.currency.as_str(), row));
                }
            }
        }
        Ok(Credited {
            rows: out,
            registry_complete,
        })
    }
}
