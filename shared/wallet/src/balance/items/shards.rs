//! A wallet's balance split over K shard items, so that one tenant's movements spread over K
//! partitions (DynamoDB serves one item at about 1,000 write units a second). Shard 0 is the
//! wallet item itself (`pk = WALLET#{tenant}`, `sk = WALLET`: everything a wallet had before
//! shards, and its `shards` count, absent → 1); shard n (1 ≤ n < K) is `pk =
//! WALLET#{tenant}#S{n}`, `sk = SHARD#{n}`, holding only amounts: `balance`, `held`, `floor`
//! (0: the wallet's floor is shard 0's), `changes`, `debits_YYYY_MM`, the `overdrawn` / `review`
//! flags its movements raised. The wallet's figures are the sums (flags: any).
//!
//! A movement goes to one shard: the one its email's hold is on (a capture or release), else
//! the one its subject (message id, payment key) hashes to ([`pick`]). Each shard keeps its own
//! `available ≥ floor` for holds (shard 0's floor is the wallet's, the others' 0), so holds never
//! take the total below the wallet's floor; a shard too short for a hold the whole wallet can
//! afford is refilled from the others first ([`plan_refill`], one transaction of bounded moves).
//! The sort key `SHARD#{n}` is no wallet item's (`WALLET`), whatever a tenant is called.

use super::{marks_changes, number, required, wallet_pk, MONTH_DEBITS_PREFIX, WALLET_SK};
use crate::balance::model::ShardFigures;
use crate::balance::notices::Notices;
use crate::money::{Minor, Overflow};
use crate::tenant::TenantId;
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::store::attr::{get_bool, n, s};
use inbox_core::store::{Bound, Effect, Item};
use std::collections::BTreeMap;

/// The wallet item's count of shards (absent: 1).
pub const SHARDS_ATTR: &str = "shards";
/// The most shards a wallet may have (a refill moves from at most K − 1 shards in one
/// transaction, DynamoDB's limit being 100 items).
pub const MAX_SHARDS: u32 = 64;
pub const KIND_WALLET_SHARD: &str = "wallet_shard";
/// The count of refills an item took part in (every refill adds one to each shard it moves and
/// to the wallet item, in its transaction): a read of
/// the K shards that saw it unchanged before and after saw no refill in between.
pub const REFILLS_ATTR: &str = "refills";
pub const SHARD_PREFIX: &str = "SHARD#";

/// The key of shard `shard` of `tenant`'s wallet (shard 0: the wallet item).
pub fn shard_key(tenant: &str, shard: u32) -> (String, String) {
    if shard == 0 {
        (wallet_pk(tenant), WALLET_SK.to_owned())
    } else {
        (
            format!("{}#S{shard}", wallet_pk(tenant)),
            format!("{SHARD_PREFIX}{shard}"),
        )
    }
}

/// The shard (of `k`) a movement about `subject` goes to: FNV-1a of the subject, modulo `k`
/// (stable across processes and versions; 0 when `k ≤ 1`).
pub fn pick(subject: &str, k: u32) -> u32 {
    if k <= 1 {
        return 0;
    }
    let hash = subject.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    u32::try_from(hash % u64::from(k)).unwrap_or(0)
}

impl ShardFigures {
    /// Reads a shard item (or the wallet item, as shard 0).
    pub fn from_item(shard: u32, item: &Item) -> Result<Self, String> {
        let mut month_debits = BTreeMap::new();
        for k in item.keys() {
            if let Some(month) = k.strip_prefix(MONTH_DEBITS_PREFIX) {
                month_debits.insert(month.to_owned(), Minor::new(required(item, k)?));
            }
        }
        Ok(Self {
            shard,
            balance: Minor::new(required(item, "balance")?),
            held: Minor::new(required(item, "held")?),
            floor: Minor::new(number(item, "floor")?.unwrap_or(0)),
            changes: number(item, "changes")?.unwrap_or(0),
            month_debits,
            overdrawn: get_bool(item, "overdrawn").unwrap_or(false),
            review: get_bool(item, "review").unwrap_or(false),
            refills: refills(item),
        })
    }
}

/// The refills a wallet item counts (absent: 0).
pub(crate) fn refills(item: &Item) -> i64 {
    number(item, REFILLS_ATTR).ok().flatten().unwrap_or(0)
}

/// The count of shards a wallet item names (absent: 1).
pub(crate) fn count(item: &Item) -> Result<u32, String> {
    match number(item, SHARDS_ATTR)? {
        None => Ok(1),
        Some(k) if (1..=i64::from(MAX_SHARDS)).contains(&k) => Ok(u32::try_from(k).unwrap_or(1)),
        Some(k) => Err(format!("shards {k} is not between 1 and {MAX_SHARDS}")),
    }
}

/// A new, empty shard `shard` of `tenant`'s wallet (never over an existing one).
pub(crate) fn new_shard(tenant: &TenantId, shard: u32) -> Effect {
    let (pk, sk) = shard_key(tenant, shard);
    Effect::Create(Item::from([
        ("pk".to_string(), s(pk)),
        ("sk".to_string(), s(sk)),
        ("kind".to_string(), s(KIND_WALLET_SHARD)),
        ("tenant".to_string(), s(tenant)),
        ("shard".to_string(), n(i64::from(shard))),
        ("balance".to_string(), n(0)),
        ("held".to_string(), n(0)),
        ("floor".to_string(), n(0)),
        ("changes".to_string(), n(0)),
    ]))
}

/// The wallet item's write that raises its count of shards from `from` (as read) to `to`,
/// conditioned on the count read (absent counts as 1: then the new shards' `Create`s are what
/// two concurrent raises conflict on).
pub(crate) fn raise_count(tenant: &TenantId, from: u32, to: u32) -> Effect {
    let bounds = if from > 1 {
        vec![
            Bound::AtLeast(SHARDS_ATTR.into(), i64::from(from)),
            Bound::AtMost(SHARDS_ATTR.into(), i64::from(from)),
        ]
    } else {
        Vec::new()
    };
    Effect::AdjustIf {
        pk: wallet_pk(tenant),
        sk: WALLET_SK.into(),
        add: Vec::new(),
        set: vec![(SHARDS_ATTR.into(), n(i64::from(to)))],
        bounds,
    }
}

/// The bounds under which `part` (as read: balance b, held h, floor f) can give `amount` of its
/// surplus, or take a hold of `amount`, so that `balance − held − amount ≥ floor` on the stored
/// item at the write, whatever else moved on it since within the slack.
///
/// DynamoDB conditions cannot do arithmetic, so the sum is bounded term by term. With
/// `room = b − h − f − amount` (what the shard has above its floor after this movement, as read)
/// split in two, `lo = room / 2` and `hi = room − lo`, the bounds are
/// `balance ≥ b − lo`, `held ≤ h + hi` and `floor ≤ f`; on any stored item that meets them,
/// `balance − held − amount ≥ (b − lo) − (h + hi) − amount = b − h − room − amount = f ≥ floor`.
/// The read item meets them (`lo, hi ≥ 0`), so the write tolerates, between its read and its
/// write, captures and debits taking up to `lo` off the balance and concurrent holds adding up
/// to `hi` to the held amount (half the room each way), and any release or credit; only a raised
/// floor or more than that fails it (read again, retried). A movement the shard cannot afford as
/// read (`room < 0`) gets no slack: `held ≤ b − f − amount < h`, which the read item already fails.
pub(crate) fn affords(part: &ShardFigures, amount: i64) -> Result<Vec<Bound>, Overflow> {
    affords_after(part, amount, 0)
}

/// [`affords`] for a movement written together with a `credit` to the same shard in one write
/// (a refill's, in the hold's own transaction): the bounds are on the stored item before the
/// credit, the room counts it. With `room = b + credit − h − f − amount` split as in
/// [`affords`], an item meeting `balance ≥ b − lo`, `held ≤ h + hi`, `floor ≤ f` has
/// `balance + credit − held − amount ≥ b + credit − h − room − amount = f ≥ floor`.
pub(crate) fn affords_after(
    part: &ShardFigures,
    amount: i64,
    credit: i64,
) -> Result<Vec<Bound>, Overflow> {
    let overflow = || Overflow("the affordable amount".into());
    let room = part
        .surplus()?
        .get()
        .checked_add(credit)
        .and_then(|r| r.checked_sub(amount))
        .ok_or_else(overflow)?;
    let lo = room.max(0) / 2;
    let hi = room.checked_sub(lo).ok_or_else(overflow)?;
    Ok(vec![
        Bound::AtLeast(
            "balance".into(),
            part.balance.get().checked_sub(lo).ok_or_else(overflow)?,
        ),
        Bound::AtMost("floor".into(), part.floor.get()),
        Bound::AtMost(
            "held".into(),
            part.held.get().checked_add(hi).ok_or_else(overflow)?,
        ),
    ])
}

/// A movement's write on shard `shard` (`add`, `set`; with `bounds`: an `AdjustIf`, else an
/// unconditional `Adjust`), and its notices' attributes on the wallet item: in the same write
/// for shard 0, else a second one there (only when a notice is published or re-armed: rare).
pub(crate) fn shard_write(
    tenant: &TenantId,
    shard: u32,
    mut add: Vec<(String, i64)>,
    mut set: Vec<(String, AttributeValue)>,
    bounds: Option<Vec<Bound>>,
    notices: &Notices,
) -> Vec<Effect> {
    let (pk, sk) = shard_key(tenant, shard);
    let (mut marks_add, mut marks_set) = marks_changes(&notices.marks);
    let notices_write = if shard == 0 {
        add.append(&mut marks_add);
        set.append(&mut marks_set);
        None
    } else if notices.marks.is_empty() {
        None
    } else {
        Some(Effect::Adjust {
            pk: wallet_pk(tenant),
            sk: WALLET_SK.into(),
            add: marks_add,
            set: marks_set,
        })
    };
    let write = match bounds {
        None => Effect::Adjust { pk, sk, add, set },
        Some(bounds) => Effect::AdjustIf {
            pk,
            sk,
            add,
            set,
            bounds,
        },
    };
    std::iter::once(write).chain(notices_write).collect()
}

mod refill;
pub(crate) use refill::{merge_writes, refill};
pub use refill::{plan_refill, Transfer};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{prop_oneof, Just, ProptestConfig};

    fn part(shard: u32, balance: i64, held: i64, floor: i64) -> ShardFigures {
        ShardFigures {
            shard,
            balance: Minor::new(balance),
            held: Minor::new(held),
            floor: Minor::new(floor),
            ..ShardFigures::default()
        }
    }

    #[test]
    fn shard_zero_is_the_wallet_item_and_the_others_never_a_wallets_key() {
        assert_eq!(
            shard_key("acme", 0),
            ("WALLET#acme".into(), "WALLET".into())
        );
        assert_eq!(
            shard_key("acme", 3),
            ("WALLET#acme#S3".into(), "SHARD#3".into())
        );
        // A tenant named like a shard's partition: its wallet's sort key differs.
        assert_ne!(shard_key("acme#S3", 0).1, shard_key("acme", 3).1);
    }

    #[test]
    fn pick_is_stable_and_spreads() {
        assert_eq!(pick("m1", 1), 0);
        assert_eq!(pick("m1", 0), 0);
        assert_eq!(pick("m1", 8), pick("m1", 8));
        let mut seen = [0usize; 8];
        for i in 0..8000 {
            seen[pick(&format!("msg-{i}"), 8) as usize] += 1;
        }
        assert!(seen.iter().all(|c| (800..1200).contains(c)), "{seen:?}");
    }

    #[test]
    fn a_refill_takes_the_need_and_a_share_from_the_richest_first() {
        // (parts, target, need) → moves (from, amount)
        type Case = (Vec<ShardFigures>, u32, i64, Option<Vec<(u32, i64)>>);
        let cases: Vec<Case> = vec![
            (
                vec![part(0, 1000, 0, 0), part(1, 0, 0, 0)],
                1,
                10,
                Some(vec![(0, 10 + 990 / 2)]),
            ),
            (
                vec![part(0, 100, 0, 50), part(1, 0, 0, 0), part(2, 30, 0, 0)],
                1,
                60,
                Some(vec![(0, 50), (2, 10 + 6)]),
            ),
            // The others have less than the need: no refill (the wallet cannot afford it).
            (vec![part(0, 100, 0, 50), part(1, 0, 0, 0)], 1, 60, None),
            // A shard in deficit gives nothing.
            (
                vec![part(0, 100, 0, 0), part(1, -40, 0, 0), part(2, 0, 0, 0)],
                2,
                5,
                Some(vec![(0, 5 + 95 / 3)]),
            ),
            (vec![part(0, 100, 0, 0), part(1, 0, 0, 0)], 1, 0, None),
        ];
        for (parts, target, need, want) in cases {
            let got = plan_refill(&parts, target, need)
                .map(|ms| ms.iter().map(|m| (m.from, m.amount)).collect::<Vec<_>>());
            assert_eq!(got, want, "{parts:?} → {target} needs {need}");
        }
    }

    /// The (balance, held, floor) bounds of `affords` as a triple: (min balance, max held, max floor).
    fn bounds_of(bounds: &[Bound]) -> (i64, i64, i64) {
        let (mut balance, mut held, mut floor) = (None, None, None);
        for b in bounds {
            match b {
                Bound::AtLeast(a, v) if a == "balance" => balance = Some(*v),
                Bound::AtMost(a, v) if a == "held" => held = Some(*v),
                Bound::AtMost(a, v) if a == "floor" => floor = Some(*v),
                other => panic!("an unexpected bound {other:?}"),
            }
        }
        (balance.unwrap(), held.unwrap(), floor.unwrap())
    }

    #[test]
    fn a_hold_or_a_donor_is_bounded_with_half_the_room_each_way() {
        // (balance, held, floor, amount) → (balance ≥, held ≤, floor ≤)
        type Case = ((i64, i64, i64, i64), (i64, i64, i64));
        let cases: [Case; 7] = [
            // room 1000 − 200 − 100 − 50 = 650: 325 off the balance, 325 onto the held amount.
            ((1000, 200, 100, 50), (675, 525, 100)),
            // An odd room: the odd unit goes to the held side.
            ((100, 0, 0, 25), (63, 38, 0)),
            ((100, 0, 0, 24), (62, 38, 0)),
            // Exactly affordable: no slack, the old bound.
            ((100, 50, 25, 25), (100, 50, 25)),
            // One unit of room: all of it on the held side.
            ((100, 50, 25, 24), (100, 51, 25)),
            // Unaffordable as read: no slack, and the held bound is below what was read.
            ((100, 90, 0, 25), (100, 75, 0)),
            // A shard in deficit (debits overdrew it) with a negative balance.
            ((-40, 0, 0, 5), (-40, -45, 0)),
        ];
        for ((b, h, f, amount), want) in cases {
            let got = bounds_of(&affords(&part(1, b, h, f), amount).unwrap());
            assert_eq!(got, want, "(b, h, f, amount) = {:?}", (b, h, f, amount));
        }
        assert!(affords(&part(1, i64::MIN, 1, 0), 1).is_err());
    }

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Any stored item within the bounds leaves the shard at or above its floor after the
        /// movement (and the credit written with it), and the item as read is within them when
        /// it affords the movement.
        #[test]
        fn within_the_bounds_the_shard_stays_at_or_above_its_floor(
            b in -1_000_000i64..1_000_000,
            h in 0i64..1_000_000,
            f in 0i64..100_000,
            amount in 1i64..100_000,
            credit in prop_oneof![Just(0i64), 0i64..200_000],
            balance_off in 0i64..2_000_000,
            held_off in -1_000_000i64..2_000_000,
            floor_off in 0i64..100_000,
        ) {
            let read = part(1, b, h, f);
            let (min_balance, max_held, max_floor) =
                bounds_of(&affords_after(&read, amount, credit).unwrap());
            if credit == 0 {
                proptest::prop_assert_eq!(
                    affords(&read, amount).unwrap(),
                    affords_after(&read, amount, 0).unwrap()
                );
            }
            let room = b + credit - h - f - amount;
            // The read values meet the bounds exactly when the shard affords the movement.
            let meets = |balance: i64, held: i64, floor: i64| {
                balance >= min_balance && held <= max_held && floor <= max_floor
            };
            proptest::prop_assert_eq!(meets(b, h, f), room >= 0);
            // A stored item somewhere around the read one (balance down or up, held up or down,
            // floor down): within the bounds, it affords the movement.
            let (balance, held, floor) = (b - balance_off + 1_000_000, h + held_off, f - floor_off);
            if meets(balance, held, floor) {
                proptest::prop_assert!(balance + credit - held - amount >= floor);
            }
            // The slack: half the room each way.
            if room >= 0 {
                proptest::prop_assert_eq!((b - min_balance, max_held - h), (room / 2, room - room / 2));
            }
        }
    }

    #[test]
    fn a_hold_written_with_a_refills_credit_counts_it_in_its_room() {
        // An empty shard credited 30 for a hold of 25: room 5, 2 off the stored balance (0,
        // before the credit), 3 onto its held amount.
        let got = bounds_of(&affords_after(&part(1, 0, 0, 0), 25, 30).unwrap());
        assert_eq!(got, (-2, 3, 0));
        // Credited exactly the need: no slack.
        let got = bounds_of(&affords_after(&part(1, 10, 0, 0), 25, 15).unwrap());
        assert_eq!(got, (10, 0, 0));
    }

    #[test]
    fn an_items_writes_in_one_transaction_merge_into_one() {
        let adjust = |sk: &str, add: Vec<(&str, i64)>, bounds: Option<Vec<Bound>>| {
            let add = add.into_iter().map(|(a, v)| (a.to_string(), v)).collect();
            let (pk, sk) = ("P".to_string(), sk.to_string());
            match bounds {
                None => Effect::Adjust {
                    pk,
                    sk,
                    add,
                    set: vec![],
                },
                Some(bounds) => Effect::AdjustIf {
                    pk,
                    sk,
                    add,
                    set: vec![],
                    bounds,
                },
            }
        };
        let created = Effect::Create(Item::from([("pk".to_string(), s("P"))]));
        let merged = merge_writes(vec![
            adjust("A", vec![("balance", 30), ("refills", 1)], Some(vec![])),
            created.clone(),
            adjust("B", vec![("balance", -30)], None),
            adjust(
                "A",
                vec![("held", 25), ("balance", 5)],
                Some(vec![Bound::AtMost("held".into(), 3)]),
            ),
            adjust("B", vec![("changes", 1)], None),
        ])
        .unwrap();
        assert_eq!(
            merged,
            vec![
                adjust(
                    "A",
                    vec![("balance", 35), ("refills", 1), ("held", 25)],
                    Some(vec![Bound::AtMost("held".into(), 3)])
                ),
                created,
                adjust("B", vec![("balance", -30), ("changes", 1)], None),
            ]
        );
        // An unconditional write folded into a conditional one stays conditional.
        let merged = merge_writes(vec![
            adjust("A", vec![("held", 1)], None),
            adjust("A", vec![], Some(vec![Bound::AtLeast("balance".into(), 0)])),
        ])
        .unwrap();
        assert_eq!(
            merged,
            vec![adjust(
                "A",
                vec![("held", 1)],
                Some(vec![Bound::AtLeast("balance".into(), 0)])
            )]
        );
    }

    #[test]
    fn a_refills_writes_bound_each_donor_and_credit_the_target() {
        let parts = [part(0, 100, 20, 10), part(1, 0, 0, 0)];
        let moves = plan_refill(&parts, 1, 30).unwrap();
        let effects = refill(&TenantId::parse("acme").unwrap(), &parts, &moves).unwrap();
        let Effect::AdjustIf {
            pk, add, bounds, ..
        } = &effects[0]
        else {
            panic!("{effects:?}")
        };
        assert_eq!(pk, "WALLET#acme");
        assert_eq!(
            add,
            &vec![
                ("balance".to_string(), -(30 + 40 / 2)),
                ("refills".to_string(), 1)
            ]
        );
        // room = 100 − 20 − 10 − 50 = 20, half of it slack each way.
        assert_eq!(
            bounds,
            &vec![
                Bound::AtLeast("balance".into(), 100 - 10),
                Bound::AtMost("floor".into(), 10),
                Bound::AtMost("held".into(), 20 + 10),
            ]
        );
        let Effect::AdjustIf {
            pk, add, bounds, ..
        } = &effects[1]
        else {
            panic!("{effects:?}")
        };
        assert_eq!(
            (pk.as_str(), add, bounds.len()),
            (
                "WALLET#acme#S1",
                &vec![("balance".to_string(), 50), ("refills".to_string(), 1)],
                0
            )
        );
        assert_eq!(effects.len(), 2);
        // Between two other shards: the counter in a third write.
        let parts = [part(0, 0, 0, 0), part(1, 0, 0, 0), part(2, 90, 0, 0)];
        let effects = refill(
            &TenantId::parse("acme").unwrap(),
            &parts,
            &plan_refill(&parts, 1, 10).unwrap(),
        )
        .unwrap();
        let Effect::Adjust { pk, add, .. } = &effects[2] else {
            panic!("{effects:?}")
        };
        assert_eq!(
            (pk.as_str(), add),
            ("WALLET#acme", &vec![("refills".to_string(), 1)])
        );
    }
}
