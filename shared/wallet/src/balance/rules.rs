//! The wallet's rules as pure functions: given the state read and one event, the next state and
//! the money movement ([`Money`], in the wallet's currency). No I/O, no clock, checked arithmetic
//! (an [`Overflow`] is refused, never wrapped); exhaustively tested here and against a reference
//! model (proptest) in `tests.rs`. A payment's state ([`PaymentState`]) is in minor units of the
//! wallet's currency, as its row stores it. Autopay's ledger rule (a hold or debit at the
//! threshold makes one attempt, the monthly cap): [`crate::autopay::rules`].

use crate::money::{checked_add, checked_sub, Currency, Money, Overflow};
use serde::{Deserialize, Serialize};

/// What a ledger entry records. Each kind has fixed signs on `balance` and `held`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A Stripe payment credited: balance +a.
    Topup,
    /// A Stripe refund of a top-up: balance −a.
    TopupRefund,
    /// A message sent: held +a.
    Hold,
    /// A hard bounce before acceptance: held −a.
    HoldRelease,
    /// A message accepted: balance −a (and held −a when it was held).
    Debit,
    /// A hard bounce after acceptance: balance +a.
    BounceRefund,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Topup => "topup",
            Self::TopupRefund => "topup_refund",
            Self::Hold => "hold",
            Self::HoldRelease => "hold_release",
            Self::Debit => "debit",
            Self::BounceRefund => "bounce_refund",
        }
    }
}

/// One money movement: its kind, its (positive) amount and its effect on balance and held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Movement {
    pub kind: EntryKind,
    pub amount: Money,
    pub balance_delta: Money,
    pub held_delta: Money,
}

impl Movement {
    fn new(kind: EntryKind, amount: Money, from_hold: bool) -> Self {
        let a = amount.minor();
        let (balance_delta, held_delta) = match kind {
            EntryKind::Topup | EntryKind::BounceRefund => (a, 0),
            EntryKind::TopupRefund => (-a, 0),
            EntryKind::Hold => (0, a),
            EntryKind::HoldRelease => (0, -a),
            EntryKind::Debit if from_hold => (-a, -a),
            EntryKind::Debit => (-a, 0),
        };
        let currency = amount.currency();
        Self {
            kind,
            amount,
            balance_delta: currency.amount(balance_delta),
            held_delta: currency.amount(held_delta),
        }
    }
}

/// Where one email stands, money-wise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EmailState {
    /// No money event yet.
    #[default]
    New,
    /// Sent: its price is held.
    Held,
    /// Accepted by the receiving server: debited.
    Debited,
    /// Hard-bounced while held: the hold was released.
    Released,
    /// Hard-bounced after the debit: refunded.
    Refunded,
    /// Hard-bounced before any money moved: nothing will move any more.
    Void,
    /// Held past its expiry: the hold was released by the sweep. The email may still have been
    /// sent: a late acceptance debits it once (even below the floor, flagged), a hard bounce
    /// ends it as released.
    Expired,
}

/// How an email bounced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bounce {
    /// Permanent: the address will never take it (releases the hold or refunds the debit).
    Hard,
    /// Temporary: the provider may try again; no money moves.
    Soft,
}

/// A delivery event of one email, as the messaging provider reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmailEvent {
    Sent,
    Accepted,
    /// A hard bounce releases or refunds; a soft one moves no money.
    Bounced(Bounce),
    Deferred,
    /// A complaint is not a bounce: no money moves.
    Complained,
    /// The sender released its hold (the wallet API: a send that was never made): a held email
    /// is released; any other state stays as it is.
    Cancelled,
    /// The hold's expiry passed (the sweep): a held email is released; any other state stays.
    Expired,
}

/// The next state of an email and the movement it causes (if any). `amount` is the email's price:
/// the price held or debited first, carried on for its release or refund.
pub fn email(
    state: EmailState,
    event: EmailEvent,
    amount: Money,
) -> (EmailState, Option<Movement>) {
    use EmailEvent::*;
    use EmailState::*;
    let moved = |kind, from_hold| Some(Movement::new(kind, amount, from_hold));
    match (state, event) {
        (New, Sent) => (Held, moved(EntryKind::Hold, false)),
        (New, Accepted) => (Debited, moved(EntryKind::Debit, false)),
        (Held, Accepted) => (Debited, moved(EntryKind::Debit, true)),
        (New, Bounced(Bounce::Hard)) => (Void, None),
        (Held, Bounced(Bounce::Hard) | Cancelled) => {
            (Released, moved(EntryKind::HoldRelease, false))
        }
        (Held, EmailEvent::Expired) => (EmailState::Expired, moved(EntryKind::HoldRelease, false)),
        (Debited, Bounced(Bounce::Hard)) => (Refunded, moved(EntryKind::BounceRefund, false)),
        // The capture after the expiry: the email was sent, so it is debited once, directly
        // (nothing is held any more), whatever the floor; a hard bounce ends it released.
        (EmailState::Expired, Accepted) => (Debited, moved(EntryKind::Debit, false)),
        (EmailState::Expired, Bounced(Bounce::Hard)) => (Released, None),
        (EmailState::Expired, _) => (state, None),
        // Already held or debited: a repeated or late `sent` changes nothing.
        (Held | Debited, Sent) | (Debited, Accepted) => (state, None),
        // After a hard bounce nothing moves again (a late `accepted` does not debit).
        (Released | Refunded | Void, _) => (state, None),
        // Soft bounces, deferrals and complaints are recorded only; nothing held, nothing to
        // release.
        (_, Bounced(Bounce::Soft) | Deferred | Complained)
        | (New | Debited, Cancelled | EmailEvent::Expired) => (state, None),
    }
}

/// Where a payment's funds stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Funds {
    /// No outcome known yet (e.g. only a refund or a failure arrived so far).
    #[default]
    Unknown,
    /// The checkout completed with a delayed method (`payment_status: unpaid`): awaiting funds.
    Awaiting,
    /// Paid: credited once.
    Paid,
    /// The delayed payment failed: nothing was credited.
    Failed,
}

/// Money state of one payment (a Stripe payment intent, or a checkout session without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PaymentState {
    pub funds: Funds,
    /// The amount a checkout awaiting funds expects (shown to operators; moves nothing).
    pub expected: i64,
    /// Credited so far (0 until the first success event).
    pub credited: i64,
    /// The largest cumulative `amount_refunded` Stripe reported for the payment.
    pub refund_total: i64,
    /// Taken back so far: `min(refund_total, credited)` once settled — never more than credited.
    pub refunded: i64,
}

/// A payment event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentEvent {
    /// `checkout.session.completed` with `payment_status: paid`,
    /// `checkout.session.async_payment_succeeded` or `payment_intent.succeeded`: credit `amount`
    /// once per payment.
    Paid { amount: i64 },
    /// `checkout.session.completed` with `payment_status: unpaid` (a delayed method: ACH, SEPA, …):
    /// the payment is recorded as awaiting `amount`; no money moves.
    AwaitingFunds { amount: i64 },
    /// `checkout.session.async_payment_failed`: recorded; no money moves.
    PaymentFailed,
    /// `charge.refunded`: the cumulative refunded amount (so each refund counts once, in any order).
    Refunded { total: i64 },
}

/// The next state of a payment and the movements it causes, in `currency` (a credit may bring a
/// refund that arrived before it: then two). A refund never takes back more than was credited:
/// what was refunded beyond it is remembered and taken back if a credit comes later.
pub fn payment(
    state: PaymentState,
    event: PaymentEvent,
    currency: Currency,
) -> Result<(PaymentState, Vec<Movement>), Overflow> {
    let mut next = state;
    let mut moved = Vec::new();
    match event {
        PaymentEvent::Paid { amount } if state.credited == 0 => {
            next.funds = Funds::Paid;
            if amount > 0 {
                next.credited = amount;
                moved.push(Movement::new(
                    EntryKind::Topup,
                    currency.amount(amount),
                    false,
                ));
            }
        }
        PaymentEvent::Paid { .. } => {}
        PaymentEvent::AwaitingFunds { amount } => {
            if state.funds == Funds::Unknown {
                next.funds = Funds::Awaiting;
                next.expected = amount;
            }
        }
        PaymentEvent::PaymentFailed => {
            if matches!(state.funds, Funds::Unknown | Funds::Awaiting) {
                next.funds = Funds::Failed;
            }
        }
        PaymentEvent::Refunded { total } => next.refund_total = state.refund_total.max(total),
    }
    let due = next.refund_total.min(next.credited);
    if due > next.refunded {
        let take = checked_sub(due, next.refunded, "the refund")?;
        next.refunded = due;
        moved.push(Movement::new(
            EntryKind::TopupRefund,
            currency.amount(take),
            false,
        ));
    }
    Ok((next, moved))
}

/// Flags a movement raises on its wallet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// The movement takes `available` below the tenant's floor (it is recorded all the same).
    pub overdrawn: bool,
    /// The month's debits pass the soft-review threshold.
    pub review: bool,
}

impl std::ops::BitOr for Flags {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self {
            overdrawn: self.overdrawn || other.overdrawn,
            review: self.review || other.review,
        }
    }
}

/// The wallet figures a rule needs (as read; balances move by commutative adds), all in the
/// wallet's currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalletView {
    pub balance: Money,
    pub held: Money,
    /// `available` may not go below this (0 by default; negative allows credit).
    pub floor: Money,
    /// This month's debits so far.
    pub month_debits: Money,
    /// Debits in a month above this flag the tenant for review.
    pub review_threshold: Option<Money>,
}

impl WalletView {
    /// An empty wallet in `currency`: nothing held, nothing debited, the floor at 0.
    pub fn empty(currency: Currency) -> Self {
        Self {
            balance: currency.amount(0),
            held: currency.amount(0),
            floor: currency.amount(0),
            month_debits: currency.amount(0),
            review_threshold: None,
        }
    }

    /// `balance − held`.
    pub fn available(&self) -> Result<Money, Overflow> {
        self.balance.checked_sub(self.held, "the available amount")
    }

    /// The wallet after `m`: every figure checked, so a movement that would overflow the stored
    /// balance, held amount or month's debits is refused before it is written.
    pub fn after(&self, m: &Movement) -> Result<Self, Overflow> {
        let month_debits = if m.kind == EntryKind::Debit {
            self.month_debits
                .checked_add(m.amount, "the month's debits")?
        } else {
            self.month_debits
        };
        Ok(Self {
            balance: self.balance.checked_add(m.balance_delta, "the balance")?,
            held: self.held.checked_add(m.held_delta, "the held amount")?,
            month_debits,
            ..*self
        })
    }
}

/// The flags a movement raises on a wallet as read.
pub fn flags(wallet: &WalletView, m: &Movement) -> Result<Flags, Overflow> {
    let (held_delta, balance_delta) = (m.held_delta.minor(), m.balance_delta.minor());
    // What it takes from `available`: a hold or a debit; a capture (debit of a hold) takes nothing new.
    let takes = checked_add(
        checked_sub(held_delta.max(0), balance_delta.min(0), "the movement")?,
        held_delta.min(0),
        "the movement",
    )?;
    let reserves = matches!(m.kind, EntryKind::Hold | EntryKind::Debit);
    let after = checked_sub(wallet.available()?.minor(), takes, "the available amount")?;
    let review = match wallet.review_threshold {
        Some(t) if m.kind == EntryKind::Debit => {
            wallet
                .month_debits
                .checked_add(m.amount, "the month's debits")?
                .minor()
                > t.minor()
        }
        _ => false,
    };
    Ok(Flags {
        overdrawn: reserves && takes > 0 && after < wallet.floor.minor(),
        review,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use EmailEvent::*;

    fn usd(minor: i64) -> Money {
        c().amount(minor)
    }

    fn c() -> Currency {
        Currency::parse("usd").unwrap()
    }
    use EmailState::*;

    const ALL_EVENTS: [EmailEvent; 8] = [
        Sent,
        Accepted,
        Bounced(Bounce::Hard),
        Bounced(Bounce::Soft),
        Deferred,
        Complained,
        Cancelled,
        EmailEvent::Expired,
    ];
    const ALL_STATES: [EmailState; 7] = [
        New,
        Held,
        Debited,
        Released,
        Refunded,
        Void,
        EmailState::Expired,
    ];

    #[test]
    fn every_email_transition() {
        let hold = Some(Movement {
            kind: EntryKind::Hold,
            amount: usd(5),
            balance_delta: usd(0),
            held_delta: usd(5),
        });
        let debit = Some(Movement {
            kind: EntryKind::Debit,
            amount: usd(5),
            balance_delta: usd(-5),
            held_delta: usd(0),
        });
        let capture = Some(Movement {
            kind: EntryKind::Debit,
            amount: usd(5),
            balance_delta: usd(-5),
            held_delta: usd(-5),
        });
        let release = Some(Movement {
            kind: EntryKind::HoldRelease,
            amount: usd(5),
            balance_delta: usd(0),
            held_delta: usd(-5),
        });
        let refund = Some(Movement {
            kind: EntryKind::BounceRefund,
            amount: usd(5),
            balance_delta: usd(5),
            held_delta: usd(0),
        });
        let expected = |state, event| match (state, event) {
            (New, Sent) => (Held, hold),
            (New, Accepted) => (Debited, debit),
            (Held, Accepted) => (Debited, capture),
            (New, Bounced(Bounce::Hard)) => (Void, None),
            (Held, Bounced(Bounce::Hard) | Cancelled) => (Released, release),
            (Held, EmailEvent::Expired) => (EmailState::Expired, release),
            (Debited, Bounced(Bounce::Hard)) => (Refunded, refund),
            (EmailState::Expired, Accepted) => (Debited, debit),
            (EmailState::Expired, Bounced(Bounce::Hard)) => (Released, None),
            (s, _) => (s, None),
        };
        for state in ALL_STATES {
            for event in ALL_EVENTS {
                assert_eq!(
                    email(state, event, usd(5)),
                    expected(state, event),
                    "{state:?} + {event:?}"
                );
            }
        }
    }

    #[test]
    fn a_capture_after_the_expiry_debits_once_below_the_floor_and_is_flagged() {
        let (expired, release) = email(Held, EmailEvent::Expired, usd(5));
        assert_eq!(expired, EmailState::Expired);
        assert_eq!(release.map(|m| m.held_delta), Some(usd(-5)));
        let (debited, debit) = email(expired, Accepted, usd(5));
        let debit = debit.unwrap();
        assert_eq!((debited, debit.kind), (Debited, EntryKind::Debit));
        assert_eq!((debit.balance_delta, debit.held_delta), (usd(-5), usd(0)));
        assert_eq!(email(debited, Accepted, usd(5)), (Debited, None), "once");
        let empty = WalletView::empty(c());
        assert!(
            flags(&empty, &debit).unwrap().overdrawn,
            "below the floor: recorded and flagged"
        );
        // The other way round: captured first, the sweep finds nothing to expire.
        let (captured, _) = email(Held, Accepted, usd(5));
        assert_eq!(
            email(captured, EmailEvent::Expired, usd(5)),
            (Debited, None)
        );
        // Expired, then a hard bounce: released for good; a later acceptance moves nothing.
        let (bounced, none) = email(expired, Bounced(Bounce::Hard), usd(5));
        assert_eq!((bounced, none), (Released, None));
        assert_eq!(email(bounced, Accepted, usd(5)), (Released, None));
    }

    #[test]
    fn terminal_email_states_absorb_everything() {
        for state in [Released, Refunded, Void] {
            for event in ALL_EVENTS {
                assert_eq!(email(state, event, usd(5)), (state, None));
            }
        }
    }

    fn kinds(moved: &[Movement]) -> Vec<(EntryKind, i64)> {
        moved
            .iter()
            .map(|m| (m.kind, m.balance_delta.minor()))
            .collect()
    }

    #[test]
    fn payments_credit_once_and_refund_by_cumulative_total() {
        let s0 = PaymentState::default();
        let (s1, m) = payment(s0, PaymentEvent::Paid { amount: 2000 }, c()).unwrap();
        assert_eq!((s1.credited, s1.funds), (2000, Funds::Paid));
        assert_eq!(kinds(&m), vec![(EntryKind::Topup, 2000)]);
        assert_eq!(
            payment(s1, PaymentEvent::Paid { amount: 2000 }, c()).unwrap(),
            (s1, vec![]),
            "the second event of the same payment"
        );
        let (zero, m) = payment(s0, PaymentEvent::Paid { amount: 0 }, c()).unwrap();
        assert_eq!((zero.credited, m), (0, vec![]));
        let (s2, m) = payment(s1, PaymentEvent::Refunded { total: 500 }, c()).unwrap();
        assert_eq!(
            (s2.refunded, kinds(&m)),
            (500, vec![(EntryKind::TopupRefund, -500)])
        );
        let (s3, m) = payment(s2, PaymentEvent::Refunded { total: 1200 }, c()).unwrap();
        assert_eq!(
            (
                s3.refunded,
                m.iter().map(|m| m.amount.minor()).collect::<Vec<_>>()
            ),
            (1200, vec![700]),
            "a second refund: the difference"
        );
        assert_eq!(
            payment(s3, PaymentEvent::Refunded { total: 500 }, c()).unwrap(),
            (s3, vec![]),
            "an older refund event, late"
        );
        assert_eq!(
            payment(s3, PaymentEvent::Refunded { total: 1200 }, c()).unwrap(),
            (s3, vec![]),
            "a repeated refund event"
        );
    }

    #[test]
    fn a_refund_never_takes_back_more_than_was_credited() {
        let paid = payment(
            PaymentState::default(),
            PaymentEvent::Paid { amount: 1000 },
            c(),
        )
        .unwrap()
        .0;
        let (over, m) = payment(paid, PaymentEvent::Refunded { total: 5000 }, c()).unwrap();
        assert_eq!((over.refund_total, over.refunded), (5000, 1000));
        assert_eq!(kinds(&m), vec![(EntryKind::TopupRefund, -1000)]);
        // A refund before its payment is remembered and settled by the credit, in one event.
        let (early, m) = payment(
            PaymentState::default(),
            PaymentEvent::Refunded { total: 300 },
            c(),
        )
        .unwrap();
        assert_eq!((early.refund_total, early.refunded, m), (300, 0, vec![]));
        let (settled, m) = payment(early, PaymentEvent::Paid { amount: 2000 }, c()).unwrap();
        assert_eq!(
            kinds(&m),
            vec![(EntryKind::Topup, 2000), (EntryKind::TopupRefund, -300)]
        );
        assert_eq!((settled.credited, settled.refunded), (2000, 300));
        // A payment recorded before this rule could have refunded more than it credited: no
        // negative "refund" is made of it.
        let legacy = PaymentState {
            funds: Funds::Paid,
            credited: 2000,
            refund_total: 2500,
            refunded: 2500,
            expected: 0,
        };
        assert_eq!(
            payment(legacy, PaymentEvent::Refunded { total: 2500 }, c()).unwrap(),
            (legacy, vec![])
        );
    }

    #[test]
    fn delayed_payments_await_their_funds() {
        let s0 = PaymentState::default();
        let (awaiting, m) = payment(s0, PaymentEvent::AwaitingFunds { amount: 2000 }, c()).unwrap();
        assert_eq!(
            (awaiting.funds, awaiting.expected, m),
            (Funds::Awaiting, 2000, vec![])
        );
        let (paid, m) = payment(awaiting, PaymentEvent::Paid { amount: 2000 }, c()).unwrap();
        assert_eq!(
            (paid.funds, kinds(&m)),
            (Funds::Paid, vec![(EntryKind::Topup, 2000)])
        );
        assert_eq!(
            payment(paid, PaymentEvent::AwaitingFunds { amount: 2000 }, c()).unwrap(),
            (paid, vec![]),
            "a late completion does not undo the payment"
        );
        assert_eq!(
            payment(paid, PaymentEvent::PaymentFailed, c()).unwrap(),
            (paid, vec![]),
            "nor does a failure reverse a credit (Stripe reports that as a refund or dispute)"
        );
        let (failed, m) = payment(awaiting, PaymentEvent::PaymentFailed, c()).unwrap();
        assert_eq!(
            (failed.funds, failed.credited, m),
            (Funds::Failed, 0, vec![])
        );
        assert_eq!(
            payment(failed, PaymentEvent::AwaitingFunds { amount: 2000 }, c())
                .unwrap()
                .0
                .funds,
            Funds::Failed,
            "the completion arriving after the failure"
        );
    }

    #[test]
    fn arithmetic_is_checked() {
        let edge = WalletView {
            balance: usd(i64::MIN + 1),
            held: usd(i64::MAX),
            floor: usd(0),
            month_debits: usd(i64::MAX),
            review_threshold: Some(usd(1)),
        };
        let debit = Movement::new(EntryKind::Debit, usd(5), false);
        assert!(edge.available().is_err());
        assert!(flags(&edge, &debit).is_err());
        assert!(edge.after(&debit).is_err());
        let full = WalletView {
            balance: usd(i64::MAX),
            ..WalletView::empty(c())
        };
        assert_eq!(
            full.after(&Movement::new(EntryKind::Topup, usd(1), false)),
            Err(Overflow("the balance".into()))
        );
        let ok = WalletView::empty(c())
            .after(&Movement::new(EntryKind::Debit, usd(5), false))
            .unwrap();
        assert_eq!(
            (ok.balance, ok.held, ok.month_debits),
            (usd(-5), usd(0), usd(5))
        );
    }

    #[test]
    fn flags_for_floor_and_review() {
        let wallet = WalletView {
            balance: usd(1000),
            held: usd(900),
            floor: usd(0),
            month_debits: usd(0),
            review_threshold: Some(usd(150)),
        };
        let hold = |a| Movement::new(EntryKind::Hold, usd(a), false);
        assert!(
            !flags(&wallet, &hold(100)).unwrap().overdrawn,
            "exactly to the floor"
        );
        assert!(flags(&wallet, &hold(101)).unwrap().overdrawn);
        let credit_allowed = WalletView {
            floor: usd(-2000),
            ..wallet
        };
        assert!(!flags(&credit_allowed, &hold(2100)).unwrap().overdrawn);
        assert!(flags(&credit_allowed, &hold(2101)).unwrap().overdrawn);
        assert!(
            flags(&wallet, &Movement::new(EntryKind::Debit, usd(101), false))
                .unwrap()
                .overdrawn,
            "a direct debit reserves too"
        );
        assert!(
            !flags(&wallet, &Movement::new(EntryKind::Debit, usd(500), true))
                .unwrap()
                .overdrawn,
            "capturing a hold moves nothing new"
        );
        assert!(
            !flags(
                &wallet,
                &Movement::new(EntryKind::BounceRefund, usd(500), false)
            )
            .unwrap()
            .overdrawn
        );
        assert!(
            !flags(&wallet, &Movement::new(EntryKind::Debit, usd(150), false))
                .unwrap()
                .review,
            "at the threshold"
        );
        assert!(
            flags(&wallet, &Movement::new(EntryKind::Debit, usd(151), false))
                .unwrap()
                .review
        );
        let busy = WalletView {
            month_debits: usd(100),
            ..wallet
        };
        assert!(
            flags(&busy, &Movement::new(EntryKind::Debit, usd(51), true))
                .unwrap()
                .review
        );
        assert!(
            !flags(&busy, &Movement::new(EntryKind::Hold, usd(500), false))
                .unwrap()
                .review,
            "only debits count"
        );
        assert!(
            !flags(
                &WalletView {
                    review_threshold: None,
                    ..busy
                },
                &Movement::new(EntryKind::Debit, usd(9999), false)
            )
            .unwrap()
            .review
        );
    }
}
