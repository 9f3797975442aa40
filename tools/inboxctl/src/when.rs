//! Times on the command line and in output: `WHEN` arguments (RFC 3339, a date, or an age such
//! as `2h`), UTC timestamps for tables and JSON, and human ages (`3d 4h`).

use std::fmt;
use std::str::FromStr;

const SECOND: i64 = 1_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// A point in time as typed: absolute, or an age relative to now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Milliseconds since the epoch.
    At(i64),
    /// This many milliseconds before now.
    Ago(i64),
}

impl When {
    /// Milliseconds since the epoch, with `now_ms` for relative ages.
    pub fn resolve(self, now_ms: i64) -> i64 {
        match self {
            Self::At(ms) => ms,
            Self::Ago(ms) => now_ms.saturating_sub(ms),
        }
    }
}

/// Why a `WHEN` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadWhen(String);

impl fmt::Display for BadWhen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is neither an RFC 3339 time (2026-11-30T10:00:00Z), a date (2026-11-30) nor an age (90s, 30m, 2h, 7d, 2w)",
            self.0
        )
    }
}

impl std::error::Error for BadWhen {}

impl FromStr for When {
    type Err = BadWhen;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadWhen(s.to_owned());
        let t = s.trim();
        if let Some(ms) = parse_age(t) {
            return Ok(Self::Ago(ms));
        }
        if let Ok(ts) = t.parse::<jiff::Timestamp>() {
            return Ok(Self::At(ts.as_millisecond()));
        }
        if let Ok(date) = t.parse::<jiff::civil::Date>() {
            let ts = date
                .to_zoned_datetime(jiff::tz::TimeZone::UTC)
                .map_err(|_| bad())?
                .timestamp();
            return Ok(Self::At(ts.as_millisecond()));
        }
        Err(bad())
    }
}

/// `90s`, `30m`, `2h`, `7d`, `2w` → milliseconds.
fn parse_age(s: &str) -> Option<i64> {
    let unit_at = s.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = s.split_at(unit_at);
    let n: i64 = digits.parse().ok()?;
    let unit_ms = match unit {
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        "d" => DAY,
        "w" => 7 * DAY,
        _ => return None,
    };
    n.checked_mul(unit_ms)
}

/// A millisecond timestamp as RFC 3339 UTC (`2026-11-30T10:00:00.123Z`), for JSON.
pub fn rfc3339(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => ts.to_string(),
        Err(_) => ms.to_string(),
    }
}

/// A millisecond timestamp for tables: `2026-11-30 10:00:00` (UTC).
pub fn human(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => ts.strftime("%Y-%m-%d %H:%M:%S").to_string(),
        Err(_) => ms.to_string(),
    }
}

/// A millisecond timestamp to the millisecond: `2026-11-30 10:00:00.123 UTC`.
pub fn human_ms(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => ts.strftime("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        Err(_) => ms.to_string(),
    }
}

/// A duration in milliseconds, to two units: `45s`, `12m 5s`, `3h 20m`, `4d 2h`.
pub fn age(ms: i64) -> String {
    let (sign, ms) = if ms < 0 { ("-", -ms) } else { ("", ms) };
    let units = [(DAY, "d"), (HOUR, "h"), (MINUTE, "m"), (SECOND, "s")];
    let mut parts = Vec::new();
    let mut rest = ms;
    for (size, name) in units {
        let n = rest / size;
        if n > 0 || !parts.is_empty() {
            parts.push(format!("{n}{name}"));
            rest -= n * size;
        }
        if parts.len() == 2 {
            break;
        }
    }
    if parts.is_empty() {
        return format!("{sign}{ms}ms");
    }
    if parts.len() == 2 && parts[1].starts_with('0') {
        parts.pop();
    }
    format!("{sign}{}", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse() {
        assert_eq!("2h".parse(), Ok(When::Ago(2 * HOUR)));
        assert_eq!("30m".parse(), Ok(When::Ago(30 * MINUTE)));
        assert_eq!("7d".parse(), Ok(When::Ago(7 * DAY)));
        assert_eq!("90s".parse(), Ok(When::Ago(90 * SECOND)));
        assert_eq!("1w".parse(), Ok(When::Ago(7 * DAY)));
        assert_eq!(When::Ago(2 * HOUR).resolve(10 * HOUR), 8 * HOUR);
        for bad in [
            "",
            "h",
            "2",
            "2y",
            "-2h",
            "2 h",
            "two hours",
            "99999999999999999999d",
        ] {
            assert!(bad.parse::<When>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn absolute_times_parse() {
        assert_eq!(
            "2026-11-30T10:00:00Z".parse(),
            Ok(When::At(1_796_032_800_000))
        );
        assert_eq!(
            "2026-11-30T11:00:00+01:00".parse(),
            Ok(When::At(1_796_032_800_000))
        );
        assert_eq!("2026-11-30".parse(), Ok(When::At(1_795_996_800_000)));
        assert_eq!(When::At(5).resolve(10), 5);
    }

    #[test]
    fn formats() {
        assert_eq!(rfc3339(1_796_032_800_123), "2026-11-30T10:00:00.123Z");
        assert_eq!(human(1_796_032_800_123), "2026-11-30 10:00:00");
        assert_eq!(age(450), "450ms");
        assert_eq!(age(45 * SECOND), "45s");
        assert_eq!(age(12 * MINUTE + 5 * SECOND), "12m 5s");
        assert_eq!(age(3 * HOUR + 20 * MINUTE + 7 * SECOND), "3h 20m");
        assert_eq!(age(4 * DAY + 2 * HOUR), "4d 2h");
        assert_eq!(age(2 * DAY + 30 * SECOND), "2d");
        assert_eq!(age(-90 * SECOND), "-1m 30s");
    }
}
