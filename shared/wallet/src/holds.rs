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
//! [`crate::items::holds`]); the caller's effects and the movement's notices.
//! Concurrent holds do not conflict with each other; one that fails its condition is read again
//! and classified (the row exists → [`HoldOutcome::AlreadyExists`], no longer affordable →
//! [`HoldOutcome::InsufficientFunds`]) or retried with backoff and full jitter, a bounded number
//! of times ([`HoldOutcome::Busy`]). Time, the wait and the jitter's draw are injected
//! ([`Holds::with_clock`], [`Holds::with_pause`]): tests never sleep.

use crate::autopay_handler::threshold_writes;
use crate::items::holds::{bounded_hold, hold_sk, pointed_message, pointer, HOLDS_SOURCE};
use crate::items::shards::{self, pick, plan_refill, Part};
use crate::items::wallet_pk;
use crate::ledger::{Ledger, LedgerError};
use crate::model::{EmailRow, Entry, RowEntry, Wallet};
use crate::money::{Money, Overflow};
use crate::notices::notices;
use crate::rules::{self, EmailEvent, EmailState, Movement};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::metrics::Metric;
use inbox_core::policy::RetryPolicy;
use inbox_core::store::{Applied, Effect, ItemStore, ItemWriter};
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
}

/// A hold that was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub hold_id: String,
    pub message_id: String,
    pub amount: Money,
    /// The wallet's available amount after this hold, as of its own commit's read.
    pub available: Money,
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
    metrics: Mutex<Vec<Metric>>,
}

/// A commit that met a failed condition this many times before its outcome.
fn conflicts_metric(tenant: &str, operation: &str, conflicts: u32) -> Metric {
    Metric::count(METRICS_NAMESPACE, "HoldConflicts", i64::from(conflicts))
        .with_property("Tenant", tenant)
        .with_property("Operation", operation)
        .with_note("the wallet changed under a hold's conditional write; read again and retried")
}

/// A refill of a hold's shard from the others (`Moved`: whether it committed).
fn refills_metric(tenant: &str, moved: bool) -> Metric {
    Metric::count(METRICS_NAMESPACE, "ShardRefills", 1)
        .with_property("Tenant", tenant)
        .with_property("Moved", if moved { "true" } else { "false" })
        .with_note("a hold's shard ran short; the others' surplus moved to it in one transaction")
}

/// A hold or release that gave up after its bounded retries.
fn busy_metric(tenant: &str, operation: &str) -> Metric {
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

    fn ledger(&self) -> Ledger<'s, S> {
        Ledger::new(self.store)
    }

    /// Waits before try `attempt` (2, 3, …): full jitter under the doubling ceiling.
    async fn back_off(&self, attempt: u32) {
        (self.pause)(self.retry.backoff(attempt - 1, (self.draw)())).await;
    }

    /// Ends a place or release: records its conflicts (if any) and the notices' metrics.
    fn done<T>(&self, tenant: &str, operation: &str, conflicts: u32, outcome: T) -> T {
        if conflicts > 0 {
            self.record([conflicts_metric(tenant, operation, conflicts)]);
        }
        outcome
    }

    /// Places the hold; `with` gives the effects committed in the same transaction as the hold
    /// (called with the hold as it will be committed, once per try).
    pub async fn place(
        &self,
        request: &HoldRequest,
        with: impl Fn(&Held) -> Vec<Effect> + Send + Sync,
    ) -> Result<HoldOutcome, LedgerError> {
        let tenant = &request.tenant;
        let mut conflicts = 0;
        let mut refills = 0;
        let mut attempt = 0;
        while attempt < self.retry.max_attempts {
            attempt += 1;
            if attempt > 1 {
                self.back_off(attempt).await;
            }
            let Some(mut wallet) = self.ledger().wallet_as_read(tenant).await? else {
                return Ok(self.done(tenant, "place", conflicts, HoldOutcome::NoWallet));
            };
            if conflicts > 0 {
                // Why the last try failed: the email has a row, or the hold id is taken.
                if let Some(outcome) = self.existing(request).await? {
                    return Ok(self.done(tenant, "place", conflicts, outcome));
                }
            }
            let amount = wallet
                .currency
                .amount(request.amount.unwrap_or(wallet.message_price.minor()));
            if amount.minor() <= 0 {
                return Err(LedgerError::Unreadable(format!(
                    "a hold's amount must be positive, not {}",
                    amount.minor()
                )));
            }
            let mut available = wallet.available().map_err(refused)?;
            if wallet.shard_count() > 1 && available.minor() - amount.minor() < wallet.floor.minor()
            {
                // A refusal is confirmed on a read no refill moved under.
                if let Some(settled) = self.ledger().wallet(tenant).await? {
                    wallet = settled;
                    available = wallet.available().map_err(refused)?;
                }
            }
            let after = available
                .checked_sub(amount, "the available amount")
                .map_err(refused)?;
            if after.minor() < wallet.floor.minor() {
                // A message that has its row already says so, affordable or not.
                if conflicts == 0 {
                    if let Some(outcome) = self.existing(request).await? {
                        return Ok(self.done(tenant, "place", conflicts, outcome));
                    }
                }
                let outcome = HoldOutcome::InsufficientFunds {
                    available,
                    floor: wallet.floor,
                    amount,
                };
                return Ok(self.done(tenant, "place", conflicts, outcome));
            }
            // The whole wallet affords it. Holds keep every shard at or above its floor (shard
            // 0's the wallet's, the others' 0), which is what keeps the total above the wallet's
            // floor: a shard below its own (a new wallet funded on another shard, a raised floor,
            // a debit that overdrew it) is covered from the others first.
            if let Some((deficit, shard)) = wallet
                .shards
                .iter()
                .filter_map(|p| p.surplus().ok().map(|s| (s, p.shard)))
                .filter(|(s, _)| *s < 0)
                .min()
            {
                if refills < self.retry.max_attempts {
                    refills += 1;
                    if self.refill(&wallet, shard, -deficit).await? {
                        attempt -= 1;
                    } else {
                        conflicts += 1;
                    }
                    continue;
                }
                break;
            }
            // On its message's shard if that one affords it, else on the
            // shard with the most above its floor if that one does (the row records which),
            // else its own shard once the others refilled it.
            let own = wallet.part(pick(&request.message_id, wallet.shard_count()));
            let part = if own.surplus().map_err(refused)? >= amount.minor() {
                own
            } else {
                let richest = wallet
                    .shards
                    .iter()
                    .filter_map(|p| p.surplus().ok().map(|s| (s, p)))
                    .max_by_key(|(s, p)| (*s, std::cmp::Reverse(p.shard)));
                match richest {
                    Some((s, p)) if s >= amount.minor() => p.clone(),
                    _ => own,
                }
            };
            let short = amount.minor() - part.surplus().map_err(refused)?;
            if short > 0 {
                if refills < self.retry.max_attempts {
                    refills += 1;
                    if self.refill(&wallet, part.shard, short).await? {
                        attempt -= 1;
                    } else {
                        conflicts += 1;
                    }
                    continue;
                }
                break;
            }
            let held = Held {
                hold_id: request.hold_id.clone(),
                message_id: request.message_id.clone(),
                amount,
                available: after,
            };
            let (mut effects, mut metrics) = self.hold_effects(&wallet, &part, &held, &with)?;
            // Autopay's threshold, as a webhook's hold checks it: the attempt (and the settings
            // at their version) in the hold's own transaction.
            let autopay = self.ledger().autopay(tenant).await?;
            let origin = [HOLDS_SOURCE, held.hold_id.as_str()];
            let (top_up, top_up_metrics) =
                threshold_writes(autopay, tenant, after, self.clock.now_millis(), origin)
                    .map_err(LedgerError::Unreadable)?;
            effects.extend(top_up);
            metrics.extend(top_up_metrics);
            match self.store.commit(effects).await? {
                Applied::Done => {
                    self.record(metrics);
                    return Ok(self.done(tenant, "place", conflicts, HoldOutcome::Held(held)));
                }
                Applied::EffectConflict | Applied::MessageConflict => conflicts += 1,
            }
        }
        self.record([busy_metric(tenant, "place")]);
        Ok(self.done(tenant, "place", conflicts, HoldOutcome::Busy))
    }

    /// Moves to shard `target` at least `short` of the other shards' surplus (as read), in one
    /// transaction whose every donor is bounded as a hold is; `false` if one changed meanwhile
    /// (nothing moved). Counted in `ShardRefills`.
    async fn refill(&self, wallet: &Wallet, target: u32, short: i64) -> Result<bool, LedgerError> {
        let Some(moves) = plan_refill(&wallet.shards, target, short) else {
            return Ok(false);
        };
        let effects = shards::refill(&wallet.tenant, &wallet.shards, &moves).map_err(refused)?;
        let done = matches!(self.store.commit(effects).await?, Applied::Done);
        self.record([refills_metric(&wallet.tenant, done)]);
        Ok(done)
    }

    /// What a hold found already there: the email's row, or another email's hold of this id.
    async fn existing(&self, request: &HoldRequest) -> Result<Option<HoldOutcome>, LedgerError> {
        let ledger = self.ledger();
        if let Some(row) = ledger
            .email_row(&request.tenant, &request.message_id)
            .await?
        {
            return Ok(Some(HoldOutcome::AlreadyExists {
                hold_id: row.hold_id,
                state: row.state,
            }));
        }
        let pk = wallet_pk(&request.tenant);
        let Some(taken) = self.store.get_item(&pk, &hold_sk(&request.hold_id)).await? else {
            return Ok(None);
        };
        let state = match pointed_message(&taken) {
            Some(m) => ledger
                .email_row(&request.tenant, &m)
                .await?
                .map_or(EmailState::Held, |r| r.state),
            None => EmailState::Held,
        };
        Ok(Some(HoldOutcome::AlreadyExists {
            hold_id: Some(request.hold_id.clone()),
            state,
        }))
    }

    /// The writes of one try of a hold, and the metrics its notices raise.
    fn hold_effects(
        &self,
        wallet: &Wallet,
        part: &Part,
        held: &Held,
        with: &(impl Fn(&Held) -> Vec<Effect> + Send + Sync),
    ) -> Result<(Vec<Effect>, Vec<Metric>), LedgerError> {
        let now = self.clock.now_millis();
        let (state, Some(mv)) = rules::email(EmailState::New, EmailEvent::Sent, held.amount) else {
            return Err(LedgerError::Unreadable(
                "the rules hold nothing for a new email's send".into(),
            ));
        };
        let tenant = &wallet.tenant;
        let row = EmailRow {
            message_id: held.message_id.clone(),
            state,
            amount: held.amount.minor(),
            held_at: Some(now),
            updated_at: Some(now),
            hold_id: Some(held.hold_id.clone()),
            entries: vec![self.entry(tenant, &mv, &held.message_id, &held.hold_id, now)],
            shard: part.shard,
            ..EmailRow::default()
        };
        let notices = notices(wallet, &[mv], now).map_err(refused)?;
        let mut effects = vec![
            row.replace(tenant, None),
            Effect::Create(pointer(
                tenant,
                &held.hold_id,
                &held.message_id,
                held.amount,
                now,
            )),
        ];
        effects.extend(bounded_hold(tenant, part, &mv, now, &notices).map_err(refused)?);
        effects.extend(with(held));
        effects.extend(notices.effects);
        Ok((effects, notices.metrics))
    }

    /// The ledger entry of a movement the API made, in the handler's format, as the email's row
    /// keeps it.
    fn entry(
        &self,
        tenant: &TenantId,
        mv: &Movement,
        message_id: &str,
        hold_id: &str,
        at: i64,
    ) -> RowEntry {
        let id = uuid::Uuid::new_v4().to_string();
        Entry::of(id, tenant, mv, message_id, (HOLDS_SOURCE, hold_id), at).in_row()
    }
}

mod release;

#[cfg(test)]
pub(crate) mod tests;
