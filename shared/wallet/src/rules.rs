//! The wallet's rules as pure functions: given the state read and one event, the next state and
//! the money movement. No I/O, no clock; exhaustively tested here and against a reference model
//! (proptest) in `tests.rs`.

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
    pub amount: i64,
    pub balance_delta: i64,
    pub held_delta: i64,
}

impl Movement {
    fn new(kind: EntryKind, amount: i64, from_hold: bool) -> Self {
        let (balance_delta, held_delta) = match kind {
            EntryKind::Topup | EntryKind::BounceRefund => (amount, 0),
            EntryKind::TopupRefund => (-amount, 0),
            EntryKind::Hold => (0, amount),
            EntryKind::HoldRelease => (0, -amount),
            EntryKind::Debit if from_hold => (-amount, -amount),
            EntryKind::Debit => (-amount, 0),
        };
        Self {
            kind,
            amount,
            balance_delta,
            held_delta,
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
}

/// A delivery event of one email, as the messaging provider reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmailEvent {
    Sent,
    Accepted,
    /// `hard: true` is a permanent bounce (releases or refunds); a soft one moves no money.
    Bounced {
        hard: bool,
    },
    Deferred,
    /// A complaint is not a bounce: no money moves.
    Complained,
}

/// The next state of an email and the movement it causes (if any). `amount` is the email's price:
/// the price held or debited first, carried on for its release or refund.
pub fn email(state: EmailState, event: EmailEvent, amount: i64) -> (EmailState, Option<Movement>) {
    use EmailEvent::*;
    use EmailState::*;
    let moved = |kind, from_hold| Some(Movement::new(kind, amount, from_hold));
    match (state, event) {
        (New, Sent) => (Held, moved(EntryKind::Hold, false)),
        (New, Accepted) => (Debited, moved(EntryKind::Debit, false)),
        (Held, Accepted) => (Debited, moved(EntryKind::Debit, true)),
        (New, Bounced { hard: true }) => (Void, None),
        (Held, Bounced { hard: true }) => (Released, moved(EntryKind::HoldRelease, false)),
        (Debited, Bounced { hard: true }) => (Refunded, moved(EntryKind::BounceRefund, false)),
        // Already held or debited: a repeated or late `sent` changes nothing.
        (Held | Debited, Sent) | (Debited, Accepted) => (state, None),
        // After a hard bounce nothing moves again (a late `accepted` does not debit).
        (Released | Refunded | Void, _) => (state, None),
        // Soft bounces, deferrals and complaints are recorded only.
        (_, Bounced { hard: false } | Deferred | Complained) => (state, None),
    }
}

/// Money state of one payment (a Stripe payment intent, or a checkout session without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PaymentState {
    /// Credited so far (0 until the first success event).
    pub credited: i64,
    /// Refunded so far (Stripe's cumulative `amount_refunded`).
    pub refunded: i64,
}

/// A payment event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentEvent {
    /// `checkout.session.completed` or `payment_intent.succeeded`: credit `amount` once per payment.
    Paid { amount: i64 },
    /// `charge.refunded`: the cumulative refunded amount (so each refund counts once, in any order).
    Refunded { total: i64 },
}

/// The next state of a payment and the movement it causes.
pub fn payment(state: PaymentState, event: PaymentEvent) -> (PaymentState, Option<Movement>) {
    match event {
        PaymentEvent::Paid { amount } if state.credited == 0 && amount > 0 => (
            PaymentState {
                credited: amount,
                ..state
            },
            Some(Movement::new(EntryKind::Topup, amount, false)),
        ),
        PaymentEvent::Paid { .. } => (state, None),
        PaymentEvent::Refunded { total } if total > state.refunded => {
            let delta = total - state.refunded;
            (
                PaymentState {
                    refunded: total,
                    ..state
                },
                Some(Movement::new(EntryKind::TopupRefund, delta, false)),
            )
        }
        PaymentEvent::Refunded { .. } => (state, None),
    }
}

/// Flags a movement raises on its wallet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// The movement takes `available` below the tenant's floor (it is recorded all the same).
    pub overdrawn: bool,
    /// The month's debits pass the soft-review threshold.
    pub review: bool,
}

/// The wallet figures a rule needs (as read; balances move by commutative adds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WalletView {
    pub balance: i64,
    pub held: i64,
    /// `available` may not go below this (0 by default; negative allows credit).
    pub floor: i64,
    /// This month's debits so far.
    pub month_debits: i64,
    /// Debits in a month above this flag the tenant for review.
    pub review_threshold: Option<i64>,
}

impl WalletView {
    pub fn available(&self) -> i64 {
        self.balance - self.held
    }
}

/// The flags a movement raises on a wallet as read.
pub fn flags(wallet: &WalletView, m: &Movement) -> Flags {
    let takes = m.held_delta.max(0) - m.balance_delta.min(0) + m.held_delta.min(0);
    let reserves = matches!(m.kind, EntryKind::Hold | EntryKind::Debit);
    let after = wallet.available() - takes;
    Flags {
        overdrawn: reserves && takes > 0 && after < wallet.floor,
        review: m.kind == EntryKind::Debit
            && wallet
                .review_threshold
                .is_some_and(|t| wallet.month_debits + m.amount > t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EmailEvent::*;
    use EmailState::*;

    const ALL_EVENTS: [EmailEvent; 6] = [
        Sent,
        Accepted,
        Bounced { hard: true },
        Bounced { hard: false },
        Deferred,
        Complained,
    ];
    const ALL_STATES: [EmailState; 6] = [New, Held, Debited, Released, Refunded, Void];

    #[test]
    fn every_email_transition() {
        let hold = Some(Movement {
            kind: EntryKind::Hold,
            amount: 5,
            balance_delta: 0,
            held_delta: 5,
        });
        let debit = Some(Movement {
            kind: EntryKind::Debit,
            amount: 5,
            balance_delta: -5,
            held_delta: 0,
        });
        let capture = Some(Movement {
            kind: EntryKind::Debit,
            amount: 5,
            balance_delta: -5,
            held_delta: -5,
        });
        let release = Some(Movement {
            kind: EntryKind::HoldRelease,
            amount: 5,
            balance_delta: 0,
            held_delta: -5,
        });
        let refund = Some(Movement {
            kind: EntryKind::BounceRefund,
            amount: 5,
            balance_delta: 5,
            held_delta: 0,
        });
        let expected = |state, event| match (state, event) {
            (New, Sent) => (Held, hold),
            (New, Accepted) => (Debited, debit),
            (Held, Accepted) => (Debited, capture),
            (New, Bounced { hard: true }) => (Void, None),
            (Held, Bounced { hard: true }) => (Released, release),
            (Debited, Bounced { hard: true }) => (Refunded, refund),
            (s, _) => (s, None),
        };
        for state in ALL_STATES {
            for event in ALL_EVENTS {
                assert_eq!(
                    email(state, event, 5),
                    expected(state, event),
                    "{state:?} + {event:?}"
                );
            }
        }
    }

    #[test]
    fn terminal_email_states_absorb_everything() {
        for state in [Released, Refunded, Void] {
            for event in ALL_EVENTS {
                assert_eq!(email(state, event, 5), (state, None));
            }
        }
    }

    #[test]
    fn payments_credit_once_and_refund_by_cumulative_total() {
        let s0 = PaymentState::default();
        let (s1, m) = payment(s0, PaymentEvent::Paid { amount: 2000 });
        assert_eq!(
            (s1.credited, m.map(|m| m.balance_delta)),
            (2000, Some(2000))
        );
        assert_eq!(
            payment(s1, PaymentEvent::Paid { amount: 2000 }),
            (s1, None),
            "the second event of the same payment"
        );
        assert_eq!(payment(s0, PaymentEvent::Paid { amount: 0 }), (s0, None));
        let (s2, m) = payment(s1, PaymentEvent::Refunded { total: 500 });
        assert_eq!((s2.refunded, m.map(|m| m.balance_delta)), (500, Some(-500)));
        let (s3, m) = payment(s2, PaymentEvent::Refunded { total: 1200 });
        assert_eq!(
            (s3.refunded, m.map(|m| m.amount)),
            (1200, Some(700)),
            "a second refund: the difference"
        );
        assert_eq!(
            payment(s3, PaymentEvent::Refunded { total: 500 }),
            (s3, None),
            "an older refund event, late"
        );
        assert_eq!(
            payment(s3, PaymentEvent::Refunded { total: 1200 }),
            (s3, None),
            "a repeated refund event"
        );
        let (early, m) = payment(s0, PaymentEvent::Refunded { total: 300 });
        assert_eq!(
            (early.refunded, m.map(|m| m.kind)),
            (300, Some(EntryKind::TopupRefund)),
            "refund before payment"
        );
    }

    #[test]
    fn flags_for_floor_and_review() {
        let wallet = WalletView {
            balance: 1000,
            held: 900,
            floor: 0,
            month_debits: 0,
            review_threshold: Some(150),
        };
        let hold = |a| Movement::new(EntryKind::Hold, a, false);
        assert!(
            !flags(&wallet, &hold(100)).overdrawn,
            "exactly to the floor"
        );
        assert!(flags(&wallet, &hold(101)).overdrawn);
        let credit_allowed = WalletView {
            floor: -2000,
            ..wallet
        };
        assert!(!flags(&credit_allowed, &hold(2100)).overdrawn);
        assert!(flags(&credit_allowed, &hold(2101)).overdrawn);
        assert!(
            flags(&wallet, &Movement::new(EntryKind::Debit, 101, false)).overdrawn,
            "a direct debit reserves too"
        );
        assert!(
            !flags(&wallet, &Movement::new(EntryKind::Debit, 500, true)).overdrawn,
            "capturing a hold moves nothing new"
        );
        assert!(!flags(&wallet, &Movement::new(EntryKind::BounceRefund, 500, false)).overdrawn);
        assert!(
            !flags(&wallet, &Movement::new(EntryKind::Debit, 150, false)).review,
            "at the threshold"
        );
        assert!(flags(&wallet, &Movement::new(EntryKind::Debit, 151, false)).review);
        let busy = WalletView {
            month_debits: 100,
            ..wallet
        };
        assert!(flags(&busy, &Movement::new(EntryKind::Debit, 51, true)).review);
        assert!(
            !flags(&busy, &Movement::new(EntryKind::Hold, 500, false)).review,
            "only debits count"
        );
        assert!(
            !flags(
                &WalletView {
                    review_threshold: None,
                    ..busy
                },
                &Movement::new(EntryKind::Debit, 9999, false)
            )
            .review
        );
    }
}
