//! Holds expire. Every hold carries `expires_at` (an API hold: its `expires_in`, bounded by
//! [`MIN_EXPIRES_IN`]..=[`MAX_EXPIRES_IN`], or the stage's default; a webhook's hold: the
//! stage's default, `WALLET_HOLD_EXPIRES_IN`). While `held`, its email's row is in the open
//! index's hold shards (`WALLET#HOLDS#0..15`, due at `expires_at`: [`crate::balance::items`]), so
//! the sweep ([`HoldSweep`], run by the charge function every minute) finds the due ones without
//! a scan. An expiry is a release with a reason: the rules' [`EmailEvent::Expired`] moves a row
//! still `held` (at the version read) to `expired` with its `hold_release` entry, the shard's
//! `held` lowered, and `wallet.hold_expired` published, in one transaction; a capture, bounce or
//! release that committed first leaves nothing to expire (and a racer that loses is re-run).
//!
//! A capture after the expiry: the email was sent, so the late `delivered` debits it once,
//! directly (nothing is held any more), even below the floor (the wallet is flagged overdrawn),
//! and the row keeps its `expires_at`: `HoldLateCaptures` counts them
//! ([`crate::balance::rules::email`]).

use super::{busy_metric, refused, Holds};
use crate::balance::events::{self, WalletEvent};
use crate::balance::items::{hold_shards, notice_writes, wallet_pk, EMAIL_PREFIX};
use crate::balance::ledger::{self, LedgerError};
use crate::balance::model::Entry;
use crate::balance::notices::notices;
use crate::balance::rules::{self, EmailEvent, EmailState};
use crate::email::holds::items::existing_wallet;
use crate::money::Money;
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::clock::{Clock, Millis};
use inbox_core::metrics::Metric;
use inbox_core::store::attr::get_s;
use inbox_core::store::{Applied, DueIndex, ItemStore, ItemWriter};
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A hold's validity when its placer names none (`WALLET_HOLD_EXPIRES_IN`'s default): a day.
pub const DEFAULT_EXPIRES_IN: Duration = Duration::from_secs(86_400);
/// The shortest validity a hold may ask for: a minute (the sweep runs every minute).
pub const MIN_EXPIRES_IN: Duration = Duration::from_secs(60);
/// The longest: seven days, as a card authorization's.
pub const MAX_EXPIRES_IN: Duration = Duration::from_secs(7 * 86_400);

/// Whether `expires_in` is within the bounds; the error says which.
pub fn bounded(expires_in: Duration) -> Result<Duration, String> {
    if expires_in < MIN_EXPIRES_IN || expires_in > MAX_EXPIRES_IN {
        return Err(format!(
            "a hold's expires_in must be from {} to {} seconds, not {}",
            MIN_EXPIRES_IN.as_secs(),
            MAX_EXPIRES_IN.as_secs(),
            expires_in.as_secs()
        ));
    }
    Ok(expires_in)
}

/// `expires_in` in ms (bounded: it fits).
pub(crate) fn millis(expires_in: Duration) -> i64 {
    i64::try_from(expires_in.as_millis()).unwrap_or(i64::MAX)
}

/// A hold past its expiry by more than [`EXPIRY_GRACE_MS`], not yet released by the sweep
/// (reconciliation reports them: `ExpiredHolds`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpiredHold {
    pub tenant: TenantId,
    pub message_id: String,
    pub amount: i64,
    pub expires_at: i64,
}

/// How long past its expiry a hold may stay held before it counts (`ExpiredHolds`): the sweep
/// runs every minute, so ten minutes is ten runs missed.
pub const EXPIRY_GRACE_MS: i64 = 600_000;

/// What expiring one email's hold came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpireOutcome {
    /// Released for its expiry.
    Expired {
        amount: Money,
    },
    /// Nothing to expire: no row, not `held` (captured, released, bounced), no expiry, or not
    /// yet due.
    NotDue,
    NoWallet,
    Busy,
}

/// A hold released for its expiry.
fn expired_metric(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "HoldsExpired", 1)
        .with_property("Tenant", tenant)
        .with_note("a hold past its expiry was released by the sweep")
}

/// A capture (`delivered`) that came after its hold expired: debited once, directly.
pub fn late_capture_metric(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "HoldLateCaptures", 1)
        .with_property("Tenant", tenant)
        .with_note(
            "an email whose hold had expired was delivered: debited once, even below the floor",
        )
}

impl<'s, S> Holds<'s, S>
where
    S: ItemStore + ItemWriter,
{
    /// Releases the hold of `message_id` if it is still `held` and its expiry has passed, and
    /// publishes `wallet.hold_expired` with it.
    pub async fn expire(
        &self,
        tenant: &TenantId,
        message_id: &str,
    ) -> Result<ExpireOutcome, LedgerError> {
        let mut conflicts = 0;
        for attempt in 1..=self.retry.max_attempts {
            if attempt > 1 {
                self.back_off(attempt).await;
            }
            let done = |outcome| Ok(self.done(tenant, "expire", conflicts, outcome));
            let Some(wallet) = ledger::wallet(self.store, tenant).await? else {
                return done(ExpireOutcome::NoWallet);
            };
            let now = self.clock.now_millis();
            let Some((row, expires_at)) = ledger::email_row(self.store, tenant, message_id)
                .await?
                .filter(|r| r.state == EmailState::Held)
                .and_then(|r| {
                    r.expires_at
                        .map(Millis::get)
                        .filter(|t| *t <= now)
                        .map(|t| (r, t))
                })
            else {
                return done(ExpireOutcome::NotDue);
            };
            let amount = row.amount.of(wallet.currency);
            let (state, Some(mv)) = rules::email(row.state, EmailEvent::Expired, amount) else {
                return done(ExpireOutcome::NotDue);
            };
            let event = WalletEvent::HoldExpired {
                tenant: tenant.clone(),
                message_id: message_id.to_owned(),
                hold_id: row.hold_id.clone(),
                amount,
                expires_at,
            };
            // The entry's origin is the event published with it (reconciliation finds it).
            let id = uuid::Uuid::new_v4().to_string();
            let origin = (events::SOURCE, event.id());
            let entry = Entry::of(id, tenant, &mv, message_id, (origin.0, &origin.1), now);
            let mut next = row.clone();
            next.state = state;
            next.updated_at = Some(Millis::new(now));
            next.entries.push(entry.in_row());
            let notices = notices(&wallet, &[mv], now).map_err(refused)?;
            let publish = event
                .publish(Millis::new(now))
                .map_err(|e| LedgerError::Unreadable(format!("the expiry's event: {e}")))?;
            let mut effects = vec![next.replace(tenant, row.version), publish];
            effects
                .extend(existing_wallet(tenant, row.shard, &mv, now, &notices).map_err(refused)?);
            effects.extend(notice_writes(&notices, now).map_err(refused)?);
            match self.store.commit(effects).await? {
                Applied::Done => {
                    self.record(notices.metrics);
                    self.record([expired_metric(tenant)]);
                    return done(ExpireOutcome::Expired { amount });
                }
                Applied::EffectConflict | Applied::MessageConflict => conflicts += 1,
            }
        }
        self.record([busy_metric(tenant, "expire")]);
        Ok(self.done(tenant, "expire", conflicts, ExpireOutcome::Busy))
    }
}

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Index entries found due.
    pub due: usize,
    pub expired: usize,
    /// Due entries that were settled meanwhile (the index lags the table).
    pub not_due: usize,
    pub busy: usize,
    pub errors: usize,
    pub error_samples: Vec<String>,
    /// The sweep stopped [`SWEEP_MARGIN_MS`] before the invocation's deadline: due entries it
    /// listed and did not reach (`left`), and shards it did not read, wait for the next run.
    pub stopped_at_deadline: bool,
    pub left: usize,
    #[serde(skip)]
    pub metrics: Vec<Metric>,
}

/// How long before the invocation's deadline the sweep stops taking holds: one expiry is a few
/// reads and a transaction, retried on conflict, well within it.
pub const SWEEP_MARGIN_MS: i64 = 5_000;

/// The expiry sweep on a table: the due hold shards read, each due hold expired.
pub struct HoldSweep<S> {
    pub store: S,
    pub clock: Arc<dyn Clock>,
    /// At most this many due holds per shard and run.
    pub batch: usize,
}

/// A sweep as its runner sees it (the charge function's is over DynamoDB; tests' in memory).
pub trait SweepHolds: Send + Sync {
    /// One sweep that takes no hold later than [`SWEEP_MARGIN_MS`] before `deadline`.
    fn sweep(
        &self,
        deadline: Option<Millis>,
    ) -> Pin<Box<dyn Future<Output = SweepReport> + Send + '_>>;
}

impl<S: ItemStore + ItemWriter + DueIndex> SweepHolds for HoldSweep<S> {
    fn sweep(
        &self,
        deadline: Option<Millis>,
    ) -> Pin<Box<dyn Future<Output = SweepReport> + Send + '_>> {
        Box::pin(self.run_until(deadline))
    }
}

/// An error counted, the first few kept.
fn fail(report: &mut SweepReport, what: String) {
    report.errors += 1;
    if report.error_samples.len() < 5 {
        report.error_samples.push(what);
    }
}

impl<S: ItemStore + ItemWriter + DueIndex> HoldSweep<S> {
    /// One sweep without a deadline ([`Self::run_until`]).
    pub async fn run(&self) -> SweepReport {
        self.run_until(None).await
    }

    /// One sweep: every hold shard's due entries (oldest first), each read again and expired
    /// if still due. An error is counted and the sweep goes on; the next run retries it. It
    /// stops [`SWEEP_MARGIN_MS`] before `deadline` (the rest waits for the next run).
    pub async fn run_until(&self, deadline: Option<Millis>) -> SweepReport {
        let mut report = SweepReport::default();
        let holds = Holds::new(&self.store).with_clock(self.clock.clone());
        let now = Millis::new(self.clock.now_millis());
        let out_of_time = || {
            deadline
                .is_some_and(|d| d.get().saturating_sub(self.clock.now_millis()) < SWEEP_MARGIN_MS)
        };
        for shard in hold_shards() {
            if out_of_time() {
                report.stopped_at_deadline = true;
                break;
            }
            let due = match self.store.due_items(&shard, now, self.batch).await {
                Ok(due) => due,
                Err(e) => {
                    fail(&mut report, format!("{shard}: {e}"));
                    continue;
                }
            };
            let listed = due.len();
            for (i, item) in due.into_iter().enumerate() {
                if out_of_time() {
                    report.stopped_at_deadline = true;
                    report.left += listed - i;
                    break;
                }
                report.due += 1;
                let pk = get_s(&item, "pk").unwrap_or_default();
                let tenant = pk
                    .strip_prefix(wallet_pk("").as_str())
                    .and_then(|t| TenantId::parse(t).ok());
                let message = get_s(&item, "sk").and_then(|sk| sk.strip_prefix(EMAIL_PREFIX));
                let (Some(tenant), Some(message)) = (tenant, message) else {
                    fail(&mut report, format!("{shard}: not an email's row: {pk}"));
                    continue;
                };
                match holds.expire(&tenant, message).await {
                    Ok(ExpireOutcome::Expired { .. }) => report.expired += 1,
                    Ok(ExpireOutcome::NotDue | ExpireOutcome::NoWallet) => report.not_due += 1,
                    Ok(ExpireOutcome::Busy) => report.busy += 1,
                    Err(e) => fail(&mut report, format!("{} {message}: {e}", tenant.as_str())),
                }
            }
        }
        report.metrics = holds.take_metrics();
        report
    }
}
