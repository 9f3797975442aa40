//! The dunning ladder: what follows a charge that did not succeed. A business rule, apart from the
//! technical retries of one request (those repeat the same request with the same idempotency key
//! and never reach here: [`ChargeOutcome::Indeterminate`]).
//!
//! A ladder is a list of days counted from the **first** failure, `[0, 1, 3, 5, 7]` by default:
//! rung 0 is the try that failed first, rung `i` is due at that failure plus `days[i]` days. Each
//! rung's time comes from the first failure, never from the previous try, so a scheduler that was
//! down fires the rungs it missed at once (their times are past) instead of stretching the ladder.
//!
//! | after a try that was | next |
//! |---|---|
//! | succeeded | the ladder ends: [`LadderEnd::Succeeded`] |
//! | declined, soft (`insufficient_funds`, `processing_error`, …) | the next rung, or [`LadderEnd::Exhausted`] after the last |
//! | declined, hard (`expired_card`, `lost_card`, `stolen_card`, `incorrect_number`, …) | [`LadderEnd::HardDecline`] at once |
//! | needing the customer (`authentication_required`, an intent in `requires_action`) | [`LadderEnd::NeedsCustomer`] at once |
//! | pending (the provider took the charge and settles it later: Stripe's `processing`) | [`NextTry::Pending`]: never sent again; its settlement ends it (a success, or a decline read as one of the rows above) |
//! | indeterminate (a 500, a timeout: the outcome is not known) | [`NextTry::Repeat`]: the same request again, not a rung |
//!
//! Which provider code is soft or hard is the provider module's business: it maps its answers
//! onto [`ChargeOutcome`].

use inbox_core::clock::Millis;
use std::time::Duration;

const DAY: Duration = Duration::from_secs(86_400);

/// A charge's outcome, as the provider module maps its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChargeOutcome {
    Succeeded,
    /// Declined, worth retrying later (the provider's decline code).
    DeclinedSoft {
        code: String,
    },
    /// Declined for good: retrying cannot succeed.
    DeclinedHard {
        code: String,
    },
    /// The customer must act (authenticate, on-session): no off-session retry can succeed.
    NeedsCustomer {
        code: String,
    },
    /// The provider accepted the charge and settles it later (Stripe: a PaymentIntent
    /// `processing`, as delayed-notification methods such as SEPA Direct Debit stay for days): it
    /// exists, so it is never sent again; its settlement (a webhook, or a look-up) ends it.
    Pending,
    /// Not known whether it was charged: the same request must be repeated.
    Indeterminate,
}

/// Why a ladder ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LadderEnd {
    Succeeded,
    HardDecline {
        code: String,
    },
    NeedsCustomer {
        code: String,
    },
    /// Every rung was tried; the last decline's code.
    Exhausted {
        tries: usize,
        code: String,
    },
}

/// What comes after a try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextTry {
    /// Try `rung` at `due` (at once if `due` is past).
    Rung {
        rung: usize,
        due: Millis,
    },
    /// The same request again (same idempotency key): the try is not decided.
    Repeat,
    /// The charge exists and settles later: wait for it, never send it again.
    Pending,
    End(LadderEnd),
}

/// A ladder whose days are not `0` then strictly increasing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a dunning ladder is days from the first failure, starting at 0 and strictly increasing (e.g. 0,1,3,5,7): {0}")]
pub struct InvalidLadder(pub String);

/// The rungs' days from the first failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    days: Vec<u32>,
}

impl Default for Ladder {
    fn default() -> Self {
        Self {
            days: vec![0, 1, 3, 5, 7],
        }
    }
}

impl Ladder {
    pub fn new(days: Vec<u32>) -> Result<Self, InvalidLadder> {
        let starts_at_zero = days.first() == Some(&0);
        let increasing = days.windows(2).all(|w| w[0] < w[1]);
        if !starts_at_zero || !increasing {
            return Err(InvalidLadder(format!("{days:?}")));
        }
        Ok(Self { days })
    }

    /// `0,1,3,5,7` (spaces allowed).
    pub fn parse(text: &str) -> Result<Self, InvalidLadder> {
        let days = text
            .split(',')
            .map(|d| d.trim().parse::<u32>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| InvalidLadder(text.to_owned()))?;
        Self::new(days)
    }

    pub fn days(&self) -> &[u32] {
        &self.days
    }

    /// When rung `rung` is due, the first failure having been at `first_failure`.
    pub fn due(&self, rung: usize, first_failure: Millis) -> Option<Millis> {
        let days = *self.days.get(rung)?;
        Some(first_failure.plus(DAY * days))
    }

    /// What follows try `rung` (0: the first) that ended in `outcome`; `first_failure` is when
    /// the ladder's first try failed (for rung 0: that try's own time).
    pub fn after(&self, rung: usize, outcome: &ChargeOutcome, first_failure: Millis) -> NextTry {
        match outcome {
            ChargeOutcome::Succeeded => NextTry::End(LadderEnd::Succeeded),
            ChargeOutcome::Indeterminate => NextTry::Repeat,
            ChargeOutcome::Pending => NextTry::Pending,
            ChargeOutcome::DeclinedHard { code } => {
                NextTry::End(LadderEnd::HardDecline { code: code.clone() })
            }
            ChargeOutcome::NeedsCustomer { code } => {
                NextTry::End(LadderEnd::NeedsCustomer { code: code.clone() })
            }
            ChargeOutcome::DeclinedSoft { code } => match self.due(rung + 1, first_failure) {
                Some(due) => NextTry::Rung {
                    rung: rung + 1,
                    due,
                },
                None => NextTry::End(LadderEnd::Exhausted {
                    tries: self.days.len(),
                    code: code.clone(),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests;
