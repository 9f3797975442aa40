//! The retry schedule of a destination and `Retry-After`: pure functions, the time and the random
//! draw passed in.
//!
//! A schedule is the list of delays before each attempt: the default `0, 5s, 5m, 30m, 2h, 5h, 10h,
//! 10h` sends at once, then retries 5 s after the first failure, 5 min after the second, … (8
//! attempts). Each delay gets ±20 % jitter. A `Retry-After` (429, 503; seconds or an HTTP date)
//! moves the next attempt to the later of the schedule and the header, capped at
//! [`MAX_RETRY_AFTER`] (or the schedule's longest step when that is longer): a receiver's explicit
//! request is honoured whatever the schedule (Svix: the backoff, up to 2 h more). After the last
//! attempt the delivery fails.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The relative jitter on every delay: a delay `d` becomes a uniform draw in `[0.8 d, 1.2 d]`.
pub const JITTER: f64 = 0.2;
/// Longest schedule step accepted.
pub const MAX_STEP: Duration = Duration::from_secs(7 * 24 * 3600);
/// The longest `Retry-After` honoured however short the destination's schedule (a longer one
/// waits this long; a schedule with a longer step raises the cap to that step).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);
/// Most attempts a schedule may have.
pub const MAX_STEPS: usize = 30;

/// Delays before each attempt, in order (ms in the table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "Vec<u64>")]
pub struct RetrySchedule(Vec<Duration>);

/// Why a schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("retry schedule: {0}")]
pub struct ScheduleError(String);

impl Default for RetrySchedule {
    fn default() -> Self {
        let s = |secs: u64| Duration::from_secs(secs);
        Self(vec![
            s(0),
            s(5),
            s(300),
            s(1800),
            s(7200),
            s(18_000),
            s(36_000),
            s(36_000),
        ])
    }
}

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Try again after this delay.
    RetryIn(Duration),
    /// That was the last attempt.
    GiveUp,
}

impl RetrySchedule {
    /// A schedule of these delays (at least one step, each at most [`MAX_STEP`]).
    pub fn new(steps: Vec<Duration>) -> Result<Self, ScheduleError> {
        if steps.is_empty() || steps.len() > MAX_STEPS {
            return Err(ScheduleError(format!(
                "between 1 and {MAX_STEPS} steps, got {}",
                steps.len()
            )));
        }
        if let Some(s) = steps.iter().find(|s| **s > MAX_STEP) {
            return Err(ScheduleError(format!(
                "a step of {} s is longer than {} s",
                s.as_secs(),
                MAX_STEP.as_secs()
            )));
        }
        Ok(Self(steps))
    }

    /// Parses `0,5s,5m,30m,2h` (a bare number is milliseconds).
    pub fn parse(text: &str) -> Result<Self, ScheduleError> {
        let steps = text
            .split(',')
            .map(|s| {
                parse_duration(s.trim()).ok_or_else(|| {
                    ScheduleError(format!("{s:?} is not a duration such as 500, 5s, 5m, 2h"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(steps)
    }

    /// The delays.
    pub fn steps(&self) -> &[Duration] {
        &self.0
    }

    /// How many attempts the schedule allows.
    pub fn max_attempts(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX)
    }

    /// The longest step.
    pub fn longest(&self) -> Duration {
        self.0.iter().copied().max().unwrap_or_default()
    }

    /// The cap on a `Retry-After`: [`MAX_RETRY_AFTER`], or the longest step when longer.
    pub fn retry_after_cap(&self) -> Duration {
        self.longest().max(MAX_RETRY_AFTER)
    }

    /// The delay before attempt `attempt` (1-based) with jitter (`unit` a random draw in
    /// `[0, 1)`, clamped), or `None` past the last step.
    pub fn delay_before(&self, attempt: u32, unit: f64) -> Option<Duration> {
        let step = *self.0.get(usize::try_from(attempt.checked_sub(1)?).ok()?)?;
        Some(jittered(step, unit))
    }

    /// What follows the failure of attempt `attempt` (1-based): the next step with jitter, or the
    /// `Retry-After` if later (capped at [`Self::retry_after_cap`]); [`Next::GiveUp`] after the
    /// last.
    pub fn after_failure(&self, attempt: u32, retry_after: Option<Duration>, unit: f64) -> Next {
        match self.delay_before(attempt.saturating_add(1), unit) {
            None => Next::GiveUp,
            Some(scheduled) => {
                let asked = retry_after.map_or(Duration::ZERO, |r| r.min(self.retry_after_cap()));
                Next::RetryIn(scheduled.max(asked))
            }
        }
    }
}

impl fmt::Display for RetrySchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|d| format_duration(*d)).collect();
        f.write_str(&parts.join(","))
    }
}

impl TryFrom<Vec<u64>> for RetrySchedule {
    type Error = ScheduleError;
    fn try_from(ms: Vec<u64>) -> Result<Self, Self::Error> {
        Self::new(ms.into_iter().map(Duration::from_millis).collect())
    }
}

impl From<RetrySchedule> for Vec<u64> {
    fn from(s: RetrySchedule) -> Self {
        s.0.iter()
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .collect()
    }
}

/// `d` scaled by a uniform factor in `[1 − JITTER, 1 + JITTER]` (`unit` in `[0, 1)`, clamped).
pub fn jittered(d: Duration, unit: f64) -> Duration {
    let unit = if unit.is_nan() {
        0.5
    } else {
        unit.clamp(0.0, 1.0)
    };
    d.mul_f64(1.0 - JITTER + 2.0 * JITTER * unit)
}

/// `500` (ms), `5s`, `5m`, `2h`, `1d`; `None` if it is none of these.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (number, unit_ms) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (text, 1),
        Some((i, _)) => {
            let unit = match &text[i..] {
                "ms" => 1,
                "s" => 1000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => return None,
            };
            (&text[..i], unit)
        }
    };
    let n: u64 = number.parse().ok()?;
    n.checked_mul(unit_ms).map(Duration::from_millis)
}

/// The shortest of `5s`, `5m`, `2h`, `1500ms` that says `d` exactly.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    if ms == 0 {
        "0".into()
    } else {
        format!("{ms}ms")
    }
}

/// A `Retry-After` value: delay-seconds (`7`) or an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`),
/// relative to `now_ms`. A date in the past is no delay; anything else unreadable is `None`.
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    static PARSER: jiff::fmt::rfc2822::DateTimeParser = jiff::fmt::rfc2822::DateTimeParser::new();
    let at = PARSER.parse_timestamp(value).ok()?;
    let delta = at.as_millisecond().saturating_sub(now_ms);
    Some(Duration::from_millis(u64::try_from(delta).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn the_default_schedule_is_the_documented_one() {
        let s = RetrySchedule::default();
        assert_eq!(s.to_string(), "0,5s,5m,30m,2h,5h,10h,10h");
        assert_eq!(s.max_attempts(), 8);
        assert_eq!(s.longest(), S(36_000));
        assert_eq!(s.delay_before(1, 0.5), Some(Duration::ZERO), "at once");
        assert_eq!(s.delay_before(2, 0.5), Some(S(5)));
        assert_eq!(s.delay_before(8, 0.5), Some(S(36_000)));
        assert_eq!(s.delay_before(9, 0.5), None);
        assert_eq!(s.delay_before(0, 0.5), None);
    }

    #[test]
    fn jitter_is_plus_minus_twenty_percent() {
        let s = RetrySchedule::default();
        assert_eq!(s.delay_before(3, 0.0), Some(S(240)));
        assert_eq!(s.delay_before(3, 1.0), Some(S(360)));
        assert_eq!(s.delay_before(3, 7.0), Some(S(360)), "clamped");
        assert_eq!(s.delay_before(3, -1.0), Some(S(240)), "clamped");
        assert_eq!(s.delay_before(3, f64::NAN), Some(S(300)));
        for u in [0.0, 0.13, 0.5, 0.77, 0.999] {
            let d = s.delay_before(2, u).unwrap();
            assert!(d >= S(4) && d <= S(6), "{d:?}");
        }
    }

    #[test]
    fn after_failure_follows_the_schedule_then_gives_up() {
        let s = RetrySchedule::default();
        assert_eq!(s.after_failure(1, None, 0.5), Next::RetryIn(S(5)));
        assert_eq!(s.after_failure(2, None, 0.5), Next::RetryIn(S(300)));
        assert_eq!(s.after_failure(7, None, 0.5), Next::RetryIn(S(36_000)));
        assert_eq!(s.after_failure(8, None, 0.5), Next::GiveUp);
        assert_eq!(s.after_failure(u32::MAX, None, 0.5), Next::GiveUp);
    }

    #[test]
    fn retry_after_wins_when_later_and_is_capped() {
        let s = RetrySchedule::default();
        // 429 with Retry-After: 7 after the first attempt: max(5 s ± 20 %, 7 s) = 7 s.
        for u in [0.0, 0.5, 0.999] {
            assert_eq!(s.after_failure(1, Some(S(7)), u), Next::RetryIn(S(7)));
        }
        assert_eq!(
            s.after_failure(2, Some(S(7)), 0.5),
            Next::RetryIn(S(300)),
            "schedule later"
        );
        assert_eq!(
            s.after_failure(1, Some(S(1_000_000)), 0.5),
            Next::RetryIn(S(36_000)),
            "capped at the longest step"
        );
        assert_eq!(s.after_failure(8, Some(S(7)), 0.5), Next::GiveUp);
    }

    #[test]
    fn retry_after_is_honoured_up_to_an_hour_whatever_the_schedule() {
        // The longest step is 2 s: a receiver's `Retry-After: 7` still waits 7 s.
        let s = RetrySchedule::parse("0,2s,2s,2s,2s").unwrap();
        assert_eq!(s.after_failure(1, Some(S(7)), 0.5), Next::RetryIn(S(7)));
        assert_eq!(
            s.after_failure(1, Some(S(3600)), 0.5),
            Next::RetryIn(S(3600))
        );
        assert_eq!(
            s.after_failure(1, Some(S(7200)), 0.5),
            Next::RetryIn(MAX_RETRY_AFTER),
            "an absolute bound"
        );
        assert_eq!(s.after_failure(1, None, 0.5), Next::RetryIn(S(2)));
        assert_eq!(s.retry_after_cap(), MAX_RETRY_AFTER);
        assert_eq!(RetrySchedule::default().retry_after_cap(), S(36_000));
    }

    #[test]
    fn retry_after_values() {
        let now = 1_445_412_480_000; // Wed, 21 Oct 2015 07:28:00 GMT
        assert_eq!(parse_retry_after("7", now), Some(S(7)));
        assert_eq!(parse_retry_after(" 120 ", now), Some(S(120)));
        assert_eq!(parse_retry_after("0", now), Some(S(0)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:07 GMT", now),
            Some(S(7))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(S(0)),
            "past"
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 08:28:00 +0100", now),
            Some(S(0))
        );
        for bad in [
            "",
            "-1",
            "1.5",
            "soon",
            "99999999999999999999999",
            "Wed, 32 Oct 2015 07:28:00 GMT",
        ] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn schedules_parse_and_print() {
        let s = RetrySchedule::parse("0, 500, 5s,1m,2h,1d").unwrap();
        assert_eq!(s.to_string(), "0,500ms,5s,1m,2h,1d");
        assert_eq!(RetrySchedule::parse(&s.to_string()).unwrap(), s);
        for bad in ["", "x", "5y", "1,,2", "8d"] {
            assert!(RetrySchedule::parse(bad).is_err(), "{bad:?}");
        }
        assert!(RetrySchedule::new(vec![S(1); MAX_STEPS + 1]).is_err());
        let json = serde_json::to_string(&RetrySchedule::default()).unwrap();
        assert_eq!(
            json,
            "[0,5000,300000,1800000,7200000,18000000,36000000,36000000]"
        );
        assert_eq!(
            serde_json::from_str::<RetrySchedule>(&json).unwrap(),
            RetrySchedule::default()
        );
        assert!(serde_json::from_str::<RetrySchedule>("[]").is_err());
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
    }

    proptest::proptest! {
        #![proptest_config(crate::fuzz::config(512))]

        /// A receiver's `Retry-After`, any text: seconds, an HTTP date, or ignored; never a panic,
        /// never a negative wait. Seconds are taken as they are; a date in the past is now.
        #[test]
        fn fuzz_retry_after_takes_any_text(
            text in proptest::prop_oneof![
                "[ -~]{0,40}",
                "[0-9 ]{0,30}",
                proptest::prelude::any::<String>(),
            ],
            secs in 0i64..4_000_000_000,
            now_ms in proptest::prop_oneof![0i64..4_000_000_000_000, proptest::prelude::Just(i64::MIN), proptest::prelude::Just(i64::MAX)],
        ) {
            let _ = parse_retry_after(&text, now_ms);
            let digits = text.trim();
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                proptest::prop_assert_eq!(
                    parse_retry_after(&text, now_ms),
                    digits.parse::<u64>().ok().map(Duration::from_secs)
                );
            }
            let at = jiff::Timestamp::from_second(secs).unwrap();
            let date = jiff::fmt::rfc2822::DateTimePrinter::new()
                .timestamp_to_rfc9110_string(&at)
                .unwrap();
            let expected = u64::try_from((secs * 1000).saturating_sub(now_ms)).unwrap_or(0);
            proptest::prop_assert_eq!(
                parse_retry_after(&date, now_ms),
                Some(Duration::from_millis(expected)),
                "{}", date
            );
        }
    }
}
