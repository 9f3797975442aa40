//! The wallet handler's email events: an email provider's delivery event (already mapped onto the
//! wallet's [`EmailEvent`](crate::balance::rules::EmailEvent) by [`crate::email::providers`])
//! moves the email's row through its states ([`crate::balance::rules::email`]): the row
//! `Replace`d at the version read with the movement's entry in it, the wallet adjusted on the
//! shard its hold is on (a capture or release) or the one its message hashes to, and autopay's
//! threshold checked after a hold or debit.

use crate::autopay::handler::at_threshold;
use crate::balance::handler::{money, read_failed, viewed, Unhandled};
use crate::balance::items::shards::pick;
use crate::balance::ledger;
use crate::balance::model::{EmailRow, Entry};
use crate::balance::rules::{self, EmailState};
use crate::balance::views::{self, WalletViews};
use crate::email::holds::expiry;
use crate::email::parse::EmailNotice;
use crate::money::Minor;
use inbox_core::clock::Millis;
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Commit, HandlerOutcome};
use inbox_core::store::ItemStore;
use std::time::Duration;

/// An email's delivery event `notice` (of message `m`): its row moved, the wallet's money with
/// it; a hold placed now expires `hold_expires_in` later.
pub(crate) async fn email<S: ItemStore>(
    store: &S,
    views: &WalletViews,
    hold_expires_in: Duration,
    m: &StoredMessage,
    notice: EmailNotice,
) -> Result<HandlerOutcome, Unhandled> {
    let viewed = viewed(store, views, &notice.tenant).await?;
    let row = ledger::email_row(store, &notice.tenant, &notice.message_id)
        .await
        .map_err(read_failed("the email's row"))?
        .unwrap_or_else(|| EmailRow {
            message_id: notice.message_id.clone(),
            ..Default::default()
        });
    // The shard its hold is on (a capture or release), else the one its message hashes to
    // (of the count of shards as read: only ever raised, so one that exists).
    let shard = if row.state == EmailState::Held {
        row.shard
    } else {
        pick(&notice.message_id, viewed.wallet.shard_count())
    };
    // That shard read strongly, the others as viewed (all of them strongly without a view).
    let wallet = views::own_shard(store, viewed, shard, views)
        .await
        .map_err(read_failed("the wallet's shard"))?;
    let amount = if row.state == EmailState::New {
        Minor::from(wallet.message_price)
    } else {
        row.amount
    };
    let (state, movement) = rules::email(row.state, notice.event, amount.of(wallet.currency));
    let now = m.received_at;
    let mut next = row.clone();
    next.state = state;
    next.amount = amount;
    next.updated_at = Some(Millis::new(now));
    if state == EmailState::Held && row.state != EmailState::Held {
        next.held_at = Some(Millis::new(now));
        next.expires_at = Some(Millis::new(now + expiry::millis(hold_expires_in)));
    }
    if !next.events.contains(&m.event_id.to_string()) {
        next.events.push(m.event_id.to_string());
    }
    if state == EmailState::Held && row.state != EmailState::Held {
        next.shard = shard;
    }
    // The row first, with the movement's entry in it (one item for both).
    let mut commit = Commit::new(Vec::new());
    if let Some(mv) = movement {
        let (effects, metrics, entries) = money(m, &wallet, &notice.message_id, shard, &[mv])?;
        next.entries.extend(entries.iter().map(Entry::in_row));
        commit.effects.extend(effects);
        commit.metrics.extend(metrics);
        if matches!(mv.kind, rules::EntryKind::Hold | rules::EntryKind::Debit) {
            // The wallet as read plus this movement: level-triggered, so a stale read delays
            // an attempt to the next hold or debit, never skips it.
            let available = wallet
                .view(now)
                .after(&mv)
                .and_then(|v| v.available())
                .map_err(|e| Unhandled::Permanent(format!("refused: {e}")))?;
            let (effects, metrics) = at_threshold(store, views, m, &wallet, available).await?;
            commit.effects.extend(effects);
            commit.metrics.extend(metrics);
        }
    }
    if row.state == EmailState::Expired && state == EmailState::Debited {
        commit
            .metrics
            .push(expiry::late_capture_metric(&notice.tenant));
    }
    commit
        .effects
        .insert(0, next.replace(&notice.tenant, row.version));
    Ok(HandlerOutcome::Commit(commit))
}
