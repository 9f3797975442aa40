//! Placing a hold ([`Holds::place`]): the wallet read and the affordability decided, a shard
//! below its floor refilled from the others first (its own transaction), the hold put on its
//! message's shard, always (short of it, that shard refilled from the others in the hold's
//! transaction with its need and an even share: [`crate::balance::items::shards::plan_refill`], both
//! counted in `ShardRefills`), and the one transaction's writes built: the email's row in state `held`
//! with its entry, the hold's pointer, the bounded write on the shard (with the refill's credit
//! in it), the refill's donors, the caller's effects, the notices and autopay's threshold, each
//! item written once ([`crate::balance::items::shards::merge_writes`]). What a refused or conflicting try
//! found already there is read back here too.

use super::{busy_metric, expiry, refused, Held, HoldOutcome, HoldRequest, Holds};
use crate::autopay;
use crate::autopay::ledger::ThresholdError;
use crate::balance::items::shards::{self, merge_writes, pick, plan_refill};
use crate::balance::items::{notice_writes, wallet_pk};
use crate::balance::ledger::{self, LedgerError};
use crate::balance::model::ShardFigures;
use crate::balance::model::{EmailRow, Entry, RowEntry, Wallet};
use crate::balance::notices::notices;
use crate::balance::rules::{self, EmailEvent, EmailState, Movement};
use crate::balance::views;
use crate::email::holds::items::{bounded_hold, hold_sk, pointed_message, pointer, HOLDS_SOURCE};
use crate::money::{checked_add, Minor};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::clock::Millis;
use inbox_core::metrics::Metric;
use inbox_core::store::{Applied, Effect, ItemStore, ItemWriter};

/// A refill of a hold's shard from the others (`Moved`: whether it committed).
fn refills_metric(tenant: &TenantId, moved: bool) -> Metric {
    Metric::count(METRICS_NAMESPACE, "ShardRefills", 1)
        .with_property("Tenant", tenant)
        .with_property("Moved", if moved { "true" } else { "false" })
        .with_note("a hold's shard ran short; the others' surplus moved to it in one transaction")
}

impl<'s, S> Holds<'s, S>
where
    S: ItemStore + ItemWriter,
{
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
            let Some(mut wallet) = self.wallet_for(request).await? else {
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
                if let Some(settled) = ledger::wallet(self.store, tenant).await? {
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
                .filter(|(s, _)| *s < Minor::ZERO)
                .min()
            {
                if refills < self.retry.max_attempts {
                    refills += 1;
                    let need = Minor::ZERO
                        .checked_sub(deficit, "a shard's deficit")
                        .map_err(refused)?;
                    if self.refill(&wallet, shard, need.get()).await? {
                        attempt -= 1;
                    } else {
                        conflicts += 1;
                    }
                    continue;
                }
                break;
            }
            // On its message's shard, always: so a hot tenant's holds spread over its K shards
            // as its messages do. Short of it, the shard takes the others' surplus in the hold's
            // own transaction — what it needs and an even share of the rest (`plan_refill`), so
            // money funded on one shard (a top-up lands on the shard its payment hashes to)
            // spreads to the shards that spend it, refill by refill, instead of every hold
            // following the money to one shard.
            let part = wallet.part(pick(&request.message_id, wallet.shard_count()));
            // Short of it: the others' surplus moves to its shard in the hold's own transaction
            // (the shard's one write takes the credit and the hold, bounded with the credit).
            let short = Minor::from(amount)
                .checked_sub(
                    part.surplus().map_err(refused)?,
                    "what the shard is short of",
                )
                .map_err(refused)?
                .get();
            let (mut refill, mut credit) = (Vec::new(), 0);
            if short > 0 {
                if refills >= self.retry.max_attempts {
                    break;
                }
                refills += 1;
                let Some(moves) = plan_refill(&wallet.shards, part.shard, short) else {
                    conflicts += 1;
                    continue;
                };
                for m in &moves {
                    credit = checked_add(credit, m.amount, "the refill").map_err(refused)?;
                }
                refill = shards::refill(tenant, &wallet.shards, &moves).map_err(refused)?;
            }
            let expires_in = expiry::bounded(request.expires_in.unwrap_or(self.expires_in))
                .map_err(LedgerError::Unreadable)?;
            let held = Held {
                hold_id: request.hold_id.clone(),
                message_id: request.message_id.clone(),
                amount,
                available: after,
                expires_at: self.clock.now_millis() + expiry::millis(expires_in),
            };
            let (mut effects, mut metrics) =
                self.hold_effects(&wallet, &part, credit, &held, &with)?;
            // Autopay's threshold, as a webhook's hold checks it: the attempt (and the settings
            // at their version) in the hold's own transaction.
            let origin = [HOLDS_SOURCE, held.hold_id.as_str()];
            let now = self.clock.now_millis();
            let (top_up, top_up_metrics) =
                autopay::ledger::threshold(self.store, &wallet, &self.views, after, now, origin)
                    .await
                    .map_err(|e| match e {
                        ThresholdError::Read(e) => e,
                        ThresholdError::Writes(reason) => LedgerError::Unreadable(reason),
                    })?;
            effects.extend(top_up);
            metrics.extend(top_up_metrics);
            let refilled = !refill.is_empty();
            if refilled {
                refill.extend(effects);
                effects = merge_writes(refill).map_err(refused)?;
            }
            let done = matches!(self.store.commit(effects).await?, Applied::Done);
            if refilled {
                self.record([refills_metric(tenant, done)]);
            }
            if done {
                self.record(metrics);
                return Ok(self.done(tenant, "place", conflicts, HoldOutcome::Held(held)));
            }
            conflicts += 1;
        }
        self.record([busy_metric(tenant, "place")]);
        Ok(self.done(tenant, "place", conflicts, HoldOutcome::Busy))
    }

    /// The wallet a try decides on: every shard read strongly, unless the instance has a fresh
    /// view of it (K > 1) in which the hold's own shard, read strongly, pays it and no shard is
    /// below its floor: then that one read over the view. A hold its own shard cannot pay (a
    /// refill, another shard, a refusal) is decided on all K read strongly, as without a view.
    async fn wallet_for(&self, request: &HoldRequest) -> Result<Option<Wallet>, LedgerError> {
        let Some(viewed) = views::viewed(self.store, &request.tenant, &self.views).await? else {
            return Ok(None);
        };
        if viewed.whole {
            return Ok(Some(viewed.wallet));
        }
        let shard = pick(&request.message_id, viewed.wallet.shard_count());
        let wallet = views::own_shard(self.store, viewed, shard, &self.views).await?;
        let amount = request.amount.unwrap_or(wallet.message_price.minor());
        let pays = wallet
            .part(shard)
            .surplus()
            .is_ok_and(|s| s >= Minor::new(amount))
            && wallet
                .shards
                .iter()
                .all(|p| p.surplus().is_ok_and(|s| s >= Minor::ZERO));
        if pays {
            return Ok(Some(wallet));
        }
        views::whole(self.store, &request.tenant, &self.views).await
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
        if let Some(row) =
            ledger::email_row(self.store, &request.tenant, &request.message_id).await?
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
            Some(m) => ledger::email_row(self.store, &request.tenant, &m)
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
        part: &ShardFigures,
        credit: i64,
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
            amount: held.amount.into(),
            held_at: Some(Millis::new(now)),
            updated_at: Some(Millis::new(now)),
            hold_id: Some(held.hold_id.clone()),
            expires_at: Some(Millis::new(held.expires_at)),
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
        effects.extend(bounded_hold(tenant, part, credit, &mv, now, &notices).map_err(refused)?);
        effects.extend(with(held));
        effects.extend(notice_writes(&notices, now).map_err(refused)?);
        Ok((effects, notices.metrics))
    }

    /// The ledger entry of a movement the API made, in the handler's format, as the email's row
    /// keeps it.
    pub(super) fn entry(
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
