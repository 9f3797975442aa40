//! The technical retries of one Stripe request: which answers are retried (with the SAME
//! idempotency key: a retry repeats the request, it never decides anything new) and how long to
//! wait before each (exponential backoff with full jitter). Pure: the answer, the count and a
//! random draw in `[0, 1)` come in.
//!
//! | the request came back with | retried? | why (Stripe's documentation) |
//! |---|---|---|
//! | `Stripe-Should-Retry: false` (any status) | **never** | Stripe's answer says a retry cannot succeed; its official libraries stop on it whatever the status (stripe-python #621, stripe-php #755), and so do we |
//! | `Stripe-Should-Retry: true` (any status) | yes | the same libraries retry on it whatever the status |
//! | 429 (`rate_limit`, `lock_timeout`) | yes | [Error handling](https://docs.stripe.com/error-handling): rate limiters run before the idempotency layer, so a 429 ran nothing and saved nothing for the key ([Rate limits](https://docs.stripe.com/rate-limits): back off and retry); a `lock_timeout` is an object locked by a concurrent request (the official libraries retry it: stripe-ruby #841, stripe-php #718) |
//! | 409 (`idempotency_key_in_use`) | yes | [Idempotent requests](https://docs.stripe.com/api/idempotent_requests): the first request with the key still runs; once it ends, the same key returns its saved answer |
//! | 5xx | yes | [Idempotent requests](https://docs.stripe.com/api/idempotent_requests): Stripe saves the first answer once the endpoint began executing, a 500 included, and returns it for the same key (the charge's outcome is then not known: [`wallet_ledger::autopay::ChargeOutcome::Indeterminate`] after the budget) |
//! | a connection error, a reset, a timeout | yes | [Advanced error handling](https://docs.stripe.com/error-low-level), network errors: the outcome is unknown, so the request is repeated with the same idempotency key, and a charge made before the connection broke is answered from the key, not made twice |
//! | any other answer (200, a 402 decline, a 400) | no | final: its content decides ([`crate::answer`]) |
//!
//! The wait before retry `n` (0 for the first) is a uniform draw in `[0, min(cap, base·2ⁿ))`
//! ("full jitter"), so workers throttled together do not come back together.

use std::time::Duration;

/// How many retries and how long between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first request (the requests of one call: `1 + max_retries`).
    pub max_retries: u32,
    /// The ceiling of the first wait.
    pub base: Duration,
    /// The largest ceiling.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    /// 4 retries, ceilings 0.5 s, 1 s, 2 s, 4 s (at most 7.5 s of waiting: a charge ends well
    /// within the charging function's timeout).
    fn default() -> Self {
        Self {
            max_retries: 4,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(8),
        }
    }
}

/// What one request came back with, as the retry policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    Answered {
        status: u16,
        /// `Stripe-Should-Retry`, when the answer had it.
        should_retry: Option<bool>,
    },
    /// Refused or broken before an answer (connect error, reset).
    Broken,
    TimedOut,
}

/// Whether `observed` is retried (the table above).
pub fn retryable(observed: Observed) -> bool {
    match observed {
        Observed::Answered {
            should_retry: Some(said),
            ..
        } => said,
        Observed::Answered { status, .. } => matches!(status, 409 | 429 | 500..=599),
        Observed::Broken | Observed::TimedOut => true,
    }
}

/// The wait before retry `retry` (0: the first retry) for a draw `unit` in `[0, 1)`.
pub fn backoff(policy: RetryPolicy, retry: u32, unit: f64) -> Duration {
    let ceiling = policy
        .base
        .checked_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX))
        .unwrap_or(policy.cap)
        .min(policy.cap);
    let unit = if unit.is_finite() {
        unit.clamp(0.0, 1.0)
    } else {
        0.0
    };
    ceiling.mul_f64(unit).min(ceiling)
}

/// What follows a request: `None` when its answer is final, else the wait before the next.
/// After `policy.max_retries` retries nothing more is tried (the caller's answer is then
/// indeterminate, never a request with another key).
pub fn next(policy: RetryPolicy, observed: Observed, retries_done: u32, unit: f64) -> Next {
    if !retryable(observed) {
        Next::Final
    } else if retries_done >= policy.max_retries {
        Next::Exhausted
    } else {
        Next::Retry(backoff(policy, retries_done, unit))
    }
}

/// See [`next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Final,
    Retry(Duration),
    Exhausted,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(status: u16, should_retry: Option<bool>) -> Observed {
        Observed::Answered {
            status,
            should_retry,
        }
    }

    #[test]
    fn which_answers_are_retried() {
        let table = [
            (answered(200, None), false),
            (answered(402, None), false),
            (answered(400, None), false),
            (answered(401, None), false),
            (answered(404, None), false),
            (answered(409, None), true),
            (answered(429, None), true),
            (answered(500, None), true),
            (answered(502, None), true),
            (answered(503, None), true),
            (answered(500, Some(false)), false),
            (answered(429, Some(false)), false),
            (answered(409, Some(false)), false),
            (answered(400, Some(true)), true),
            (answered(402, Some(true)), true),
            (Observed::Broken, true),
            (Observed::TimedOut, true),
        ];
        for (observed, want) in table {
            assert_eq!(retryable(observed), want, "{observed:?}");
        }
    }

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_capped_ceiling() {
        let p = RetryPolicy {
            max_retries: 10,
            base: Duration::from_millis(100),
            cap: Duration::from_millis(1_000),
        };
        let ms = |retry, unit| backoff(p, retry, unit).as_millis();
        let table = [
            (0, 0.999_999, 99),
            (1, 0.999_999, 199),
            (2, 0.999_999, 399),
            (3, 0.999_999, 799),
            (4, 0.999_999, 999),
            (30, 0.999_999, 999),
            (u32::MAX, 0.999_999, 999),
            (2, 0.5, 200),
            (2, 0.0, 0),
            (2, f64::NAN, 0),
            (2, 7.0, 400),
        ];
        for (retry, unit, want) in table {
            assert_eq!(ms(retry, unit), want, "retry {retry}, draw {unit}");
        }
    }

    #[test]
    fn the_budget_ends_retries_and_a_final_answer_ends_at_once() {
        let p = RetryPolicy::default();
        assert_eq!(next(p, answered(200, None), 0, 0.5), Next::Final);
        assert_eq!(
            next(p, answered(500, None), 0, 0.5),
            Next::Retry(Duration::from_millis(250))
        );
        assert_eq!(
            next(p, answered(500, None), p.max_retries, 0.5),
            Next::Exhausted
        );
        assert_eq!(next(p, answered(500, Some(false)), 0, 0.5), Next::Final);
    }
}
