//! When a deferred delivery is looked at again: the time it waits for (the circuit's cool-down,
//! the next token, a paused destination's recheck) spread by a random draw, so that the
//! deferrals of one destination (an open circuit defers every delivery to the same instant) do
//! not all come due at once, in the queue and in the sweep.

/// The largest spread, as a part of the wait: a wait `w` ends uniformly in `[w, 1.2 w]`.
pub const SPREAD: f64 = 0.2;
/// The largest spread, ms, whatever the wait.
pub const MAX_SPREAD_MS: i64 = 60_000;

/// `until`, deferred at `now`, moved later by up to [`SPREAD`] of the wait (at most
/// [`MAX_SPREAD_MS`]); `unit` is a random draw in `[0, 1)` (clamped). Never earlier than `until`.
pub fn spread(now: i64, until: i64, unit: f64) -> i64 {
    let wait = until.saturating_sub(now).max(0);
    let most = ((wait as f64) * SPREAD).min(MAX_SPREAD_MS as f64);
    // `as` saturates: a non-finite draw clamps to 0 or the most.
    until.saturating_add((most * unit.clamp(0.0, 1.0)) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_spread_by_up_to_a_fifth_never_earlier() {
        for (now, until, unit, expect) in [
            (0, 30_000, 0.0, 30_000),
            (0, 30_000, 0.5, 33_000),
            (0, 30_000, 0.999_999, 35_999),
            (0, 30_000, 1.5, 36_000),
            (0, 30_000, -1.0, 30_000),
            (0, 30_000, f64::NAN, 30_000),
            (1_000, 1_500, 0.5, 1_550),
            (0, 3_600_000, 1.0, 3_660_000),
            (5_000, 5_000, 0.9, 5_000),
            (5_000, 4_000, 0.9, 4_000),
            (0, i64::MAX, 1.0, i64::MAX),
        ] {
            assert_eq!(spread(now, until, unit), expect, "{now} {until} {unit}");
        }
    }
}
