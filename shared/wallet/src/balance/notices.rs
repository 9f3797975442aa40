//! What a wallet's movements announce besides the money: `wallet.low_balance` when the wallet
//! crosses into "cannot afford one more send at its price" (`available − price < floor`), once
//! per crossing, and `wallet.review_threshold_reached` when a month's debits pass the review
//! threshold, once per month; both through the outbox in the transaction of the movement
//! ([`crate::balance::events`]), and the wallet attributes that remember them.
//!
//! [`notices`] is a pure function of the wallet as the movement read it:
//!
//! - **low**: the wallet's `low` says the last crossing was announced. A movement after which the
//!   wallet is low publishes the next crossing (`low_crossings` as read, plus one: the event's
//!   id), sets `low` and adds one to `low_crossings`, unless it read the wallet already low *and*
//!   flagged so; a movement after which it is not low clears `low` (re-arms). Movements that read
//!   the same wallet publish the same event, so concurrent ones that each see the crossing make one
//!   between them; the counter only grows (an `ADD`), so a crossing's id is never used again.
//! - **review**: a movement after which the month's debits are above the threshold publishes the
//!   month's event (its id is the tenant and the month) unless the wallet says that month was
//!   reported (`review_reported`), and sets it.
//!
//! The wallet's amounts are adjusted unconditionally (commutative `ADD`s, no version): a movement
//! decides on the wallet as it read it, and movements processed at the same time on one wallet
//! do not see each other. What that can do, at worst: movements that cross together without
//! either seeing it are announced by the next movement on the wallet (level-triggered: late,
//! not lost while the wallet moves); a movement whose read predates a concurrent top-up can
//! announce a crossing that top-up undid (one event too many) or mark the wallet low again, so
//! that the next real crossing is announced only if that movement read it above the line. No
//! crossing as one read saw it is ever announced twice, and no month twice.
//!
//! A wallet of K > 1 shards with its function instance's view ([`crate::balance::views`],
//! `WALLET_VIEW_MS`): a movement reads its own shard fresh and the wallet item and the other
//! shards from a copy at most that old, so the notices (and the overdrawn / review flags) see the
//! other shards' movements up to `WALLET_VIEW_MS` late: the window in which movements do not see
//! each other widens from a read's round trip to the view's age. Nothing more than that: late,
//! not lost (level-triggered), never announced twice (the ids are deterministic, the events'
//! writes `CreateIfAbsent`), and the money is never wrong (holds are bounded writes on their own
//! shard, read fresh).
//!
//! The webhook-driven movements (`handler`) and the API's holds (`holds`) both call [`notices`].

use crate::balance::events::WalletEvent;
use crate::balance::model::{month_of, Wallet};
use crate::balance::rules::Movement;
use crate::money::{Money, Overflow};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::metrics::Metric;

/// The events, the wallet's marks and the metrics a movement's notices add to its commit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notices {
    /// What the wallet remembers of them, written by the movement's own wallet write (the items
    /// layer knows the attributes: [`crate::balance::items`]).
    pub marks: Marks,
    /// Emitted once the commit is made.
    pub metrics: Vec<Metric>,
    /// The events to publish, in the movement's transaction (the items layer writes them to the
    /// outbox: `crate::balance::items::notice_writes`).
    pub events: Vec<WalletEvent>,
}

/// What a movement changes in the wallet's memory of its notices (the [`Wallet`]'s `low`,
/// `low_crossings` and `review_reported`): the decision, kept apart from how the wallet item
/// stores it, so that the rules can be read and tested without the item layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// `low` becomes this (`None`: left as it is).
    pub low: Option<bool>,
    /// One more crossing into low is counted (`low_crossings` + 1, a commutative add, so that a
    /// crossing's id is never used again).
    pub crossed: bool,
    /// The month whose review was announced: `review_reported` becomes it.
    pub review_reported: Option<String>,
}

impl Marks {
    /// Whether it changes nothing (then a shard's movement needs no second write on the wallet
    /// item).
    pub fn is_empty(&self) -> bool {
        self.low.is_none() && !self.crossed && self.review_reported.is_none()
    }
}

/// Whether a wallet with these amounts cannot afford one more send at `price`:
/// `balance − held − price < floor` (exact, whatever the amounts).
pub fn is_low(balance: Money, held: Money, floor: Money, price: Money) -> bool {
    i128::from(balance.minor()) - i128::from(held.minor()) - i128::from(price.minor())
        < i128::from(floor.minor())
}

/// A crossing into low was announced.
fn low_balance(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "WalletLowBalance", 1)
        .with_property("Tenant", tenant)
        .with_note("the wallet can no longer afford one more send; wallet.low_balance published")
}

/// A month's debits passed the review threshold (announced once per month).
fn review_reached(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "WalletReviewThresholdReached", 1)
        .with_property("Tenant", tenant)
        .with_note("the month's debits passed the review threshold; wallet.review_threshold_reached published")
}

/// The notices of `moves` applied to `wallet` (as read) by an event or request at `at_ms`.
pub fn notices(wallet: &Wallet, moves: &[Movement], at_ms: i64) -> Result<Notices, Overflow> {
    let mut out = Notices::default();
    if moves.is_empty() {
        return Ok(out);
    }
    let before = wallet.view(at_ms);
    let mut after = before;
    for mv in moves {
        after = after.after(mv)?;
    }
    let price = wallet.message_price;
    let was_low = is_low(before.balance, before.held, before.floor, price);
    let now_low = is_low(after.balance, after.held, after.floor, price);
    if now_low && !(wallet.low && was_low) {
        let crossing = wallet
            .low_crossings
            .checked_add(1)
            .ok_or_else(|| Overflow("the low-balance crossings".into()))?;
        let event = WalletEvent::LowBalance {
            tenant: wallet.tenant.clone(),
            crossing,
            available: after.available()?,
            floor: wallet.floor,
            price,
        };
        out.events.push(event);
        out.marks.low = Some(true);
        out.marks.crossed = true;
        out.metrics.push(low_balance(&wallet.tenant));
    } else if !now_low && wallet.low {
        out.marks.low = Some(false);
    }
    let month = month_of(at_ms);
    if let Some(threshold) = wallet.review_threshold {
        let reported = wallet.review_reported.as_deref() == Some(month.as_str());
        if after.month_debits.minor() > threshold.minor() && !reported {
            let event = WalletEvent::ReviewThresholdReached {
                tenant: wallet.tenant.clone(),
                month: month.clone(),
                debits: after.month_debits,
                threshold,
            };
            out.events.push(event);
            out.marks.review_reported = Some(month);
            out.metrics.push(review_reached(&wallet.tenant));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::rules::{self, EmailEvent, EmailState};
    use crate::money::Currency;
    use crate::tenant::TenantId;
    use inbox_core::clock::Millis;

    const T0: i64 = 1_795_000_000_000; // 2026-11-18
    const PRICE: i64 = 5;

    /// Available before, `low` as read, the movement → publishes a crossing?, `low` set to, what.
    type LowCase = (i64, bool, Movement, bool, Option<bool>, &'static str);
    /// The month's debits before, the month reported, the movements, when → publishes?, what.
    type ReviewCase = (
        i64,
        Option<&'static str>,
        Vec<Movement>,
        i64,
        bool,
        &'static str,
    );

    fn usd(minor: i64) -> Money {
        Currency::parse("usd").unwrap().amount(minor)
    }

    /// A wallet with `available` (all balance), a floor of 20 and a review threshold of 100.
    fn wallet(available: i64, low: bool, month_debits: i64) -> Wallet {
        let mut w = Wallet::new(
            TenantId::parse("acme").unwrap(),
            usd(PRICE),
            usd(20),
            Some(usd(100)),
            T0,
        );
        w.balance = usd(available);
        w.low = low;
        w.low_crossings = 3;
        w.month_debits
            .insert(month_of(T0), crate::money::Minor::new(month_debits));
        w
    }

    fn moved(state: EmailState, event: EmailEvent) -> Movement {
        rules::email(state, event, usd(PRICE)).1.unwrap()
    }

    fn debit() -> Movement {
        moved(EmailState::New, EmailEvent::Accepted)
    }

    fn hold() -> Movement {
        moved(EmailState::New, EmailEvent::Sent)
    }

    fn refund() -> Movement {
        moved(
            EmailState::Debited,
            EmailEvent::Bounced(rules::Bounce::Hard),
        )
    }

    fn types(n: &Notices) -> Vec<&'static str> {
        n.events.iter().map(WalletEvent::event_type).collect()
    }

    fn low_set(n: &Notices) -> Option<bool> {
        n.marks.low
    }

    #[test]
    fn the_line_is_one_more_send_at_the_price() {
        // floor 20, price 5: 25 affords one more, 24 does not.
        assert!(!is_low(usd(25), usd(0), usd(20), usd(5)));
        assert!(is_low(usd(24), usd(0), usd(20), usd(5)));
        assert!(is_low(usd(30), usd(6), usd(20), usd(5)), "held counts");
        assert!(!is_low(usd(0), usd(0), usd(-5), usd(5)), "credit allowed");
        assert!(is_low(
            usd(i64::MIN),
            usd(i64::MAX),
            usd(i64::MAX),
            usd(i64::MAX)
        ));
        assert!(!is_low(usd(i64::MAX), usd(i64::MIN), usd(i64::MIN), usd(0)));
    }

    #[test]
    fn low_balance_once_per_crossing_and_rearmed_by_a_way_back() {
        let cases: [LowCase; 8] = [
            (29, false, debit(), true, Some(true), "29 → 24: crosses"),
            (29, false, hold(), true, Some(true), "a hold crosses alike"),
            (
                25,
                false,
                refund(),
                false,
                None,
                "a refund moves away from the line",
            ),
            (
                24,
                true,
                debit(),
                false,
                None,
                "already low and flagged: nothing",
            ),
            (
                24,
                true,
                refund(),
                false,
                Some(false),
                "back to 29: re-armed",
            ),
            (
                24,
                false,
                refund(),
                false,
                None,
                "back above, never flagged: nothing",
            ),
            (
                15,
                false,
                refund(),
                true,
                Some(true),
                "low as read, not flagged: announced late",
            ),
            (
                29,
                true,
                debit(),
                true,
                Some(true),
                "flagged but read above: a new crossing",
            ),
        ];
        for (available, low, mv, publishes, sets, what) in cases {
            let n = notices(&wallet(available, low, 0), &[mv], T0).unwrap();
            assert_eq!(
                types(&n).contains(&"wallet.low_balance"),
                publishes,
                "{what}"
            );
            assert_eq!(low_set(&n), sets, "{what}");
        }
        // 30 → 25 still affords one more send: nothing at all.
        let n = notices(&wallet(30, false, 0), &[debit()], T0).unwrap();
        assert_eq!(n, Notices::default());
    }

    #[test]
    fn a_crossing_is_the_next_count_and_its_event_says_where_the_wallet_stands() {
        let n = notices(&wallet(29, false, 0), &[debit()], T0).unwrap();
        assert_eq!(
            n.events,
            vec![WalletEvent::LowBalance {
                tenant: TenantId::parse("acme").unwrap(),
                crossing: 4,
                available: usd(24),
                floor: usd(20),
                price: usd(PRICE),
            }]
        );
        assert_eq!(n.events[0].id(), "wevt_acme_low_4");
        assert!(n.marks.crossed);
        let body = n.events[0].body(Millis::new(T0));
        assert_eq!(body["type"], "wallet.low_balance");
        assert_eq!(
            body["data"],
            serde_json::json!({"tenant": "acme", "crossing": 4, "available": 24, "floor": 20,
                "price": 5, "currency": "usd"})
        );
        assert_eq!(n.metrics.len(), 1);
        // Two movements that read the same wallet publish the same event.
        let again = notices(&wallet(29, false, 0), &[hold()], T0 + 1).unwrap();
        assert_eq!(again.events[0].id(), n.events[0].id());
    }

    #[test]
    fn review_once_per_month_when_the_debits_pass_the_threshold() {
        let next_month = T0 + 31 * 86_400_000;
        let cases: [ReviewCase; 7] = [
            (
                95,
                None,
                vec![debit()],
                T0,
                false,
                "exactly at the threshold",
            ),
            (96, None, vec![debit()], T0, true, "past it"),
            (
                96,
                Some("2026_11"),
                vec![debit()],
                T0,
                false,
                "reported this month",
            ),
            (
                96,
                Some("2026_10"),
                vec![debit()],
                T0,
                true,
                "reported last month only",
            ),
            (
                200,
                None,
                vec![hold()],
                T0,
                true,
                "above already, not reported: announced late",
            ),
            (
                200,
                None,
                vec![debit()],
                next_month,
                false,
                "a new month starts at 0",
            ),
            (
                96,
                None,
                vec![hold(), refund()],
                T0,
                false,
                "holds and refunds are no debits",
            ),
        ];
        for (debits, reported, moves, at, publishes, what) in cases {
            let mut w = wallet(10_000, false, debits);
            w.review_reported = reported.map(str::to_owned);
            let n = notices(&w, &moves, at).unwrap();
            assert_eq!(
                types(&n).contains(&"wallet.review_threshold_reached"),
                publishes,
                "{what}"
            );
            let sets_month = n.marks.review_reported.is_some();
            assert_eq!(sets_month, publishes, "{what}");
        }
        let n = notices(&wallet(10_000, false, 96), &[debit()], T0).unwrap();
        assert_eq!(n.events[0].id(), "wevt_acme_review_2026_11");
        assert_eq!(
            n.events[0].body(Millis::new(T0))["data"],
            serde_json::json!({"tenant": "acme", "month": "2026_11", "debits": 101,
                "threshold": 100, "currency": "usd"})
        );
        let mut none = wallet(10_000, false, 500);
        none.review_threshold = None;
        assert!(notices(&none, &[debit()], T0).unwrap().events.is_empty());
    }

    #[test]
    fn both_at_once_and_overflow_is_refused() {
        let n = notices(&wallet(29, false, 96), &[debit()], T0).unwrap();
        assert_eq!(
            types(&n),
            vec!["wallet.low_balance", "wallet.review_threshold_reached"]
        );
        assert!(notices(&wallet(29, false, 0), &[], T0)
            .unwrap()
            .events
            .is_empty());
        let mut full = wallet(29, false, i64::MAX);
        full.review_threshold = Some(usd(1));
        assert!(notices(&full, &[debit()], T0).is_err());
        let mut counted = wallet(29, false, 0);
        counted.low_crossings = i64::MAX;
        assert!(notices(&counted, &[debit()], T0).is_err());
    }

    #[test]
    fn a_new_wallet_that_cannot_afford_a_send_starts_low() {
        let empty = Wallet::new(TenantId::parse("a").unwrap(), usd(5), usd(2000), None, T0);
        assert!(
            empty.low,
            "no announcement for a wallet that never had the money"
        );
        let credit = Wallet::new(TenantId::parse("a").unwrap(), usd(5), usd(-5), None, T0);
        assert!(!credit.low);
    }
}
