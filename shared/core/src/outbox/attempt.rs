//! What an attempt's result means (pure): the delivery's next status and when, what it tells the
//! circuit breaker, and whether the destination must be disabled.
//!
//! | result | delivery | breaker |
//! |---|---|---|
//! | 2xx | `delivered` | up |
//! | 410 Gone | `failed`; the destination is disabled with the reason | neutral |
//! | 429 | next attempt at max(schedule, `Retry-After`), capped; the destination's bucket is held until then ([`throttle`]) | neutral |
//! | 503 | the same | down |
//! | 408, other 5xx, timeout, connection error | next attempt by the schedule | down |
//! | 1xx, 3xx (redirects are not followed), other 4xx | next attempt by the schedule | up |
//! | refused by the SSRF guard or the URL's scheme | `failed` at once (will not heal by itself) | neutral |
//!
//! After the schedule's last attempt a retryable result is `failed` too.

use super::breaker::Verdict;
use super::delivery::DeliveryStatus;
use super::schedule::{parse_retry_after, Next, RetrySchedule};
use std::time::Duration;

/// What an attempt came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptResult {
    /// An HTTP answer: its status, its `Retry-After` if any, the first bytes of its body.
    Answered {
        status: u16,
        retry_after: Option<String>,
        body: Vec<u8>,
    },
    /// No answer within the destination's timeout.
    Timeout,
    /// No connection (refused, reset, DNS failure, TLS failure …).
    Connect(String),
    /// Not attempted: the URL or the address it resolves to is not allowed (SSRF guard).
    Refused(String),
}

/// The decision after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub status: DeliveryStatus,
    /// For `retrying`: after how long.
    pub retry_in: Option<Duration>,
    pub breaker: Verdict,
    /// `Some(reason)`: disable the destination.
    pub disable: Option<String>,
    /// The error to journal (`None` on success).
    pub error: Option<String>,
}

/// Decides after attempt `attempt` (1-based) of a delivery on `schedule`, at `now_ms`, with the
/// jitter's random draw `unit`.
pub fn decide(
    schedule: &RetrySchedule,
    attempt: u32,
    result: &AttemptResult,
    now_ms: i64,
    unit: f64,
) -> Decision {
    let retry = |breaker: Verdict, error: String, retry_after: Option<Duration>| match schedule
        .after_failure(attempt, retry_after, unit)
    {
        Next::RetryIn(d) => Decision {
            status: DeliveryStatus::Retrying,
            retry_in: Some(d),
            breaker,
            disable: None,
            error: Some(error),
        },
        Next::GiveUp => Decision {
            status: DeliveryStatus::Failed,
            retry_in: None,
            breaker,
            disable: None,
            error: Some(format!("{error}; gave up after {attempt} attempts")),
        },
    };
    match result {
        AttemptResult::Answered { status, .. } if (200..300).contains(status) => Decision {
            status: DeliveryStatus::Delivered,
            retry_in: None,
            breaker: Verdict::Up,
            disable: None,
            error: None,
        },
        AttemptResult::Answered { status: 410, .. } => Decision {
            status: DeliveryStatus::Failed,
            retry_in: None,
            breaker: Verdict::Neutral,
            disable: Some("the destination answered 410 Gone".into()),
            error: Some("HTTP 410 Gone: the destination is disabled".into()),
        },
        AttemptResult::Answered {
            status,
            retry_after,
            ..
        } if *status == 429 || *status == 503 => {
            let after = retry_after
                .as_deref()
                .and_then(|v| parse_retry_after(v, now_ms));
            let breaker = if *status == 429 {
                Verdict::Neutral
            } else {
                Verdict::Down
            };
            retry(breaker, format!("HTTP {status}"), after)
        }
        AttemptResult::Answered { status, .. } if *status == 408 || *status >= 500 => {
            retry(Verdict::Down, format!("HTTP {status}"), None)
        }
        AttemptResult::Answered { status, .. } => {
            retry(Verdict::Up, format!("HTTP {status}"), None)
        }
        AttemptResult::Timeout => retry(Verdict::Down, "timed out".into(), None),
        AttemptResult::Connect(e) => retry(Verdict::Down, format!("connection failed: {e}"), None),
        AttemptResult::Refused(why) => Decision {
            status: DeliveryStatus::Failed,
            retry_in: None,
            breaker: Verdict::Neutral,
            disable: None,
            error: Some(format!("refused: {why}")),
        },
    }
}

/// How long a result asks the WHOLE destination to slow down: a 429's `Retry-After` (capped at
/// `cap`; none: no wait, the burst is spent), so every worker's next token waits, not only the
/// refused delivery's retry. `None` for every other result.
pub fn throttle(result: &AttemptResult, now_ms: i64, cap: Duration) -> Option<Duration> {
    match result {
        AttemptResult::Answered {
            status: 429,
            retry_after,
            ..
        } => Some(
            retry_after
                .as_deref()
                .and_then(|v| parse_retry_after(v, now_ms))
                .unwrap_or_default()
                .min(cap),
        ),
        _ => None,
    }
}

/// Why a delivery that already made `attempts` attempts gets no other on `schedule` (checked
/// when it is claimed), if it does not: its last attempt never reported (the worker stopped
/// after claiming it, its lease lapsed), or the schedule was shortened since.
pub fn exhausted(schedule: &RetrySchedule, attempts: u32) -> Option<String> {
    let max = schedule.max_attempts();
    (attempts >= max).then(|| {
        format!(
            "the attempt limit was reached: {attempts} attempts made, the schedule allows {max} \
             (the last reported no result)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, retry_after: Option<&str>) -> AttemptResult {
        AttemptResult::Answered {
            status,
            retry_after: retry_after.map(str::to_owned),
            body: Vec::new(),
        }
    }

    #[test]
    fn every_kind_of_result() {
        let s = RetrySchedule::default();
        let d = |r: &AttemptResult, attempt| decide(&s, attempt, r, 0, 0.5);
        use DeliveryStatus::*;
        for ok in [200, 201, 204, 299] {
            let x = d(&answer(ok, None), 1);
            assert_eq!(
                (x.status, x.breaker, x.error),
                (Delivered, Verdict::Up, None),
                "{ok}"
            );
        }
        let gone = d(&answer(410, None), 1);
        assert_eq!((gone.status, gone.breaker), (Failed, Verdict::Neutral));
        assert!(gone.disable.is_some());
        let slow = d(&answer(429, Some("7")), 1);
        assert_eq!(
            (slow.status, slow.retry_in, slow.breaker),
            (Retrying, Some(Duration::from_secs(7)), Verdict::Neutral)
        );
        let busy = d(&answer(503, Some("60")), 1);
        assert_eq!(
            (busy.retry_in, busy.breaker),
            (Some(Duration::from_secs(60)), Verdict::Down)
        );
        let busy = d(&answer(503, Some("garbage")), 1);
        assert_eq!(
            busy.retry_in,
            Some(Duration::from_secs(5)),
            "unreadable Retry-After: the schedule"
        );
        for down in [500, 502, 504, 599, 408] {
            let x = d(&answer(down, Some("600")), 1);
            assert_eq!(
                (x.status, x.retry_in, x.breaker),
                (Retrying, Some(Duration::from_secs(5)), Verdict::Down),
                "{down}: Retry-After ignored"
            );
        }
        for up in [100, 301, 400, 401, 403, 404, 422] {
            let x = d(&answer(up, None), 2);
            assert_eq!(
                (x.status, x.retry_in, x.breaker),
                (Retrying, Some(Duration::from_secs(300)), Verdict::Up),
                "{up}"
            );
            assert_eq!(x.error, Some(format!("HTTP {up}")));
        }
        let t = d(&AttemptResult::Timeout, 1);
        assert_eq!((t.status, t.breaker), (Retrying, Verdict::Down));
        let c = d(&AttemptResult::Connect("refused".into()), 1);
        assert_eq!((c.status, c.breaker), (Retrying, Verdict::Down));
        assert!(c.error.unwrap().contains("refused"));
        let r = d(&AttemptResult::Refused("127.0.0.1 is loopback".into()), 1);
        assert_eq!(
            (r.status, r.retry_in, r.breaker, r.disable),
            (Failed, None, Verdict::Neutral, None)
        );
    }

    #[test]
    fn a_429_slows_the_destination() {
        let cap = Duration::from_secs(3600);
        let t = |r: &AttemptResult| throttle(r, 0, cap);
        assert_eq!(t(&answer(429, Some("7"))), Some(Duration::from_secs(7)));
        assert_eq!(t(&answer(429, None)), Some(Duration::ZERO));
        assert_eq!(t(&answer(429, Some("soon"))), Some(Duration::ZERO));
        assert_eq!(t(&answer(429, Some("86400"))), Some(cap), "capped");
        for other in [200, 500, 503, 410] {
            assert_eq!(t(&answer(other, Some("7"))), None, "{other}");
        }
        assert_eq!(t(&AttemptResult::Timeout), None);
    }

    #[test]
    fn the_attempt_limit_is_checked_before_another_claim() {
        let s = RetrySchedule::parse("0,1s,1s").unwrap();
        assert_eq!(s.max_attempts(), 3);
        for (attempts, claimable) in [(0, true), (1, true), (2, true), (3, false), (9, false)] {
            assert_eq!(exhausted(&s, attempts).is_none(), claimable, "{attempts}");
        }
        let why = exhausted(&s, 3).unwrap();
        assert!(
            why.contains("3 attempts") && why.contains("allows 3"),
            "{why}"
        );
    }

    #[test]
    fn the_last_attempt_fails_for_good() {
        let s = RetrySchedule::default();
        let x = decide(&s, 8, &answer(500, None), 0, 0.5);
        assert_eq!((x.status, x.retry_in), (DeliveryStatus::Failed, None));
        assert!(x.error.unwrap().contains("gave up after 8 attempts"));
        let x = decide(&s, 8, &answer(429, Some("1")), 0, 0.5);
        assert_eq!(x.status, DeliveryStatus::Failed);
        let x = decide(&s, 8, &answer(200, None), 0, 0.5);
        assert_eq!(x.status, DeliveryStatus::Delivered);
    }
}
