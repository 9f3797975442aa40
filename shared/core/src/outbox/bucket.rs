//! The per-destination token bucket, kept as its GCRA equivalent (generic cell rate algorithm):
//! ONE number per destination, the theoretical arrival time `tat` (µs), shared by every delivery
//! worker through conditional writes on the destination's state item. Pure: the observed `tat`
//! and the time come in, the write to attempt (or how long to wait) comes out.
//!
//! With rate `r` per second and burst `b`: the emission interval is `T = 1/r`, the tolerance
//! `τ = (b − 1)·T`. A request at `now` conforms iff `tat ≤ now + τ`; it then moves `tat` to
//! `max(tat, now) + T`. Two conditional writes express it without reading first:
//! - [`Take::Reset`]: `tat` absent or `≤ now` (the bucket is full): `SET tat = now + T`;
//! - [`Take::Advance`]: `now < tat ≤ now + τ`: `ADD tat T`.
//!
//! A write whose condition fails returns the stored `tat` (`ALL_OLD`), from which [`decide`]
//! picks the next write or the wait. A 429 holds the bucket ([`held`]): `tat` moves to the
//! moment the receiver asked for (plus `τ`), unless it is already later. Both conditions are checked atomically by the store, so
//! however many workers race, no more than `b + r·t` requests pass in any `t` seconds.
//!
//! Several tokens at once ([`decide_many`], a worker's lease of tokens, [`TokenLease`]): `k`
//! tokens conform iff the last of them does, `tat + (k − 1)·T ≤ now + τ`; they move `tat` by
//! `k·T` (so `k ≤ b`). When fewer are free, [`decide_many`] asks for the ones that are.
//!
//! [`shared`]: the same bucket for any account (a payment provider's), stored in one item.

use std::time::Duration;

pub mod shared;

/// Requests per second and burst.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_sec: f64,
    pub burst: u32,
}

impl Rate {
    /// The emission interval `T` in µs (rounded up: never faster than the rate).
    pub fn interval_us(&self) -> i64 {
        let per_sec = if self.per_sec.is_finite() && self.per_sec > 0.0 {
            self.per_sec
        } else {
            f64::MIN_POSITIVE
        };
        let us = (1_000_000.0 / per_sec).ceil();
        if us >= i64::MAX as f64 {
            i64::MAX / 4
        } else {
            us as i64
        }
    }

    /// The tolerance `τ = (burst − 1)·T` in µs.
    pub fn tolerance_us(&self) -> i64 {
        self.interval_us()
            .saturating_mul(i64::from(self.burst.max(1) - 1))
    }
}

/// The conditional write to attempt, or the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Condition: `tat` absent or `tat ≤ now`; then `tat = new_tat`.
    Reset { now: i64, new_tat: i64 },
    /// Condition: `now < tat ≤ at_most`; then `tat += by`.
    Advance { now: i64, at_most: i64, by: i64 },
    /// Over the rate: a token frees up after this long.
    Wait(Duration),
}

/// The write for a request at `now_us`, given the `tat` last seen (`None`: none stored or not
/// known yet; the guess is then an idle bucket).
pub fn decide(rate: Rate, observed: Option<i64>, now_us: i64) -> Take {
    let t = rate.interval_us();
    let tau = rate.tolerance_us();
    match observed {
        None => Take::Reset {
            now: now_us,
            new_tat: now_us.saturating_add(t),
        },
        Some(tat) if tat <= now_us => Take::Reset {
            now: now_us,
            new_tat: now_us.saturating_add(t),
        },
        Some(tat) if tat <= now_us.saturating_add(tau) => Take::Advance {
            now: now_us,
            at_most: now_us.saturating_add(tau),
            by: t,
        },
        Some(tat) => {
            let wait_us = tat.saturating_sub(tau).saturating_sub(now_us);
            Take::Wait(Duration::from_micros(u64::try_from(wait_us).unwrap_or(0)))
        }
    }
}

/// The write for `want` tokens at `now_us` (at least 1, at most the burst; fewer when fewer are
/// free), with how many it takes: one conditional write, as for one token ([`decide`] is
/// `decide_many(.., 1)`).
pub fn decide_many(rate: Rate, observed: Option<i64>, now_us: i64, want: u32) -> (Take, u32) {
    let t = rate.interval_us();
    let tau = rate.tolerance_us();
    let want = want.clamp(1, rate.burst.max(1));
    let by = |k: u32| t.saturating_mul(i64::from(k));
    match observed {
        None => (
            Take::Reset {
                now: now_us,
                new_tat: now_us.saturating_add(by(want)),
            },
            want,
        ),
        Some(tat) if tat <= now_us => (
            Take::Reset {
                now: now_us,
                new_tat: now_us.saturating_add(by(want)),
            },
            want,
        ),
        Some(tat) if tat <= now_us.saturating_add(tau) => {
            // Free: the k with tat + (k − 1)·T ≤ now + τ.
            let free = (now_us.saturating_add(tau).saturating_sub(tat)) / t.max(1) + 1;
            let k = want.min(u32::try_from(free).unwrap_or(u32::MAX)).max(1);
            (
                Take::Advance {
                    now: now_us,
                    at_most: now_us.saturating_add(tau).saturating_sub(by(k - 1)),
                    by: by(k),
                },
                k,
            )
        }
        Some(tat) => {
            let wait_us = tat.saturating_sub(tau).saturating_sub(now_us);
            (
                Take::Wait(Duration::from_micros(u64::try_from(wait_us).unwrap_or(0))),
                0,
            )
        }
    }
}

/// Tokens a worker took ahead of use ([`decide_many`]): spent locally, one per delivery, until
/// they run out or the lease ends (what is left then is dropped, never given back: a lease can
/// only slow the destination down, and each token was conformant when it was taken). The bucket's
/// bound, `b + r·t` requests in any `t` seconds, becomes `b + r·(t + lease)` sends: a token may
/// be spent up to `lease` after it was taken. The size adapts to the worker's own demand: it
/// doubles when a lease was spent before it ended (up to a cap), and falls to what was spent when
/// tokens were left over, so a worker that sends one delivery now and then takes one token, as
/// without leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLease {
    /// Tokens left.
    pub left: u32,
    /// How many the lease took.
    pub size: u32,
    /// When it ends, ms.
    pub until_ms: i64,
}

impl TokenLease {
    /// Spends one token at `now_ms`, if one is left and the lease has not ended.
    pub fn spend(&mut self, now_ms: i64) -> bool {
        if self.left == 0 || now_ms >= self.until_ms {
            return false;
        }
        self.left -= 1;
        true
    }

    /// How many tokens the next lease asks for after this one (`cap` at most, 1 at least).
    pub fn next_size(&self, cap: u32) -> u32 {
        let spent = self.size - self.left;
        let next = if self.left == 0 {
            self.size.saturating_mul(2)
        } else {
            spent
        };
        next.clamp(1, cap.max(1))
    }
}

/// The `tat` that lets no request conform before `until_us` (the first conforms then, the next
/// ones at the steady rate: the burst is spent): `until + τ`. A destination's 429 holds its
/// bucket this way, so every worker slows down, not only the refused delivery.
pub fn held(rate: Rate, until_us: i64) -> i64 {
    until_us.saturating_add(rate.tolerance_us())
}

/// Applies a write to a stored `tat` the way the store does (for tests and the in-memory model):
/// the new `tat`, or `Err(observed)` when the condition fails.
pub fn apply(stored: Option<i64>, take: Take) -> Result<i64, Option<i64>> {
    match take {
        Take::Reset { now, new_tat } if stored.is_none_or(|tat| tat <= now) => Ok(new_tat),
        Take::Advance { now, at_most, by } => match stored {
            Some(tat) if tat > now && tat <= at_most => Ok(tat.saturating_add(by)),
            _ => Err(stored),
        },
        _ => Err(stored),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes a token at `now` through the decide/apply loop, as a worker does.
    fn take(
        rate: Rate,
        tat: &mut Option<i64>,
        guess: &mut Option<i64>,
        now: i64,
    ) -> Option<Duration> {
        for _ in 0..4 {
            match decide(rate, *guess, now) {
                Take::Wait(w) => return Some(w),
                write => match apply(*tat, write) {
                    Ok(new) => {
                        *tat = Some(new);
                        *guess = Some(new);
                        return None;
                    }
                    Err(seen) => *guess = seen,
                },
            }
        }
        panic!("no decision after 4 rounds")
    }

    #[test]
    fn intervals() {
        assert_eq!(
            Rate {
                per_sec: 5.0,
                burst: 1
            }
            .interval_us(),
            200_000
        );
        assert_eq!(
            Rate {
                per_sec: 3.0,
                burst: 1
            }
            .interval_us(),
            333_334,
            "rounded up"
        );
        assert_eq!(
            Rate {
                per_sec: 5.0,
                burst: 3
            }
            .tolerance_us(),
            400_000
        );
        assert_eq!(
            Rate {
                per_sec: 5.0,
                burst: 0
            }
            .tolerance_us(),
            0,
            "burst 0 counts as 1"
        );
        assert!(
            Rate {
                per_sec: 0.0,
                burst: 1
            }
            .interval_us()
                > 1_000_000_000
        );
        assert!(
            Rate {
                per_sec: f64::NAN,
                burst: 1
            }
            .interval_us()
                > 0
        );
    }

    #[test]
    fn decisions() {
        let r = Rate {
            per_sec: 5.0,
            burst: 3,
        };
        assert_eq!(
            decide(r, None, 1_000),
            Take::Reset {
                now: 1_000,
                new_tat: 201_000
            }
        );
        assert_eq!(
            decide(r, Some(500), 1_000),
            Take::Reset {
                now: 1_000,
                new_tat: 201_000
            }
        );
        assert_eq!(
            decide(r, Some(300_000), 1_000),
            Take::Advance {
                now: 1_000,
                at_most: 401_000,
                by: 200_000
            }
        );
        assert_eq!(
            decide(r, Some(401_000), 1_000),
            Take::Advance {
                now: 1_000,
                at_most: 401_000,
                by: 200_000
            }
        );
        assert_eq!(
            decide(r, Some(401_001), 1_000),
            Take::Wait(Duration::from_micros(1))
        );
        assert_eq!(
            decide(r, Some(601_000), 1_000),
            Take::Wait(Duration::from_millis(200))
        );
    }

    #[test]
    fn conditions_hold_like_the_store() {
        assert_eq!(
            apply(
                None,
                Take::Reset {
                    now: 5,
                    new_tat: 10
                }
            ),
            Ok(10)
        );
        assert_eq!(
            apply(
                Some(5),
                Take::Reset {
                    now: 5,
                    new_tat: 10
                }
            ),
            Ok(10)
        );
        assert_eq!(
            apply(
                Some(6),
                Take::Reset {
                    now: 5,
                    new_tat: 10
                }
            ),
            Err(Some(6))
        );
        assert_eq!(
            apply(
                None,
                Take::Advance {
                    now: 5,
                    at_most: 9,
                    by: 2
                }
            ),
            Err(None)
        );
        assert_eq!(
            apply(
                Some(5),
                Take::Advance {
                    now: 5,
                    at_most: 9,
                    by: 2
                }
            ),
            Err(Some(5))
        );
        assert_eq!(
            apply(
                Some(9),
                Take::Advance {
                    now: 5,
                    at_most: 9,
                    by: 2
                }
            ),
            Ok(11)
        );
        assert_eq!(
            apply(
                Some(10),
                Take::Advance {
                    now: 5,
                    at_most: 9,
                    by: 2
                }
            ),
            Err(Some(10))
        );
        assert_eq!(apply(Some(1), Take::Wait(Duration::ZERO)), Err(Some(1)));
    }

    #[test]
    fn never_more_than_burst_plus_rate_times_time_with_racing_workers() {
        // 10 workers with stale guesses hammer a 5/s bucket, burst 2, for 10 s of simulated time
        // in 1 ms steps: at most 2 + 5·10 requests pass, and the bucket is kept busy.
        let rate = Rate {
            per_sec: 5.0,
            burst: 2,
        };
        let mut tat = None;
        let mut guesses = [None; 10];
        let mut granted = Vec::new();
        for now in (0..10_000_000i64).step_by(1_000) {
            for g in &mut guesses {
                if take(rate, &mut tat, g, now).is_none() {
                    granted.push(now);
                }
            }
        }
        assert!(granted.len() <= 52, "{}", granted.len());
        assert!(granted.len() >= 50, "{}", granted.len());
        // Any window of 1 s holds at most burst + rate requests.
        for (i, start) in granted.iter().enumerate() {
            let n = granted[i..]
                .iter()
                .take_while(|t| **t < start + 1_000_000)
                .count();
            assert!(n <= 2 + 5, "{n} in the second from {start}");
        }
    }

    #[test]
    fn a_held_bucket_lets_nothing_through_before_the_hold_then_the_steady_rate() {
        let rate = Rate {
            per_sec: 2.0,
            burst: 3,
        };
        let until = 10_000_000;
        let mut tat = Some(held(rate, until));
        let mut guess = tat;
        assert_eq!(
            take(rate, &mut tat, &mut guess, until - 1),
            Some(Duration::from_micros(1)),
            "nothing before the hold ends"
        );
        assert_eq!(take(rate, &mut tat, &mut guess, until), None, "one then");
        assert_eq!(
            take(rate, &mut tat, &mut guess, until),
            Some(Duration::from_millis(500)),
            "the burst is spent: the next at the rate"
        );
    }

    #[test]
    fn a_waiting_request_passes_exactly_when_told() {
        let rate = Rate {
            per_sec: 2.0,
            burst: 1,
        };
        let (mut tat, mut guess) = (None, None);
        assert_eq!(take(rate, &mut tat, &mut guess, 0), None);
        let wait = take(rate, &mut tat, &mut guess, 100_000).expect("over the rate");
        assert_eq!(wait, Duration::from_millis(400));
        assert!(take(rate, &mut tat, &mut guess, 499_999).is_some());
        assert_eq!(take(rate, &mut tat, &mut guess, 500_000), None);
    }

    #[test]
    fn many_tokens_take_what_is_free_and_one_is_exactly_decide() {
        let r = Rate {
            per_sec: 10.0,
            burst: 5,
        };
        let t = r.interval_us();
        for (tat, now) in [
            (None, 0),
            (Some(0), 10),
            (Some(300_000), 0),
            (Some(9_999_999), 0),
        ] {
            assert_eq!(
                decide_many(r, tat, now, 1).0,
                decide(r, tat, now),
                "{tat:?} {now}"
            );
        }
        // | stored tat | want | takes | tat after |
        let table = [
            (None, 8, 5, Some(5 * t)), // capped at the burst
            (Some(0), 3, 3, Some(3 * t)),
            (Some(2 * t), 10, 3, Some(5 * t)), // two of five in use: three free
            (Some(4 * t), 10, 1, Some(5 * t)),
            (Some(5 * t), 10, 0, None), // none free: wait
        ];
        for (stored, want, takes, after) in table {
            let (take, k) = decide_many(r, stored, 0, want);
            assert_eq!(k, takes, "{stored:?} {want}");
            match after {
                Some(a) => assert_eq!(apply(stored, take), Ok(a), "{stored:?} {want}"),
                None => assert!(matches!(take, Take::Wait(_))),
            }
        }
    }

    #[test]
    fn leases_of_many_tokens_never_exceed_the_rate_plus_one_lease() {
        // 5 workers lease up to 4 tokens each from a 20/s bucket, burst 4, for 10 s; every
        // token is spent at the moment of its lease's end (the latest it may be): sends in any
        // second stay within b + r·(1 + lease).
        let rate = Rate {
            per_sec: 20.0,
            burst: 4,
        };
        let lease_us = 250_000;
        let mut tat = None;
        let mut guesses = [None; 5];
        let mut sends = Vec::new();
        for step in 0..10_000 {
            let now = step * 1_000;
            for g in &mut guesses {
                let (take, k) = decide_many(rate, *g, now, 4);
                match apply(tat, take) {
                    Ok(new) => {
                        tat = Some(new);
                        *g = Some(new);
                        sends.extend(std::iter::repeat_n(now + lease_us, k as usize));
                    }
                    Err(seen) => *g = seen,
                }
            }
        }
        for start in (0..9_000_000).step_by(100_000) {
            let n = sends
                .iter()
                .filter(|&&s| s >= start && s < start + 1_000_000)
                .count();
            assert!(n <= 4 + 20 + 5, "{n} in the second from {start}");
        }
        assert!(sends.len() >= 190, "the rate is used: {}", sends.len());
    }

    #[test]
    fn a_lease_is_spent_until_it_ends_and_its_size_follows_demand() {
        let mut l = TokenLease {
            left: 2,
            size: 3,
            until_ms: 100,
        };
        assert!(l.spend(10));
        assert!(l.spend(20));
        assert!(!l.spend(30), "none left");
        assert_eq!(l.next_size(8), 6, "spent before its end: doubles");
        assert_eq!(l.next_size(4), 4, "up to the cap");
        let mut idle = TokenLease {
            left: 3,
            size: 4,
            until_ms: 100,
        };
        assert!(!idle.spend(100), "ended");
        assert_eq!(idle.next_size(8), 1, "one spent of four: one next");
        let unused = TokenLease {
            left: 4,
            size: 4,
            until_ms: 0,
        };
        assert_eq!(unused.next_size(8), 1, "at least one");
    }
}
