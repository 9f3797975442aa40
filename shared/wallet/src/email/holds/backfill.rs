//! Holds placed before holds expired: a row `held` without `expires_at` is not in the hold
//! shards of the open index, so the sweep never finds it and it would shrink `available` for
//! good. `inboxctl wallet backfill-hold-expiry` gives each one, once, the expiry it would have
//! had: its `held_at` plus the stage's validity (`WALLET_HOLD_EXPIRES_IN`; when even `held_at`
//! is missing, now plus it). The row is written at the version read, so a capture, bounce or
//! release that commits first wins (the row is then not `held`: nothing to do) and a run that
//! loses is counted `busy` for the next one. One already past its expiry is released by the
//! next sweep, as every expired hold is. Idempotent: a row with an expiry is left alone.

use crate::balance::ledger::{email_rows, tenants, LedgerError};
use crate::balance::model::EmailRow;
use crate::balance::rules::EmailState;
use inbox_core::clock::Millis;
use inbox_core::store::{Applied, ItemStore, ItemWriter, StoreError};
use serde::Serialize;
use std::time::Duration;

/// What a backfill found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Backfilled {
    /// Wallets read.
    pub wallets: usize,
    /// Held rows without an expiry found.
    pub found: usize,
    /// Of them, given an expiry (none on a dry run).
    pub given: usize,
    /// Of them, already past the expiry given (the next sweep releases them).
    pub already_due: usize,
    /// Changed meanwhile (a capture, a release, another run): left for the next run.
    pub busy: usize,
    /// Wallets whose rows could not be read, with the reason.
    pub unreadable: Vec<String>,
}

/// The expiry a hold without one gets: when it was held plus `expires_in` (now, without a time).
fn expiry_of(row: &EmailRow, expires_in: Duration, now: Millis) -> Millis {
    row.held_at.unwrap_or(now).plus(expires_in)
}

/// Gives every held row without an expiry its expiry (see the module docs); with `dry_run`,
/// only counts them.
pub async fn backfill_expiry<S: ItemStore + ItemWriter>(
    store: &S,
    expires_in: Duration,
    now_ms: i64,
    dry_run: bool,
) -> Result<Backfilled, StoreError> {
    // The balance slice's own reads (the facade `crate::ledger::Ledger` only delegates to them,
    // and sits above this slice in the Layout).
    let mut done = Backfilled::default();
    for tenant in tenants(store).await?.tenants {
        done.wallets += 1;
        let rows = match email_rows(store, &tenant).await {
            Ok(rows) => rows,
            Err(LedgerError::Store(e)) => return Err(e),
            Err(LedgerError::Unreadable(why)) => {
                done.unreadable.push(format!("{}: {why}", tenant.as_str()));
                continue;
            }
        };
        let legacy = rows
            .into_iter()
            .filter(|r| r.state == EmailState::Held && r.expires_at.is_none());
        for row in legacy {
            done.found += 1;
            let expires_at = expiry_of(&row, expires_in, Millis::new(now_ms));
            if expires_at.get() <= now_ms {
                done.already_due += 1;
            }
            if dry_run {
                continue;
            }
            let mut next = row.clone();
            next.expires_at = Some(expires_at);
            match store
                .commit(vec![next.replace(&tenant, row.version)])
                .await?
            {
                Applied::Done => done.given += 1,
                Applied::EffectConflict | Applied::MessageConflict => done.busy += 1,
            }
        }
    }
    Ok(done)
}
