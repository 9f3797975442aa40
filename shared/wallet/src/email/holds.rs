//! Holds placed before a send (the wallet API's `POST /wallets/{tenant}/holds`): one conditional
//! write on the wallet (`available − amount ≥ floor`, exact under any concurrency) with the
//! email's row in state `held` (its ledger entry in it) and whatever the caller commits with it (the
//! API's idempotency record), in one transaction; and their release (a send never made). The
//! delivery webhooks later settle a hold by its `message_id` through the existing email rules
//! (`delivered` debits it, a hard bounce releases it, a second `sent` holds nothing).
//!
//! A hold is, in one transaction: the email's row (`EMAIL#{message_id}`) created in state `held`
//! with its `hold_id` and its `hold` entry; the pointer `HOLD#{hold_id}` → message id; the wallet's `held` added under
//! the bound `balance ≥ b AND floor ≤ f AND held ≤ b − f − amount` (b, f as read:
//! [`crate::email::holds::items`]); the caller's effects and the movement's notices.
//! Concurrent holds do not conflict with each other; one that fails its condition is read again
//! and classified (the row exists → [`HoldOutcome::AlreadyExists`], no longer affordable →
//! [`HoldOutcome::InsufficientFunds`]) or retried with backoff and full jitter, a bounded number
//! of times ([`HoldOutcome::Busy`]). Time, the wait and the jitter's draw are injected
//! ([`Holds::with_clock`], [`Holds::with_pause`]): tests never sleep. Placing (the shard chosen,
//! refills, the transaction's writes): `holds/place.rs`; releasing: `holds/release.rs`; expiring
//! (each hold's `expires_at`, the sweep that releases the due ones): `holds/expiry.rs`.

use crate::balance::ledger::LedgerError;
use crate::balance::rules::EmailState;
use crate::balance::views::WalletViews;
use crate::money::{Money, Overflow};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::metrics::Metric;
use inbox_core::policy::RetryPolicy;
use inbox_core::store::{ItemStore, ItemWriter};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The wait and the jitter's draw between tries: core's, shared with the store's own retries.
pub use inbox_core::clock::{Draw, Pause};

/// How many times a hold or release is tried against a wallet that keeps changing, and the
/// backoff between tries (full jitter under a doubling ceiling): 8 tries, 10 ms doubling to
/// 320 ms: under a second of waiting in all at worst.
pub const RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 8,
    base: Duration::from_millis(10),
    cap: Duration::from_millis(320),
};

/// A hold asked for by the sending platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldRequest {
    pub tenant: TenantId,
    /// The send's message id (what the email provider will report in its webhooks).
    pub message_id: String,
    /// In the wallet's minor unit; `None`: the wallet's price per email.
    pub amount: Option<i64>,
    /// The id the new hold gets (chosen by the caller, so it can be recorded before the commit).
    pub hold_id: String,
    /// How long the hold is valid ([`expiry::bounded`]); `None`: the default of the [`Holds`]
    /// placing it ([`Holds::with_expires_in`]). Past it, the sweep releases it.
    pub expires_in: Option<Duration>,
}

/// A hold that was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub hold_id: String,
    pub message_id: String,
    pub amount: Money,
    /// The wallet's available amount after this hold, as of its own commit's read.
    pub available: Money,
    /// When it expires (ms).
    pub expires_at: i64,
}

/// What asking for a hold came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldOutcome {
    Held(Held),
    /// `available − amount` would fall below the floor: nothing was written.
    InsufficientFunds {
        available: Money,
        floor: Money,
        amount: Money,
    },
    /// No wallet for the tenant.
    NoWallet,
    /// The message already has a row (held, settled or released): nothing was written.
    AlreadyExists {
        hold_id: Option<String>,
        state: EmailState,
    },
    /// The wallet kept changing under the conditional write past the bounded retries.
    Busy,
}

/// A hold released by the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    pub hold_id: String,
    pub message_id: String,
    pub amount: Money,
    pub available: Money,
}

/// What releasing a hold came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    Released(Released),
    /// No such hold in this tenant's wallet.
    NotFound,
    /// The hold was settled (debited, released, refunded) already: nothing was written.
    Settled {
        state: EmailState,
    },
    NoWallet,
    Busy,
}

/// Places and releases holds on the table `S` (reads and commits: `ItemStore + ItemWriter`).
pub struct Holds<'s, S> {
    pub(crate) store: &'s S,
    clock: Arc<dyn Clock>,
    pause: Pause,
    draw: Draw,
    retry: RetryPolicy,
    views: WalletViews,
    expires_in: Duration,
    metrics: Mutex<Vec<Metric>>,
}

/// A commit that met a failed condition this many times before its outcome.
fn conflicts_metric(tenant: &TenantId, operation: &str, conflicts: u32) -> Metric {
    Metric::count(METRICS_NAMESPACE, "HoldConflicts", i64::from(conflicts))
        .with_property("Tenant", tenant)
        .with_property("Operation", operation)
        .with_note("the wallet changed under a hold's conditional write; read again and retried")
}

/// A hold or release that gave up after its bounded retries.
fn busy_metric(tenant: &TenantId, operation: &str) -> Metric {
    Metric::count(METRICS_NAMESPACE, "HoldBusy", 1)
        .with_property("Tenant", tenant)
        .with_property("Operation", operation)
        .with_note("the wallet kept changing past the bounded retries; answered busy")
}

fn refused(e: Overflow) -> LedgerError {
    LedgerError::Unreadable(format!("refused: {e}"))
}

impl<'s, S> Holds<'s, S>
where
    S: ItemStore + ItemWriter,
{
    /// Holds on `store` with the system clock, tokio's sleep, a random jitter and [`RETRY`].
    pub fn new(store: &'s S) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
            pause: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
            draw: Arc::new(fastrand::f64),
            retry: RETRY,
            views: WalletViews::disabled(),
            expires_in: expiry::DEFAULT_EXPIRES_IN,
            metrics: Mutex::new(Vec::new()),
        }
    }

    /// The same with another clock (the holds' times).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same with another wait and jitter draw between tries (tests).
    pub fn with_pause(mut self, pause: Pause, draw: Draw) -> Self {
        self.pause = pause;
        self.draw = draw;
        self
    }

    /// The same deciding a sharded wallet's holds on `views` (the instance's): a hold reads only
    /// its own shard strongly while that shard can pay it ([`crate::balance::views`]).
    pub fn with_views(mut self, views: WalletViews) -> Self {
        self.views = views;
        self
    }

    /// The same with another default validity of its holds (the stage's).
    pub fn with_expires_in(mut self, expires_in: Duration) -> Self {
        self.expires_in = expires_in;
        self
    }

    /// The same with other bounded retries.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The metrics of the places and releases since the last call (the notices of their
    /// movements, `HoldConflicts`, `HoldBusy`): the caller emits them once its commit is made.
    pub fn take_metrics(&self) -> Vec<Metric> {
        std::mem::take(&mut *self.metrics.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn record(&self, metrics: impl IntoIterator<Item = Metric>) {
        self.metrics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(metrics);
    }

    /// Waits before try `attempt` (2, 3, …): full jitter under the doubling ceiling.
    async fn back_off(&self, attempt: u32) {
        (self.pause)(self.retry.backoff(attempt - 1, (self.draw)())).await;
    }

    /// Ends a place or release: records its conflicts (if any) and the notices' metrics.
    fn done<T>(&self, tenant: &TenantId, operation: &str, conflicts: u32, outcome: T) -> T {
        if conflicts > 0 {
            self.record([conflicts_metric(tenant, operation, conflicts)]);
        }
        outcome
    }
}

pub mod backfill;
pub mod expiry;
pub mod items;
mod place;
mod release;

#[cfg(test)]
pub(crate) mod tests;
