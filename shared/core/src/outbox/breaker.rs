//! The per-destination circuit breaker, pure: the shared state ([`Circuit`], kept on the
//! destination's state item), whether to send now ([`admit`]), what an attempt's result does to
//! it ([`after`]), and what the worker does once the store has counted it: open the circuit
//! ([`opens_on_count`]) or disable the destination ([`disable_since`]).
//!
//! Closed: every delivery is sent. After `failures` consecutive failures (5xx, 408, timeouts,
//! connection errors; not 429 nor other 4xx, which say the destination is up) it opens: nothing is
//! sent for a cool-down, then ONE probe is let through (a lease on the state item, so one worker
//! probes while the others wait). A success closes it; a failure re-opens it for another
//! cool-down. The cool-down is `cooldown` at first and grows with the outage ([`cooldown_of`]: a
//! quarter of how long the destination had been failing when the circuit last opened, at most
//! `max_cooldown`), so a destination down for a day is probed every few minutes, not twice a
//! minute. A destination failing without a single success for `disable_after` is disabled (an
//! operator resumes it).

use std::time::Duration;

/// Breaker settings (the same for every destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Consecutive failures that open the circuit.
    pub failures: u32,
    /// How long an open circuit sends nothing before a probe (the first cool-down).
    pub cooldown: Duration,
    /// The longest cool-down of a long outage ([`cooldown_of`]; never below `cooldown`).
    pub max_cooldown: Duration,
    /// How long a destination may fail without a success before it is disabled.
    pub disable_after: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failures: 5,
            cooldown: Duration::from_secs(30),
            max_cooldown: Duration::from_secs(300),
            disable_after: Duration::from_secs(24 * 3600),
        }
    }
}

/// How long the circuit `c`, open, cools down before its next probe: `cooldown` at first, then a
/// quarter of how long the destination had been failing when it (re-)opened, at most
/// `max_cooldown` (never below `cooldown`). With the defaults (30 s, 5 min): 30 s for the first
/// two minutes of an outage, a minute after four, five minutes after twenty. A probe is a real
/// delivery (a POST, an attempt and about five writes): a day's outage probed every 30 s would
/// cost 2,880 of them, every 5 min 288.
pub fn cooldown_of(cfg: &BreakerConfig, c: &Circuit) -> i64 {
    let first = millis(cfg.cooldown);
    let most = millis(cfg.max_cooldown).max(first);
    let failing = match (c.opened_at, c.failing_since) {
        (Some(opened), Some(since)) => opened.saturating_sub(since).max(0),
        _ => 0,
    };
    (failing / 4).clamp(first, most)
}

/// The shared state of a destination's circuit (ms since the epoch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Circuit {
    /// Consecutive failures.
    pub failures: u32,
    /// When the current run of failures began.
    pub failing_since: Option<i64>,
    /// When the circuit opened; `None`: closed.
    pub opened_at: Option<i64>,
    /// A probe in flight holds the circuit until then.
    pub probe_until: Option<i64>,
}

/// The circuit's state, for operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CircuitState {
    Closed,
    Open,
    HalfOpen,
}

impl CircuitState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half-open",
        }
    }
}

impl Circuit {
    /// Closed, open (cooling down) or half-open (cooled down: the next delivery probes).
    pub fn state(&self, cfg: &BreakerConfig, now: i64) -> CircuitState {
        match self.opened_at {
            None => CircuitState::Closed,
            Some(at) if now < at.saturating_add(cooldown_of(cfg, self)) => CircuitState::Open,
            Some(_) => CircuitState::HalfOpen,
        }
    }
}

/// Whether a delivery may be sent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Closed: send.
    Send,
    /// Cooled down and nobody probes: take the probe lease (conditional on `opened_at`), then send.
    Probe { opened_at: i64, until: i64 },
    /// Open (or another worker probes): try again at this time, without counting an attempt.
    Hold { until: i64 },
}

/// What the result of an attempt means for the circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The destination answered (2xx, or a 4xx that is about this delivery).
    Up,
    /// It failed (5xx, 408, timeout, connection error).
    Down,
    /// Says nothing about the destination (429, refused by the SSRF guard).
    Neutral,
}

/// The write an attempt's result asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing to write (a success on a closed circuit: the common case costs no request).
    None,
    /// Close and forget the failures.
    Reset,
    /// Count a failure (`failing_since` set if unset); `open`: (re)open the circuit now;
    /// `disable`: the destination has failed for longer than `disable_after`.
    Fail { open: bool, disable: bool },
}

/// Whether to send now; `probe_lease` is how long a probe holds the half-open circuit (the
/// request's timeout plus a margin).
pub fn admit(cfg: &BreakerConfig, c: &Circuit, now: i64, probe_lease: Duration) -> Admit {
    let Some(opened_at) = c.opened_at else {
        return Admit::Send;
    };
    let cooled = opened_at.saturating_add(cooldown_of(cfg, c));
    if now < cooled {
        return Admit::Hold { until: cooled };
    }
    match c.probe_until {
        Some(until) if until > now => Admit::Hold { until },
        _ => Admit::Probe {
            opened_at,
            until: now.saturating_add(millis(probe_lease)),
        },
    }
}

/// What an attempt's result at `now` does to the circuit as last read.
pub fn after(cfg: &BreakerConfig, c: &Circuit, verdict: Verdict, now: i64) -> Change {
    match verdict {
        Verdict::Neutral => Change::None,
        Verdict::Up if c.failures == 0 && c.opened_at.is_none() && c.failing_since.is_none() => {
            Change::None
        }
        Verdict::Up => Change::Reset,
        Verdict::Down => {
            let failures = c.failures.saturating_add(1);
            let since = c.failing_since.unwrap_or(now);
            // Reaching the threshold opens it; a failed probe (open, cooled down) re-opens it.
            let open = match c.opened_at {
                None => failures >= cfg.failures.max(1),
                Some(_) => c.state(cfg, now) != CircuitState::Open,
            };
            let disable = now.saturating_sub(since) >= millis(cfg.disable_after)
                && (open || c.opened_at.is_some());
            Change::Fail { open, disable }
        }
    }
}

/// Whether the worker whose failure the store counted (`change`, which did not itself open the
/// circuit) opens it: the circuit as counted (`counted`) is still closed and its count reached the
/// threshold. Workers that failed at once each counted on the state they had read, so several may
/// see the threshold; the store's open is conditional on a closed circuit, so one of them opens it.
pub fn opens_on_count(cfg: &BreakerConfig, change: Change, counted: Option<&Circuit>) -> bool {
    matches!(change, Change::Fail { open: false, .. })
        && counted.is_some_and(|c| c.opened_at.is_none() && c.failures >= cfg.failures.max(1))
}

/// Whether the destination is disabled after `change` at `now`, and since when it has been
/// failing: asked by [`after`] (`disable`), or the circuit as counted is open and its run of
/// failures is at least `disable_after` old. `read` is the circuit the worker read before, for
/// when the answer did not carry `failing_since`.
pub fn disable_since(
    cfg: &BreakerConfig,
    read: &Circuit,
    change: Change,
    counted: Option<&Circuit>,
    now: i64,
) -> Option<i64> {
    let disable = match (change, counted) {
        (Change::Fail { disable: true, .. }, _) => true,
        (Change::Fail { .. }, Some(c)) => {
            c.opened_at.is_some()
                && now.saturating_sub(c.failing_since.unwrap_or(now)) >= millis(cfg.disable_after)
        }
        _ => false,
    };
    disable.then(|| {
        counted
            .and_then(|c| c.failing_since)
            .or(read.failing_since)
            .unwrap_or(now)
    })
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BreakerConfig {
        BreakerConfig {
            failures: 3,
            cooldown: Duration::from_secs(30),
            max_cooldown: Duration::from_secs(300),
            disable_after: Duration::from_secs(3600),
        }
    }

    #[test]
    fn the_cool_down_grows_with_the_outage_up_to_its_most() {
        let cfg = cfg(); // 30 s, at most 5 min
        let min = 60_000;
        // (failing since, opened at, cool-down, why)
        let cases: &[(Option<i64>, Option<i64>, i64, &str)] = &[
            (None, None, 30_000, "closed"),
            (Some(0), Some(0), 30_000, "just opened"),
            (
                Some(0),
                Some(2 * min),
                30_000,
                "two minutes: still the first",
            ),
            (Some(0), Some(4 * min), 60_000, "four minutes: a quarter"),
            (Some(0), Some(20 * min), 300_000, "twenty minutes: the most"),
            (Some(0), Some(24 * 60 * min), 300_000, "a day: the most"),
            (Some(5 * min), Some(0), 30_000, "a clock behind: the first"),
        ];
        for (since, opened, cool, why) in cases {
            let c = Circuit {
                failures: 9,
                failing_since: *since,
                opened_at: *opened,
                probe_until: None,
            };
            assert_eq!(cooldown_of(&cfg, &c), *cool, "{why}");
        }
        let c = Circuit {
            failures: 9,
            failing_since: Some(0),
            opened_at: Some(40 * min),
            probe_until: None,
        };
        let lease = Duration::from_secs(10);
        assert_eq!(
            admit(&cfg, &c, 44 * min, lease),
            Admit::Hold { until: 45 * min }
        );
        assert_eq!(c.state(&cfg, 45 * min - 1), CircuitState::Open);
        assert!(matches!(
            admit(&cfg, &c, 45 * min, lease),
            Admit::Probe { .. }
        ));
        let tight = BreakerConfig {
            max_cooldown: Duration::from_secs(1),
            ..cfg
        };
        assert_eq!(cooldown_of(&tight, &c), 30_000, "never below the first");
    }

    /// Applies a change the way the store does.
    fn apply(c: &mut Circuit, change: Change, now: i64) {
        match change {
            Change::None => {}
            Change::Reset => *c = Circuit::default(),
            Change::Fail { open, .. } => {
                c.failures += 1;
                c.failing_since.get_or_insert(now);
                if open {
                    c.opened_at = Some(now);
                    c.probe_until = None;
                }
            }
        }
    }

    #[test]
    fn closed_sends_and_a_success_costs_no_write() {
        let c = Circuit::default();
        assert_eq!(admit(&cfg(), &c, 0, Duration::from_secs(10)), Admit::Send);
        assert_eq!(after(&cfg(), &c, Verdict::Up, 0), Change::None);
        assert_eq!(after(&cfg(), &c, Verdict::Neutral, 0), Change::None);
        assert_eq!(c.state(&cfg(), 0), CircuitState::Closed);
    }

    #[test]
    fn opens_after_n_failures_holds_probes_once_and_closes_on_success() {
        let cfg = cfg();
        let lease = Duration::from_secs(10);
        let mut c = Circuit::default();
        for (i, now) in [1_000, 2_000].into_iter().enumerate() {
            let change = after(&cfg, &c, Verdict::Down, now);
            assert_eq!(
                change,
                Change::Fail {
                    open: false,
                    disable: false
                },
                "failure {}",
                i + 1
            );
            apply(&mut c, change, now);
        }
        let change = after(&cfg, &c, Verdict::Down, 3_000);
        assert_eq!(
            change,
            Change::Fail {
                open: true,
                disable: false
            }
        );
        apply(&mut c, change, 3_000);
        assert_eq!(
            (c.failures, c.failing_since, c.opened_at),
            (3, Some(1_000), Some(3_000))
        );
        assert_eq!(c.state(&cfg, 3_000), CircuitState::Open);
        assert_eq!(admit(&cfg, &c, 4_000, lease), Admit::Hold { until: 33_000 });
        assert_eq!(
            admit(&cfg, &c, 32_999, lease),
            Admit::Hold { until: 33_000 }
        );
        assert_eq!(c.state(&cfg, 33_000), CircuitState::HalfOpen);
        assert_eq!(
            admit(&cfg, &c, 33_000, lease),
            Admit::Probe {
                opened_at: 3_000,
                until: 43_000
            }
        );
        // Another worker meanwhile sees the probe's lease.
        c.probe_until = Some(43_000);
        assert_eq!(
            admit(&cfg, &c, 35_000, lease),
            Admit::Hold { until: 43_000 }
        );
        // A late result from before the circuit opened does not re-open it while cooling down.
        c.probe_until = None;
        let mut cooling = c;
        cooling.opened_at = Some(34_000);
        assert_eq!(
            after(&cfg, &cooling, Verdict::Down, 35_000),
            Change::Fail {
                open: false,
                disable: false
            }
        );
        // The probe succeeds: closed, failures forgotten.
        assert_eq!(after(&cfg, &c, Verdict::Up, 36_000), Change::Reset);
        apply(&mut c, Change::Reset, 36_000);
        assert_eq!(c, Circuit::default());
    }

    #[test]
    fn a_failed_probe_reopens_and_long_failure_disables() {
        let cfg = cfg();
        let mut c = Circuit {
            failures: 3,
            failing_since: Some(0),
            opened_at: Some(0),
            probe_until: Some(40_000),
        };
        let change = after(&cfg, &c, Verdict::Down, 40_000);
        assert_eq!(
            change,
            Change::Fail {
                open: true,
                disable: false
            }
        );
        apply(&mut c, change, 40_000);
        assert_eq!((c.opened_at, c.probe_until), (Some(40_000), None));
        assert_eq!(
            admit(&cfg, &c, 41_000, Duration::from_secs(1)),
            Admit::Hold { until: 70_000 }
        );
        // An hour after the first failure, still failing: disable.
        assert_eq!(
            after(&cfg, &c, Verdict::Down, 3_600_000),
            Change::Fail {
                open: true,
                disable: true
            }
        );
        // Failing for long but the circuit never opened (sparse failures below the threshold):
        // not disabled.
        let sparse = Circuit {
            failures: 1,
            failing_since: Some(0),
            opened_at: None,
            probe_until: None,
        };
        assert_eq!(
            after(&cfg, &sparse, Verdict::Down, 7_200_000),
            Change::Fail {
                open: false,
                disable: false
            }
        );
        // 429s and SSRF refusals change nothing.
        assert_eq!(after(&cfg, &c, Verdict::Neutral, 3_600_000), Change::None);
        assert_eq!(CircuitState::HalfOpen.as_str(), "half-open");
    }

    const COUNT: Change = Change::Fail {
        open: false,
        disable: false,
    };
    const OPEN: Change = Change::Fail {
        open: true,
        disable: false,
    };

    fn counted(failures: u32, opened_at: Option<i64>) -> Circuit {
        Circuit {
            failures,
            failing_since: Some(1_000),
            opened_at,
            probe_until: None,
        }
    }

    #[test]
    fn the_worker_whose_count_reaches_the_threshold_opens() {
        let cfg = cfg();
        let cases: &[(Change, Option<Circuit>, bool, &str)] = &[
            (COUNT, Some(counted(2, None)), false, "below the threshold"),
            (COUNT, Some(counted(3, None)), true, "reached it"),
            (
                COUNT,
                Some(counted(4, None)),
                true,
                "another worker's count came first, still closed",
            ),
            (
                COUNT,
                Some(counted(4, Some(2_000))),
                false,
                "already opened by another worker",
            ),
            (
                OPEN,
                Some(counted(3, Some(3_000))),
                false,
                "the change itself opened it",
            ),
            (Change::Reset, Some(counted(0, None)), false, "a success"),
            (Change::None, None, false, "nothing written"),
            (COUNT, None, false, "no answer"),
        ];
        for (change, c, opens, why) in cases {
            assert_eq!(opens_on_count(&cfg, *change, c.as_ref()), *opens, "{why}");
        }
        let never = BreakerConfig { failures: 0, ..cfg };
        assert!(
            opens_on_count(&never, COUNT, Some(&counted(1, None))),
            "a threshold of 0 counts as 1"
        );
    }

    #[test]
    fn failing_too_long_disables() {
        let cfg = cfg(); // disable_after: 1 h
        let hour = 3_600_000;
        let read = Circuit {
            failing_since: Some(500),
            ..Circuit::default()
        };
        let asked = Change::Fail {
            open: true,
            disable: true,
        };
        /// The change, the circuit as counted, now, since when it disables, why.
        type Case = (Change, Option<Circuit>, i64, Option<i64>, &'static str);
        let cases: &[Case] = &[
            (
                asked,
                Some(counted(9, Some(1))),
                2_000,
                Some(1_000),
                "asked by after()",
            ),
            (
                asked,
                None,
                2_000,
                Some(500),
                "asked, no answer: since as read",
            ),
            (
                COUNT,
                Some(counted(9, Some(1))),
                1_000 + hour,
                Some(1_000),
                "open and an hour old",
            ),
            (
                COUNT,
                Some(counted(9, Some(1))),
                999 + hour,
                None,
                "open, not yet an hour",
            ),
            (
                COUNT,
                Some(counted(9, None)),
                1_000 + 2 * hour,
                None,
                "closed: never disabled",
            ),
            (
                Change::Reset,
                Some(counted(0, Some(1))),
                1_000 + hour,
                None,
                "a success",
            ),
            (Change::None, None, 1_000 + hour, None, "neutral"),
        ];
        for (change, c, now, since, why) in cases {
            assert_eq!(
                disable_since(&cfg, &read, *change, c.as_ref(), *now),
                *since,
                "{why}"
            );
        }
    }
}
