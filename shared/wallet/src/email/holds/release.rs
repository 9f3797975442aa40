//! Releasing a hold the wallet API placed (a send that was never made): only a row still `held`
//! under that hold id moves, by the rules' `Cancelled` event, with the caller's effects in the
//! same transaction; a settled one is left as it is.

use super::{busy_metric, refused, Holds, ReleaseOutcome, Released};
use crate::balance::items::{notice_writes, wallet_pk};
use crate::balance::ledger::{self, LedgerError};
use crate::balance::notices::notices;
use crate::balance::rules::{self, EmailEvent};
use crate::email::holds::items::{existing_wallet, hold_sk, pointed_message};
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::{Applied, Effect, ItemStore, ItemWriter};

impl<'s, S> Holds<'s, S>
where
    S: ItemStore + ItemWriter,
{
    /// Releases a hold placed by [`Holds::place`]; `with` as there.
    pub async fn release(
        &self,
        tenant: &TenantId,
        hold_id: &str,
        with: impl Fn(&Released) -> Vec<Effect> + Send + Sync,
    ) -> Result<ReleaseOutcome, LedgerError> {
        let mut conflicts = 0;
        for attempt in 1..=self.retry.max_attempts {
            if attempt > 1 {
                self.back_off(attempt).await;
            }
            let done = |outcome| Ok(self.done(tenant, "release", conflicts, outcome));
            let Some(wallet) = ledger::wallet(self.store, tenant).await? else {
                return done(ReleaseOutcome::NoWallet);
            };
            let pointed = self
                .store
                .get_item(&wallet_pk(tenant), &hold_sk(hold_id))
                .await?
                .and_then(|p| pointed_message(&p));
            let Some(message_id) = pointed else {
                return done(ReleaseOutcome::NotFound);
            };
            let Some(row) = ledger::email_row(self.store, tenant, &message_id)
                .await?
                .filter(|r| r.hold_id.as_deref() == Some(hold_id))
            else {
                return done(ReleaseOutcome::NotFound);
            };
            let amount = row.amount.of(wallet.currency);
            let (state, movement) = rules::email(row.state, EmailEvent::Cancelled, amount);
            let Some(mv) = movement else {
                return done(ReleaseOutcome::Settled { state: row.state });
            };
            let available = wallet
                .available()
                .and_then(|a| a.checked_add(amount, "the available amount"))
                .map_err(refused)?;
            let released = Released {
                hold_id: hold_id.to_owned(),
                message_id: message_id.clone(),
                amount,
                available,
            };
            let now = self.clock.now_millis();
            let mut next = row.clone();
            next.state = state;
            next.updated_at = Some(Millis::new(now));
            next.entries
                .push(self.entry(tenant, &mv, &message_id, hold_id, now));
            let notices = notices(&wallet, &[mv], now).map_err(refused)?;
            // The shard the hold is on.
            let mut effects = vec![next.replace(tenant, row.version)];
            effects
                .extend(existing_wallet(tenant, row.shard, &mv, now, &notices).map_err(refused)?);
            effects.extend(with(&released));
            effects.extend(notice_writes(&notices, now).map_err(refused)?);
            match self.store.commit(effects).await? {
                Applied::Done => {
                    self.record(notices.metrics);
                    return done(ReleaseOutcome::Released(released));
                }
                Applied::EffectConflict | Applied::MessageConflict => conflicts += 1,
            }
        }
        self.record([busy_metric(tenant, "release")]);
        Ok(self.done(tenant, "release", conflicts, ReleaseOutcome::Busy))
    }
}
