//! Pure processing policies: backoff with full jitter, what follows a failure, whether a message
//! may be claimed, and how a write that met a transaction conflict is tried again
//! ([`CONFLICT_RETRY`], [`RetryPolicy::next_try`]). No clock and no I/O here: callers pass the
//! time and the random draw in.

use crate::domain::Status;
use std::time::Duration;

/// The most a retry may be delayed: SQS's largest `DelaySeconds` (15 minutes).
pub const MAX_BACKOFF: Duration = Duration::from_secs(900);

/// Retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts before a message is quarantined (the 5th failure quarantines by default).
    pub max_attempts: u32,
    /// The first retry's ceiling; each later one doubles it.
    pub base: Duration,
    /// The ceiling no retry exceeds (at most [`MAX_BACKOFF`]).
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base: Duration::from_secs(2),
            cap: MAX_BACKOFF,
        }
    }
}

impl RetryPolicy {
    /// A policy with the cap clamped to [`MAX_BACKOFF`] and at least one attempt.
    pub fn new(max_attempts: u32, base: Duration, cap: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            base,
            cap: cap.min(MAX_BACKOFF),
        }
    }

    /// The ceiling of the delay after the `attempt`-th failure (1-based): `min(cap, base·2^(attempt−1))`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(Duration::MAX)
            .min(self.cap)
    }

    /// "Full jitter" backoff: a uniform draw in `[0, ceiling(attempt)]`. `unit` is a random number
    /// in `[0, 1)`; values outside are clamped.
    pub fn backoff(&self, attempt: u32, unit: f64) -> Duration {
        let unit = if unit.is_nan() {
            0.0
        } else {
            unit.clamp(0.0, 1.0)
        };
        self.ceiling(attempt).mul_f64(unit)
    }

    /// The wait before the next try of one request whose `failed`-th try (1-based) just failed
    /// (full jitter: [`Self::backoff`] of `failed`), or `None` when that was the last of
    /// `max_attempts` tries.
    pub fn next_try(&self, failed: u32, unit: f64) -> Option<Duration> {
        (failed < self.max_attempts).then(|| self.backoff(failed, unit))
    }

    /// What follows the `attempt`-th failed attempt (1-based).
    pub fn after_failure(&self, attempt: u32, failure: FailureKind, unit: f64) -> AfterFailure {
        match failure {
            FailureKind::Permanent => AfterFailure::Quarantine,
            FailureKind::Transient if attempt >= self.max_attempts => AfterFailure::Quarantine,
            FailureKind::Transient => AfterFailure::RetryIn(self.backoff(attempt, unit)),
        }
    }
}

/// How many times a write that DynamoDB refused only for a transaction conflict (another
/// transaction on one of its items at the same moment: `TransactionConflict` cancellation
/// reasons, or `TransactionConflictException` on a single-item write) is sent again before the
/// caller is told it conflicted.
pub const CONFLICT_RETRIES: u32 = 5;
/// The first such retry's ceiling (full jitter below it); each later one doubles it.
pub const CONFLICT_BACKOFF_BASE: Duration = Duration::from_millis(10);
/// The ceiling no such retry's wait exceeds.
pub const CONFLICT_BACKOFF_CAP: Duration = Duration::from_millis(200);

/// The retries of a write that met a transaction conflict: the first send and
/// [`CONFLICT_RETRIES`] more, waiting at most 10, 20, 40, 80 and 160 ms (310 ms in all).
pub const CONFLICT_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: CONFLICT_RETRIES + 1,
    base: CONFLICT_BACKOFF_BASE,
    cap: CONFLICT_BACKOFF_CAP,
};

/// How a handler failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Worth retrying (a timeout, a 5xx, a throttle).
    Transient,
    /// Will fail the same way every time (bad data, no tenant): quarantine now.
    Permanent,
}

/// The decision after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Status `retrying`, due again after this delay.
    RetryIn(Duration),
    /// Status `failed`, and a quarantine message.
    Quarantine,
}

/// Why a message is not processed now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotNow {
    /// Already processed, ignored or failed.
    Terminal,
    /// Another invocation holds a live lease.
    Leased,
    /// A retry that is not due yet (its scheduled delivery or the reaper will bring it back).
    NotDue,
}

/// Whether a message in `status` may be taken now. `lease_until` and `next_attempt_at` are
/// milliseconds since the epoch; an expired lease may be taken over (crash recovery).
pub fn claimable(
    status: Status,
    lease_until: Option<i64>,
    next_attempt_at: Option<i64>,
    now: i64,
) -> Result<(), NotNow> {
    match status {
        Status::Processed | Status::Ignored | Status::Failed => Err(NotNow::Terminal),
        Status::Processing if lease_until.is_some_and(|until| until > now) => Err(NotNow::Leased),
        Status::Processing | Status::Pending => Ok(()),
        Status::Retrying if next_attempt_at.is_some_and(|due| due > now) => Err(NotNow::NotDue),
        Status::Retrying => Ok(()),
    }
}

/// The number of the attempt the reaper counts as lost when a message's deadline passed without
/// an outcome. A claimed (`processing`) message's attempt was counted by its claim; any other's
/// (the stream delivery of a `pending` one, the scheduled delivery of a `retrying` one, a
/// re-drive) was not: it is the next one.
pub fn lost_attempt(status: Status, attempts: u32) -> u32 {
    match status {
        Status::Processing => attempts.max(1),
        _ => attempts.saturating_add(1),
    }
}

/// The first redelivery's wait after a retry-queue message met an infrastructure error.
pub const REDELIVERY_FIRST: Duration = Duration::from_secs(10);
/// The longest such wait: a message back within about a minute of the store's return.
pub const REDELIVERY_MAX: Duration = Duration::from_secs(60);

/// How long a retry-queue message that met an infrastructure error (the store or a queue
/// unreachable) stays invisible before its next delivery, by its receive count (1 for the first
/// delivery): 10 s, doubling, at most a minute. Without it the message waits out the queue's
/// visibility timeout (six function timeouts); with it an effect is late by at most about a minute
/// once the store is back, and the queue's `maxReceiveCount` still ends a message that never works.
pub fn redelivery_after(receive_count: u32) -> Duration {
    let doublings = receive_count.saturating_sub(1).min(16);
    REDELIVERY_FIRST
        .saturating_mul(1 << doublings)
        .min(REDELIVERY_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy::new(5, Duration::from_secs(2), Duration::from_secs(60))
    }

    #[test]
    fn a_failed_redelivery_comes_back_within_a_minute() {
        let waits: Vec<u64> = [0, 1, 2, 3, 4, 5, 6, 40, u32::MAX]
            .into_iter()
            .map(|n| redelivery_after(n).as_secs())
            .collect();
        assert_eq!(waits, vec![10, 10, 20, 40, 60, 60, 60, 60, 60]);
    }

    #[test]
    fn ceiling_doubles_then_caps() {
        let p = policy();
        let ceilings: Vec<u64> = (1..=8).map(|a| p.ceiling(a).as_secs()).collect();
        assert_eq!(ceilings, vec![2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(
            p.ceiling(0),
            Duration::from_secs(2),
            "attempt 0 is treated as the first"
        );
        assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(60), "no overflow");
        assert_eq!(
            RetryPolicy::new(5, Duration::from_secs(3600), Duration::from_secs(3600)).ceiling(1),
            MAX_BACKOFF
        );
    }

    #[test]
    fn full_jitter_spans_zero_to_ceiling() {
        let p = policy();
        assert_eq!(p.backoff(3, 0.0), Duration::ZERO);
        assert_eq!(p.backoff(3, 0.5), Duration::from_secs(4));
        assert_eq!(p.backoff(3, 1.0), Duration::from_secs(8));
        assert_eq!(p.backoff(3, -3.0), Duration::ZERO, "clamped");
        assert_eq!(p.backoff(3, 7.0), Duration::from_secs(8), "clamped");
        assert_eq!(p.backoff(3, f64::NAN), Duration::ZERO);
        for a in 1..20 {
            for u in [0.0, 0.1, 0.37, 0.99] {
                assert!(p.backoff(a, u) <= p.cap);
            }
        }
    }

    #[test]
    fn failures_retry_until_the_last_attempt_then_quarantine() {
        let p = policy();
        use AfterFailure::*;
        for attempt in 1..5 {
            assert!(
                matches!(
                    p.after_failure(attempt, FailureKind::Transient, 0.5),
                    RetryIn(_)
                ),
                "{attempt}"
            );
        }
        assert_eq!(p.after_failure(5, FailureKind::Transient, 0.5), Quarantine);
        assert_eq!(p.after_failure(6, FailureKind::Transient, 0.5), Quarantine);
        for attempt in 1..=6 {
            assert_eq!(
                p.after_failure(attempt, FailureKind::Permanent, 0.5),
                Quarantine
            );
        }
        let once = RetryPolicy::new(0, Duration::from_secs(1), Duration::from_secs(1));
        assert_eq!(once.max_attempts, 1);
        assert_eq!(
            once.after_failure(1, FailureKind::Transient, 0.5),
            Quarantine
        );
    }

    #[test]
    fn a_conflicting_write_is_sent_again_five_times_within_a_third_of_a_second() {
        let p = CONFLICT_RETRY;
        // (tries failed so far, draw) → the wait before the next try, or none: give up.
        let cases = [
            (1, 1.0, Some(10)),
            (2, 1.0, Some(20)),
            (3, 1.0, Some(40)),
            (4, 1.0, Some(80)),
            (5, 1.0, Some(160)),
            (6, 1.0, None),
            (7, 1.0, None),
            (u32::MAX, 1.0, None),
            (1, 0.5, Some(5)),
            (3, 0.5, Some(20)),
            (5, 0.25, Some(40)),
            (5, 0.0, Some(0)),
            (2, f64::NAN, Some(0)),
            (2, 9.0, Some(20)),
            (6, 0.0, None),
        ];
        for (failed, unit, expected) in cases {
            assert_eq!(
                p.next_try(failed, unit),
                expected.map(Duration::from_millis),
                "{failed} {unit}"
            );
        }
        let retries = (1..).take_while(|&f| p.next_try(f, 1.0).is_some()).count();
        assert_eq!(retries, CONFLICT_RETRIES as usize);
        let worst: Duration = (1..=CONFLICT_RETRIES)
            .filter_map(|f| p.next_try(f, 1.0))
            .sum();
        assert_eq!(worst, Duration::from_millis(310));
        // Past the doublings, the cap holds.
        let long = RetryPolicy {
            max_attempts: 20,
            ..CONFLICT_RETRY
        };
        assert_eq!(long.next_try(6, 1.0), Some(CONFLICT_BACKOFF_CAP));
        assert_eq!(long.next_try(19, 1.0), Some(CONFLICT_BACKOFF_CAP));
        assert_eq!(long.next_try(20, 1.0), None);
    }

    #[test]
    fn a_lost_attempt_is_counted_once() {
        assert_eq!(lost_attempt(Status::Pending, 0), 1);
        assert_eq!(lost_attempt(Status::Retrying, 3), 4);
        assert_eq!(
            lost_attempt(Status::Processing, 2),
            2,
            "counted by its claim"
        );
        assert_eq!(lost_attempt(Status::Processing, 0), 1);
        assert_eq!(lost_attempt(Status::Retrying, u32::MAX), u32::MAX);
    }

    #[test]
    fn claimability_for_every_status() {
        use Status::*;
        let now = 1_000;
        let cases = [
            (Pending, None, None, Ok(())),
            (Processing, Some(2_000), None, Err(NotNow::Leased)),
            (Processing, Some(1_000), None, Ok(())),
            (Processing, Some(500), None, Ok(())),
            (Processing, None, None, Ok(())),
            (Retrying, None, Some(2_000), Err(NotNow::NotDue)),
            (Retrying, None, Some(1_000), Ok(())),
            (Retrying, None, None, Ok(())),
            (Processed, None, None, Err(NotNow::Terminal)),
            (Ignored, None, None, Err(NotNow::Terminal)),
            (Failed, None, None, Err(NotNow::Terminal)),
        ];
        for (status, lease, due, expected) in cases {
            assert_eq!(
                claimable(status, lease, due, now),
                expected,
                "{status:?} {lease:?} {due:?}"
            );
        }
    }
}
