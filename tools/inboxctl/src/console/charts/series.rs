//! The charts' figures, pure: a time window cut into buckets, counts per bucket by status, a
//! destination's attempts per bucket (success rate, p50/p99 of their durations), and a wallet's
//! balance after each of its last entries. No I/O and no clock: the reads ([`super::read`]) pass
//! what they read and the time.

use crate::commands::stats::outbox::quantile;
use std::collections::BTreeMap;

/// A time window `[start, end)` cut into buckets of `step` ms, the last one ending at `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub end: i64,
    pub step: i64,
}

impl Window {
    /// The `span` ms up to `now`, in buckets of `step` ms aligned to `step` (the last bucket is
    /// the one holding `now`). A `step` below 1 ms is taken as 1 ms; `span` rounds up to a step.
    pub fn last(now: i64, span: i64, step: i64) -> Self {
        let step = step.max(1);
        let end = (now.div_euclid(step) + 1) * step;
        let buckets = ((span.max(1) + step - 1) / step).max(1);
        Self {
            start: end - buckets * step,
            end,
            step,
        }
    }

    /// How many buckets it has.
    pub fn buckets(&self) -> usize {
        usize::try_from((self.end - self.start) / self.step).unwrap_or(0)
    }

    /// The bucket of a time, if the window holds it.
    pub fn index(&self, at: i64) -> Option<usize> {
        (self.start..self.end)
            .contains(&at)
            .then(|| usize::try_from((at - self.start) / self.step).ok())
            .flatten()
    }

    /// When bucket `i` starts.
    pub fn at(&self, i: usize) -> i64 {
        self.start + i64::try_from(i).unwrap_or(i64::MAX / 2) * self.step
    }
}

/// Counts per bucket of each status named (a `Vec` the window's length per status; statuses in
/// name order; what the window does not hold is left out).
pub fn counts_by_status<'a>(
    window: &Window,
    items: impl IntoIterator<Item = (i64, &'a str)>,
) -> BTreeMap<String, Vec<u64>> {
    let mut by: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (at, status) in items {
        if let Some(i) = window.index(at) {
            let row = by
                .entry(status.to_owned())
                .or_insert_with(|| vec![0; window.buckets()]);
            if let Some(n) = row.get_mut(i) {
                *n += 1;
            }
        }
    }
    by
}

/// One attempt to deliver: when, whether it got a 2xx, how long it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub at: i64,
    pub ok: bool,
    pub duration_ms: u64,
}

/// A bucket's attempts: how many, how many got a 2xx, and the p50/p99 of their durations.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AttemptBucket {
    pub attempts: u64,
    pub ok: u64,
    pub p50_ms: Option<i64>,
    pub p99_ms: Option<i64>,
}

impl AttemptBucket {
    /// The share of attempts that got a 2xx (none without attempts).
    pub fn success_rate(&self) -> Option<f64> {
        (self.attempts > 0).then(|| self.ok as f64 / self.attempts as f64)
    }
}

/// The window's buckets of `attempts` (those outside it left out).
pub fn attempt_buckets(
    window: &Window,
    attempts: impl IntoIterator<Item = Attempt>,
) -> Vec<AttemptBucket> {
    let mut durations: Vec<Vec<i64>> = vec![Vec::new(); window.buckets()];
    let mut out = vec![AttemptBucket::default(); window.buckets()];
    for a in attempts {
        let Some(i) = window.index(a.at) else {
            continue;
        };
        if let (Some(b), Some(d)) = (out.get_mut(i), durations.get_mut(i)) {
            b.attempts += 1;
            b.ok += u64::from(a.ok);
            d.push(i64::try_from(a.duration_ms).unwrap_or(i64::MAX));
        }
    }
    for (b, d) in out.iter_mut().zip(durations.iter_mut()) {
        d.sort_unstable();
        b.p50_ms = quantile(d, 0.5);
        b.p99_ms = quantile(d, 0.99);
    }
    out
}

/// A wallet's balance after each of its last `cap` entries, oldest first, worked back from its
/// balance now (`(time, balance delta)` of every entry read, oldest first): the points, and
/// whether older entries were left out. Working back from the stored balance keeps the recent
/// points right whatever older entries are missing (expired, unreadable).
pub fn balance_after(
    now_balance: i64,
    entries: &[(i64, i64)],
    cap: usize,
) -> (Vec<(i64, i64)>, bool) {
    let shown = &entries[entries.len().saturating_sub(cap)..];
    let mut balance = now_balance;
    let mut points: Vec<(i64, i64)> = shown
        .iter()
        .rev()
        .map(|&(at, delta)| {
            let after = balance;
            balance = balance.saturating_sub(delta);
            (at, after)
        })
        .collect();
    points.reverse();
    (points, entries.len() > shown.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn a_window_ends_with_the_bucket_holding_now() {
        let now = 10 * MIN + 30_000;
        let w = Window::last(now, 3 * MIN, MIN);
        assert_eq!((w.start, w.end, w.buckets()), (8 * MIN, 11 * MIN, 3));
        assert_eq!(w.index(now), Some(2));
        assert_eq!(w.index(8 * MIN), Some(0));
        assert_eq!(w.index(8 * MIN - 1), None);
        assert_eq!(w.index(11 * MIN), None);
        assert_eq!(w.at(1), 9 * MIN);
        // A span that is not a whole number of steps rounds up; a zero step is 1 ms.
        assert_eq!(Window::last(now, 3 * MIN + 1, MIN).buckets(), 4);
        assert_eq!(Window::last(5, 3, 0).buckets(), 3);
    }

    #[test]
    fn counts_go_to_their_minute_and_status() {
        let w = Window::last(3 * MIN - 1, 3 * MIN, MIN);
        let items = [
            (0, "processed"),
            (MIN - 1, "processed"),
            (MIN, "failed"),
            (2 * MIN + 5, "processed"),
            (3 * MIN, "processed"), // after the window
            (-1, "failed"),         // before it
        ];
        let by = counts_by_status(&w, items);
        assert_eq!(by.len(), 2);
        assert_eq!(by["processed"], vec![2, 0, 1]);
        assert_eq!(by["failed"], vec![0, 1, 0]);
        assert!(counts_by_status(&w, []).is_empty());
    }

    #[test]
    fn attempts_make_a_rate_and_percentiles_per_bucket() {
        let w = Window::last(2 * MIN - 1, 2 * MIN, MIN);
        let a = |at, ok, duration_ms| Attempt {
            at,
            ok,
            duration_ms,
        };
        let mut attempts: Vec<Attempt> = (1..=100).map(|d| a(10, d % 4 != 0, d)).collect();
        attempts.push(a(MIN + 1, false, 7));
        let b = attempt_buckets(&w, attempts);
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].attempts, b[0].ok), (100, 75));
        assert_eq!(b[0].success_rate(), Some(0.75));
        assert_eq!((b[0].p50_ms, b[0].p99_ms), (Some(50), Some(99)));
        // One point: its own p50 and p99; no success.
        assert_eq!(
            (b[1].p50_ms, b[1].p99_ms, b[1].success_rate()),
            (Some(7), Some(7), Some(0.0))
        );
        // No attempts: no rate, no percentiles (a gap, not a zero).
        let empty = attempt_buckets(&w, []);
        assert_eq!(empty[0].success_rate(), None);
        assert_eq!(empty[0].p50_ms, None);
    }

    #[test]
    fn the_balance_is_worked_back_from_now() {
        // +2000, -300, -300: the balance now is 1400.
        let entries = [(1, 2000), (2, -300), (3, -300)];
        let (points, cut) = balance_after(1400, &entries, 10);
        assert_eq!(points, vec![(1, 2000), (2, 1700), (3, 1400)]);
        assert!(!cut);
        let (points, cut) = balance_after(1400, &entries, 2);
        assert_eq!(points, vec![(2, 1700), (3, 1400)]);
        assert!(cut);
        assert_eq!(balance_after(5, &[], 10), (vec![], false));
    }
}
