//! Refills of a sharded wallet: the moves that give a short shard what it needs and an even
//! share of the others' surplus ([`plan_refill`], pure), their writes ([`refill`]: each donor
//! bounded as a hold is, the target credited, the refill counters added), and the one-write-per-
//! item folding a transaction needs when a refill shares the hold's ([`merge_writes`]).

use super::{affords, shard_key, ShardFigures, REFILLS_ATTR};
use crate::balance::items::{wallet_pk, WALLET_SK};
use crate::money::{checked_add, Minor, Overflow};
use crate::tenant::TenantId;
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::store::{Bound, Effect};

/// One move of a refill: `amount` of balance from shard `from` to shard `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    pub from: u32,
    pub to: u32,
    pub amount: i64,
}

/// The moves that give shard `target` at least `need` above its floor (more: an even share of
/// what the others have above theirs, so the next holds find it there), taken from the shards
/// with the most surplus first; `None` when the others together have less than `need` (then
/// the wallet cannot afford it). Pure: the caller commits them with [`refill`].
pub fn plan_refill(parts: &[ShardFigures], target: u32, need: i64) -> Option<Vec<Transfer>> {
    let k = i64::try_from(parts.len()).ok()?.max(1);
    let mut donors: Vec<(i64, u32)> = parts
        .iter()
        .filter(|p| p.shard != target)
        .filter_map(|p| {
            p.surplus()
                .ok()
                .map(Minor::get)
                .filter(|s| *s > 0)
                .map(|s| (s, p.shard))
        })
        .collect();
    let spare: i64 = donors.iter().map(|(s, _)| *s).sum();
    if need <= 0 || spare < need {
        return None;
    }
    let mut want = need + (spare - need) / k;
    donors.sort_by(|a, b| b.cmp(a));
    let mut moves = Vec::new();
    for (surplus, from) in donors {
        if want == 0 {
            break;
        }
        let amount = surplus.min(want);
        want -= amount;
        moves.push(Transfer {
            from,
            to: target,
            amount,
        });
    }
    Some(moves)
}

/// The writes of a refill: each donor's balance taken under [`affords`] (as read), the target's
/// given, the refill counter ([`REFILLS_ATTR`]) added on each of them and on the wallet item (in
/// shard 0's own write when it takes part, one item being written once per transaction); one
/// transaction (its own, or a
/// hold's on the target with the writes merged by [`merge_writes`]), so no amount is ever in
/// two shards or none.
pub(crate) fn refill(
    tenant: &TenantId,
    parts: &[ShardFigures],
    moves: &[Transfer],
) -> Result<Vec<Effect>, Overflow> {
    let mut effects = Vec::new();
    let mut total = 0i64;
    // Every shard it moves counts it (a view that kept a shard's copy sees, on reading the
    // shard again, that money moved between it and shards the view has not read since).
    let counted = |_shard: u32, mut add: Vec<(String, i64)>| {
        add.push((REFILLS_ATTR.into(), 1));
        add
    };
    for m in moves {
        let Some(donor) = parts.iter().find(|p| p.shard == m.from) else {
            continue;
        };
        let (pk, sk) = shard_key(tenant, m.from);
        effects.push(Effect::AdjustIf {
            pk,
            sk,
            add: counted(m.from, vec![("balance".into(), -m.amount)]),
            set: Vec::new(),
            bounds: affords(donor, m.amount)?,
        });
        total = checked_add(total, m.amount, "the refill")?;
    }
    let Some(to) = moves.first().map(|m| m.to) else {
        return Ok(effects);
    };
    let (pk, sk) = shard_key(tenant, to);
    effects.push(Effect::AdjustIf {
        pk,
        sk,
        add: counted(to, vec![("balance".into(), total)]),
        set: Vec::new(),
        bounds: Vec::new(),
    });
    if moves.iter().all(|m| m.from != 0) && to != 0 {
        effects.push(Effect::Adjust {
            pk: wallet_pk(tenant),
            sk: WALLET_SK.into(),
            add: vec![(REFILLS_ATTR.into(), 1)],
            set: Vec::new(),
        });
    }
    Ok(effects)
}

/// `effects` with every item's adjustments written once, as a transaction writes an item at
/// most once: the `Adjust` and `AdjustIf` writes of one key folded into the first of them (adds
/// of one attribute summed, sets and bounds joined, conditional if any was: every bound is on the
/// item as stored before the write, so they all still must hold). Other effects are kept.
pub(crate) fn merge_writes(effects: Vec<Effect>) -> Result<Vec<Effect>, Overflow> {
    type Write = (
        String,
        String,
        Vec<(String, i64)>,
        Vec<(String, AttributeValue)>,
    );
    /// An adjustment (with its bounds if conditional), or any other effect.
    type Slot = Result<(Write, Option<Vec<Bound>>), Effect>;
    let mut out: Vec<Slot> = Vec::new();
    for e in effects {
        let (write, bounds) = match e {
            Effect::Adjust { pk, sk, add, set } => ((pk, sk, add, set), None),
            Effect::AdjustIf {
                pk,
                sk,
                add,
                set,
                bounds,
            } => ((pk, sk, add, set), Some(bounds)),
            other => {
                out.push(Err(other));
                continue;
            }
        };
        let same = out.iter_mut().find_map(|o| match o {
            Ok((w, b)) if (&w.0, &w.1) == (&write.0, &write.1) => Some((w, b)),
            _ => None,
        });
        let Some((into, into_bounds)) = same else {
            out.push(Ok((write, bounds)));
            continue;
        };
        for (name, v) in write.2 {
            match into.2.iter_mut().find(|(n, _)| *n == name) {
                Some((_, sum)) => *sum = checked_add(*sum, v, "a merged write")?,
                None => into.2.push((name, v)),
            }
        }
        for (name, v) in write.3 {
            into.3.retain(|(n, _)| *n != name);
            into.3.push((name, v));
        }
        if let Some(bounds) = bounds {
            into_bounds.get_or_insert_with(Vec::new).extend(bounds);
        }
    }
    Ok(out
        .into_iter()
        .map(|o| match o {
            Ok(((pk, sk, add, set), None)) => Effect::Adjust { pk, sk, add, set },
            Ok(((pk, sk, add, set), Some(bounds))) => Effect::AdjustIf {
                pk,
                sk,
                add,
                set,
                bounds,
            },
            Err(other) => other,
        })
        .collect())
}
