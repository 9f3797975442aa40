//! The items of a hold the wallet API placed ([`crate::email::holds`]): the pointer `HOLD#{hold_id}`
//! under the tenant's wallet (message id, amount, time), which a release finds the email's row
//! by and which the hold's entries name as their origin; and the wallet's bounded write that
//! makes a hold exact under concurrency.

use crate::balance::items::shards::{affords_after, shard_write};
use crate::balance::items::{wallet_changes, wallet_pk};
use crate::balance::model::ShardFigures;
use crate::balance::notices::Notices;
use crate::balance::rules::{Flags, Movement};
use crate::money::{Money, Overflow};
use crate::tenant::TenantId;
use inbox_core::store::attr::{n, s};
use inbox_core::store::{Bound, Effect, Item};

pub const KIND_HOLD: &str = "hold";
pub const HOLD_PREFIX: &str = "HOLD#";
/// The `event_source` of the entries the wallet API's holds and releases write (their
/// `event_id` is the hold's id: reconciliation finds their pointer, not an inbox message).
pub const HOLDS_SOURCE: &str = "wallet-api";

/// The pointer's sort key (under `WALLET#{tenant}`).
pub fn hold_sk(hold_id: &str) -> String {
    format!("{HOLD_PREFIX}{hold_id}")
}

/// The pointer of hold `hold_id` of `tenant` to the email `message_id`.
pub(crate) fn pointer(
    tenant: &TenantId,
    hold_id: &str,
    message_id: &str,
    amount: Money,
    at: i64,
) -> Item {
    Item::from([
        ("pk".to_string(), s(wallet_pk(tenant))),
        ("sk".to_string(), s(hold_sk(hold_id))),
        ("kind".to_string(), s(KIND_HOLD)),
        ("tenant".to_string(), s(tenant)),
        ("hold_id".to_string(), s(hold_id)),
        ("message_id".to_string(), s(message_id)),
        ("amount".to_string(), n(amount.minor())),
        ("at".to_string(), n(at)),
    ])
}

/// The message id a pointer item names.
pub(crate) fn pointed_message(item: &Item) -> Option<String> {
    crate::balance::items::text(item, "message_id")
}

/// The wallet's side of a hold `mv` placed at `at`, on its shard as read (`part`; the wallet item
/// itself for a wallet of one shard) credited with `credit` in the same transaction (a refill's;
/// else 0): `held` added only while the stored item is within the bounds of [`affords_after`],
/// i.e. while `available + credit − amount ≥ floor` for the shard as it is at the write.
/// DynamoDB conditions cannot do arithmetic, hence bounds on `balance` and `held` computed from
/// the read, with half the room as slack each way; a shard whose balance fell or whose held
/// amount rose by more since, or whose floor rose, fails it (read again, retried). The
/// notices' attributes go to the wallet item.
pub(crate) fn bounded_hold(
    tenant: &TenantId,
    part: &ShardFigures,
    credit: i64,
    mv: &Movement,
    at: i64,
    notices: &Notices,
) -> Result<Vec<Effect>, Overflow> {
    let bounds = affords_after(part, mv.amount.minor(), credit)?;
    wallet_write(tenant, part.shard, mv, at, notices, Some(bounds))
}

/// The wallet's side of a release `mv` (or any movement that needs no bound) at `at`, on shard
/// `shard`: the shard must still exist.
pub(crate) fn existing_wallet(
    tenant: &TenantId,
    shard: u32,
    mv: &Movement,
    at: i64,
    notices: &Notices,
) -> Result<Vec<Effect>, Overflow> {
    wallet_write(tenant, shard, mv, at, notices, Some(Vec::new()))
}

/// The wallet's adds and sets for `mv` on `shard` (and the notices' attributes), applied while
/// `bounds` hold on it.
fn wallet_write(
    tenant: &TenantId,
    shard: u32,
    mv: &Movement,
    at: i64,
    notices: &Notices,
    bounds: Option<Vec<Bound>>,
) -> Result<Vec<Effect>, Overflow> {
    let (add, set) = wallet_changes(std::slice::from_ref(mv), at, Flags::default())?;
    Ok(shard_write(tenant, shard, add, set, bounds, notices))
}
