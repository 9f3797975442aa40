//! The per-destination circuit breaker, pure: the shared state ([`Circuit`], kept on the
//! destination's state item), whether to send now ([`admit`]), what an attempt's result writes
//! ([`after`]), and what the worker does once the store has counted it ([`next`]: open, re-open
//! or close the circuit; [`disable_since`]: disable the destination).
//!
//! Closed: every delivery is sent, and every attempt is counted in a sliding window
//! ([`window`]: requests and failures over the last `window`). Failures are 5xx, 408, timeouts
//! and connection errors; 429 and refusals by the SSRF guard count for nothing; other answers
//! (2xx, other 4xx) are successes: the destination is up. When the window holds at least
//! `min_requests` attempts and at least `failure_rate` percent of them failed, the circuit opens
//! (the rule of resilience4j's `failureRateThreshold` / `minimumNumberOfCalls` and Polly's
//! `FailureRatio` / `MinimumThroughput`): nothing is sent for a cool-down, then it is half-open:
//! `half_open_probes` deliveries are let through, one at a time (a lease on the state item; the
//! worker whose probe succeeded sends the next at once). As soon as the failure rate of the
//! probes answered reaches `failure_rate` it re-opens for another cool-down (so a destination
//! still down costs one probe per cool-down); when all have answered below it, it closes and the
//! window starts afresh (resilience4j's `permittedNumberOfCallsInHalfOpenState`, whose probes go
//! at once and are judged together).
//!
//! The cool-down is `cooldown` at first and grows with the outage ([`cooldown_of`]: a quarter of
//! how long the destination had been failing without a success when the circuit last opened, at
//! most `max_cooldown`), so a destination down for a day is probed every few minutes, not twice a
//! minute. A destination failing without a single success for `disable_after`, its circuit open,
//! is disabled (an operator resumes it).

pub mod window;

use std::time::Duration;
pub use window::{Recent, Window};

/// Breaker settings (the same for every destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// The sliding window the failure rate is measured over.
    pub window: Duration,
    /// The fewest attempts in the window that may open the circuit.
    pub min_requests: u32,
    /// The failure rate, in percent, that opens the circuit (and re-opens a half-open one).
    pub failure_rate: u32,
    /// Probes a half-open circuit lets through.
    pub half_open_probes: u32,
    /// How long an open circuit sends nothing before its probes (the first cool-down).
    pub cooldown: Duration,
    /// The longest cool-down of a long outage ([`cooldown_of`]; never below `cooldown`).
    pub max_cooldown: Duration,
    /// How long a destination may fail without a success before it is disabled.
    pub disable_after: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(120),
            min_requests: 20,
            failure_rate: 50,
            half_open_probes: 3,
            cooldown: Duration::from_secs(30),
            max_cooldown: Duration::from_secs(300),
            disable_after: Duration::from_secs(24 * 3600),
        }
    }
}

/// How long the circuit `c`, open, cools down before its probes: `cooldown` at first, then a
/// quarter of how long the destination had been failing when it (re-)opened, at most
/// `max_cooldown` (never below `cooldown`). With the defaults (30 s, 5 min): 30 s for the first
/// two minutes of an outage, a minute after four, five minutes after twenty. A probe is a real
/// delivery (a POST, an attempt and a few writes): a day's outage probed every 30 s would cost
/// 2,880 rounds of them, every 5 min 288.
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
    /// Failures since the last success.
    pub failures: u32,
    /// When the current run of failures (without a success) began.
    pub failing_since: Option<i64>,
    /// When the circuit opened; `None`: closed.
    pub opened_at: Option<i64>,
    /// The probe's lease: a probe out holds the half-open circuit until then (one that never
    /// answers, until it lapses); removed when it answered up.
    pub probe_until: Option<i64>,
    /// Probes let through since the circuit (re-)opened (for operators).
    pub probes: u32,
    /// The probes' results so far.
    pub probes_up: u32,
    pub probes_down: u32,
    /// Attempts counted, for the failure rate.
    pub window: Window,
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
    /// Closed, open (cooling down) or half-open (cooled down: probes are let through).
    pub fn state(&self, cfg: &BreakerConfig, now: i64) -> CircuitState {
        match self.opened_at {
            None => CircuitState::Closed,
            Some(at) if now < at.saturating_add(cooldown_of(cfg, self)) => CircuitState::Open,
            Some(_) => CircuitState::HalfOpen,
        }
    }

    /// The attempts counted in the window at `now`.
    pub fn recent(&self, cfg: &BreakerConfig, now: i64) -> Recent {
        self.window.recent(cfg.window, now)
    }
}

/// Whether a delivery may be sent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Closed: send.
    Send,
    /// Half-open and no probe out: take the probe's lease until `until` (conditional on
    /// `opened_at` and no other lease), then send.
    Probe { opened_at: i64, until: i64 },
    /// Open (or a probe is out): try again at this time, without counting an attempt.
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
    /// Nothing to write (a 429 or a refusal).
    None,
    /// Count the attempt in the window's bucket `bucket` ([`window::bucket_of`]); `up`: a
    /// success (it ends the run of failures), else a failure (it starts one if none);
    /// `probe`: also among the half-open circuit's probe results; `roll`: the slot held an older
    /// bucket when read (the store tries rolling it over first: one request, not two);
    /// `reopen`: a failed probe that re-opens the circuit opened at this time whatever else
    /// happens (the store re-opens it in the same write if it is still that opening, the probes
    /// forgotten; else it counts only).
    Count {
        up: bool,
        probe: bool,
        bucket: i64,
        roll: bool,
        reopen: Option<i64>,
    },
}

/// What the worker does to the circuit once its attempt is counted; each is conditional, so
/// that of workers deciding at once one acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Stay,
    /// Open the closed circuit (the window's failure rate reached the threshold).
    Open,
    /// Re-open the circuit opened at `from` (its probes failed).
    Reopen {
        from: i64,
    },
    /// Close the circuit opened at `from` (its probes answered).
    Close {
        from: i64,
    },
}

/// Whether to send now; `probe_lease` is how long a probe holds its place (the request's
/// timeout plus a margin).
pub fn admit(cfg: &BreakerConfig, c: &Circuit, now: i64, probe_lease: Duration) -> Admit {
    let Some(opened_at) = c.opened_at else {
        return Admit::Send;
    };
    let cooled = opened_at.saturating_add(cooldown_of(cfg, c));
    if now < cooled {
        return Admit::Hold { until: cooled };
    }
    match c.probe_until {
        // One probe at a time: the next when this one answered (or its lease lapsed).
        Some(until) if until > now => Admit::Hold { until },
        _ => Admit::Probe {
            opened_at,
            until: now.saturating_add(millis(probe_lease)),
        },
    }
}

/// What an attempt's result at `now` writes, given the circuit as read before the attempt: a
/// result that comes back to a cooled-down open circuit is a probe's.
pub fn after(cfg: &BreakerConfig, c: &Circuit, verdict: Verdict, now: i64) -> Change {
    let up = match verdict {
        Verdict::Neutral => return Change::None,
        Verdict::Up => true,
        Verdict::Down => false,
    };
    let bucket = window::bucket_of(cfg.window, now);
    let probe = c.state(cfg, now) == CircuitState::HalfOpen;
    // The common case costs no write: a success on a closed circuit whose window holds no
    // failure (successes count from a window's first failure on; the rate is then, if anything,
    // overestimated by the successes before it).
    let healthy =
        c.opened_at.is_none() && c.failing_since.is_none() && c.recent(cfg, now).failures == 0;
    if up && healthy {
        return Change::None;
    }
    // Probes go one at a time: the failures read are all there are but this one.
    let answered = Recent {
        requests: c.probes_up.saturating_add(c.probes_down).saturating_add(1),
        failures: c.probes_down.saturating_add(1),
    };
    let reopen = (probe && !up && answered.trips(1, cfg.failure_rate))
        .then_some(c.opened_at)
        .flatten();
    Change::Count {
        up,
        probe,
        bucket,
        roll: c.window.slots[window::slot_of(bucket)].is_none_or(|b| b.at < bucket),
        reopen,
    }
}

/// What the worker whose attempt the store counted (`change`, the circuit `read` before it and
/// `counted` after it) does to the circuit.
pub fn next(
    cfg: &BreakerConfig,
    change: Change,
    read: &Circuit,
    counted: Option<&Circuit>,
    now: i64,
) -> Move {
    let (Change::Count { probe, .. }, Some(c)) = (change, counted) else {
        return Move::Stay;
    };
    match c.opened_at {
        None if c.recent(cfg, now).trips(cfg.min_requests, cfg.failure_rate) => Move::Open,
        None => Move::Stay,
        // A probe's result on the opening it probed (not one since re-opened or closed).
        Some(from) if probe && read.opened_at == Some(from) => {
            let answered = Recent {
                requests: c.probes_up.saturating_add(c.probes_down),
                failures: c.probes_down,
            };
            if answered.trips(1, cfg.failure_rate) {
                Move::Reopen { from }
            } else if answered.requests >= cfg.half_open_probes.max(1) {
                Move::Close { from }
            } else {
                Move::Stay
            }
        }
        Some(_) => Move::Stay,
    }
}

/// Whether the destination is disabled after its attempt at `now`, and since when it has been
/// failing: a failure after `disable_after` of failing without a success, whether its circuit is
/// open or not (a quiet destination, under `min_requests` in a window, never opens it, and a day
/// without one success is as dead as an open circuit's). `read` is the circuit the worker read
/// before, for when the answer did not carry `failing_since`.
pub fn disable_since(
    cfg: &BreakerConfig,
    read: &Circuit,
    change: Change,
    counted: Option<&Circuit>,
    now: i64,
) -> Option<i64> {
    let Change::Count { up: false, .. } = change else {
        return None;
    };
    let since = counted
        .and_then(|c| c.failing_since)
        .or(read.failing_since)
        .unwrap_or(now);
    (now.saturating_sub(since) >= millis(cfg.disable_after)).then_some(since)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg() -> BreakerConfig {
        BreakerConfig {
            window: Duration::from_secs(60),
            min_requests: 4,
            failure_rate: 50,
            half_open_probes: 2,
            cooldown: Duration::from_secs(30),
            max_cooldown: Duration::from_secs(300),
            disable_after: Duration::from_secs(3600),
        }
    }

    const LEASE: Duration = Duration::from_secs(10);

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
                failing_since: *since,
                opened_at: *opened,
                ..Circuit::default()
            };
            assert_eq!(cooldown_of(&cfg, &c), *cool, "{why}");
        }
        let tight = BreakerConfig {
            max_cooldown: Duration::from_secs(1),
            ..cfg
        };
        let c = Circuit {
            failing_since: Some(0),
            opened_at: Some(40 * min),
            ..Circuit::default()
        };
        assert_eq!(cooldown_of(&tight, &c), 30_000, "never below the first");
    }

    fn open_at(opened: i64, probes: u32, probe_until: Option<i64>) -> Circuit {
        Circuit {
            failing_since: Some(opened),
            opened_at: Some(opened),
            probes,
            probe_until,
            ..Circuit::default()
        }
    }

    #[test]
    fn admit_sends_closed_holds_open_and_lets_the_probes_through() {
        let cfg = cfg(); // 2 probes, 30 s
                         // (circuit, now, admit, why)
        let cases: &[(Circuit, i64, Admit, &str)] = &[
            (Circuit::default(), 0, Admit::Send, "closed"),
            (
                open_at(0, 0, None),
                29_999,
                Admit::Hold { until: 30_000 },
                "cooling down",
            ),
            (
                open_at(0, 0, None),
                30_000,
                Admit::Probe {
                    opened_at: 0,
                    until: 40_000,
                },
                "cooled down: the first probe",
            ),
            (
                open_at(0, 1, Some(40_000)),
                31_000,
                Admit::Hold { until: 40_000 },
                "one out: one at a time",
            ),
            (
                open_at(0, 1, None),
                32_000,
                Admit::Probe {
                    opened_at: 0,
                    until: 42_000,
                },
                "the first answered up: the next",
            ),
            (
                open_at(0, 2, Some(41_000)),
                41_000,
                Admit::Probe {
                    opened_at: 0,
                    until: 51_000,
                },
                "a probe's lease lapsed: another",
            ),
        ];
        for (c, now, admit_, why) in cases {
            assert_eq!(admit(&cfg, c, *now, LEASE), *admit_, "{why}");
        }
        assert_eq!(open_at(0, 0, None).state(&cfg, 29_999), CircuitState::Open);
        assert_eq!(
            open_at(0, 0, None).state(&cfg, 30_000),
            CircuitState::HalfOpen
        );
        assert_eq!(CircuitState::HalfOpen.as_str(), "half-open");
    }

    #[test]
    fn after_counts_up_and_down_and_probes_and_nothing_else() {
        let cfg = cfg(); // buckets of 30 s
                         // (circuit read, verdict, now, change, why)
        let cases: &[(Circuit, Verdict, i64, Change, &str)] = &[
            (
                Circuit::default(),
                Verdict::Neutral,
                0,
                Change::None,
                "429: nothing",
            ),
            (
                Circuit::default(),
                Verdict::Up,
                45_000,
                Change::None,
                "closed, healthy, a success: no write",
            ),
            (
                counted(1, 1, 45_000),
                Verdict::Up,
                45_000,
                Change::Count {
                    up: true,
                    probe: false,
                    bucket: 1,
                    roll: false,
                    reopen: None,
                },
                "closed, a failure in the window: counted",
            ),
            (
                Circuit {
                    failing_since: Some(1),
                    ..Circuit::default()
                },
                Verdict::Up,
                45_000,
                Change::Count {
                    up: true,
                    probe: false,
                    bucket: 1,
                    roll: true,
                    reopen: None,
                },
                "a success ends a run of failures",
            ),
            (
                Circuit::default(),
                Verdict::Down,
                61_000,
                Change::Count {
                    up: false,
                    probe: false,
                    bucket: 2,
                    roll: true,
                    reopen: None,
                },
                "closed, a failure",
            ),
            (
                open_at(0, 0, None),
                Verdict::Down,
                10_000,
                Change::Count {
                    up: false,
                    probe: false,
                    bucket: 0,
                    roll: true,
                    reopen: None,
                },
                "a late result while cooling down: no probe",
            ),
            (
                open_at(0, 1, Some(40_000)),
                Verdict::Up,
                35_000,
                Change::Count {
                    up: true,
                    probe: true,
                    bucket: 1,
                    roll: true,
                    reopen: None,
                },
                "half-open: a probe's",
            ),
            (
                open_at(0, 1, Some(40_000)),
                Verdict::Down,
                35_000,
                Change::Count {
                    up: false,
                    probe: true,
                    bucket: 1,
                    roll: true,
                    reopen: Some(0),
                },
                "a failed probe: re-opens whatever the others say",
            ),
            (
                Circuit {
                    probes_up: 2,
                    ..open_at(0, 3, Some(40_000))
                },
                Verdict::Down,
                35_000,
                Change::Count {
                    up: false,
                    probe: true,
                    bucket: 1,
                    roll: true,
                    reopen: None,
                },
                "a failure after two up: 33 %, the rate decides after the count",
            ),
        ];
        for (c, verdict, now, change, why) in cases {
            assert_eq!(after(&cfg, c, *verdict, *now), *change, "{why}");
        }
    }

    fn counted(requests: u32, failures: u32, now: i64) -> Circuit {
        let mut c = Circuit::default();
        for i in 0..requests {
            c.window
                .count(window::bucket_of(cfg().window, now), i < failures);
        }
        c
    }

    fn probed(opened: i64, up: u32, down: u32) -> Circuit {
        Circuit {
            probes_up: up,
            probes_down: down,
            probes: up + down,
            ..open_at(opened, 0, None)
        }
    }

    #[test]
    fn next_opens_on_the_rate_and_decides_on_the_probes() {
        let cfg = cfg(); // at least 4, 50 %, 2 probes
        let count = Change::Count {
            up: false,
            probe: false,
            bucket: 0,
            roll: true,
            reopen: None,
        };
        let probe = Change::Count {
            up: true,
            probe: true,
            bucket: 0,
            roll: true,
            reopen: None,
        };
        let closed = Circuit::default();
        let open = open_at(7, 0, None);
        // (change, read, counted, move, why)
        let cases: &[(Change, Circuit, Option<Circuit>, Move, &str)] = &[
            (
                count,
                closed,
                Some(counted(3, 3, 0)),
                Move::Stay,
                "too few requests",
            ),
            (
                count,
                closed,
                Some(counted(4, 1, 0)),
                Move::Stay,
                "a quarter failed",
            ),
            (
                count,
                closed,
                Some(counted(4, 2, 0)),
                Move::Open,
                "half failed",
            ),
            (
                count,
                closed,
                Some(counted(10, 10, 0)),
                Move::Open,
                "all failed",
            ),
            (count, closed, None, Move::Stay, "no answer"),
            (Change::None, closed, None, Move::Stay, "nothing counted"),
            (
                count,
                open,
                Some(probed(7, 0, 0)),
                Move::Stay,
                "open: counted only",
            ),
            (
                probe,
                open,
                Some(probed(7, 1, 0)),
                Move::Stay,
                "one probe answered up of two",
            ),
            (
                probe,
                open,
                Some(probed(7, 2, 0)),
                Move::Close { from: 7 },
                "both answered up",
            ),
            (
                probe,
                open,
                Some(probed(7, 0, 1)),
                Move::Reopen { from: 7 },
                "the first failed",
            ),
            (
                probe,
                open,
                Some(probed(7, 1, 1)),
                Move::Reopen { from: 7 },
                "half failed",
            ),
            (
                probe,
                open,
                Some(probed(9, 0, 1)),
                Move::Stay,
                "re-opened meanwhile",
            ),
            (
                probe,
                open,
                Some(closed),
                Move::Stay,
                "closed meanwhile (stays closed)",
            ),
        ];
        for (change, read, c, mv, why) in cases {
            assert_eq!(next(&cfg, *change, read, c.as_ref(), 0), *mv, "{why}");
        }
        // Three probes at 80 %: a failure after two successes (33 %) still closes; a first
        // failure (100 %) re-opens.
        let lenient = BreakerConfig {
            half_open_probes: 3,
            failure_rate: 80,
            ..cfg
        };
        assert_eq!(
            next(&lenient, probe, &open, Some(&probed(7, 2, 1)), 0),
            Move::Close { from: 7 }
        );
        assert_eq!(
            next(&lenient, probe, &open, Some(&probed(7, 0, 1)), 0),
            Move::Reopen { from: 7 }
        );
        assert_eq!(
            next(&lenient, probe, &open, Some(&probed(7, 1, 0)), 0),
            Move::Stay
        );
    }

    #[test]
    fn failing_too_long_without_a_success_disables_open_or_closed() {
        let cfg = cfg(); // disable_after: 1 h
        let hour = 3_600_000;
        let read = Circuit {
            failing_since: Some(500),
            ..Circuit::default()
        };
        let down = Change::Count {
            up: false,
            probe: true,
            bucket: 0,
            roll: true,
            reopen: None,
        };
        let up = Change::Count {
            up: true,
            probe: true,
            bucket: 0,
            roll: true,
            reopen: None,
        };
        let open = |since| Circuit {
            failing_since: Some(since),
            opened_at: Some(1),
            ..Circuit::default()
        };
        let closed = Circuit {
            failing_since: Some(1_000),
            ..Circuit::default()
        };
        /// The change, the circuit as counted, opens, now, since when it disables, why.
        type Case = (
            Change,
            Option<Circuit>,
            bool,
            i64,
            Option<i64>,
            &'static str,
        );
        let cases: &[Case] = &[
            (
                down,
                Some(open(1_000)),
                false,
                1_000 + hour,
                Some(1_000),
                "open and an hour old",
            ),
            (
                down,
                Some(open(1_000)),
                false,
                999 + hour,
                None,
                "open, not yet an hour",
            ),
            (
                down,
                Some(closed),
                false,
                1_000 + hour,
                Some(1_000),
                "closed (too quiet to open): an hour without a success disables it too",
            ),
            (
                down,
                Some(closed),
                false,
                999 + hour,
                None,
                "closed, not yet an hour",
            ),
            (
                down,
                Some(closed),
                true,
                1_000 + hour,
                Some(1_000),
                "this failure opens it",
            ),
            (
                down,
                None,
                true,
                500 + hour,
                Some(500),
                "no answer: since as read",
            ),
            (
                up,
                Some(open(1_000)),
                false,
                1_000 + hour,
                None,
                "a success",
            ),
            (Change::None, None, false, 1_000 + hour, None, "neutral"),
        ];
        for (change, c, _opens, now, since, why) in cases {
            assert_eq!(
                disable_since(&cfg, &read, *change, c.as_ref(), *now),
                *since,
                "{why}"
            );
        }
    }

    /// Applies a count the way the store does.
    fn apply(c: &mut Circuit, change: Change, now: i64) {
        let Change::Count {
            up,
            probe,
            bucket,
            reopen,
            ..
        } = change
        else {
            return;
        };
        if reopen.is_some() && reopen == c.opened_at {
            c.window.count(bucket, !up);
            c.failures += 1;
            apply_move(c, Move::Reopen { from: 0 }, now);
            return;
        }
        c.window.count(bucket, !up);
        if up {
            c.failures = 0;
            c.failing_since = None;
        } else {
            c.failures += 1;
            c.failing_since.get_or_insert(now);
        }
        if probe {
            if up {
                c.probes_up += 1;
                c.probe_until = None;
            } else {
                c.probes_down += 1;
            }
        }
    }

    /// Applies a move the way the store does (its condition held).
    fn apply_move(c: &mut Circuit, mv: Move, now: i64) {
        match mv {
            Move::Stay => {}
            Move::Open | Move::Reopen { .. } => {
                *c = Circuit {
                    opened_at: Some(now),
                    probes: 0,
                    probes_up: 0,
                    probes_down: 0,
                    probe_until: None,
                    ..*c
                }
            }
            Move::Close { .. } => {
                *c = Circuit {
                    failures: c.failures,
                    failing_since: c.failing_since,
                    ..Circuit::default()
                }
            }
        }
    }

    /// Runs one destination through `answers` (one attempt a second, `true`: up), as one worker.
    fn run(cfg: &BreakerConfig, answers: &[bool]) -> (Circuit, usize) {
        let mut c = Circuit::default();
        let mut sent = 0;
        for (i, up) in answers.iter().enumerate() {
            let now = (i as i64) * 1_000;
            match admit(cfg, &c, now, LEASE) {
                Admit::Hold { .. } => continue,
                Admit::Probe { until, .. } => {
                    c.probes += 1;
                    c.probe_until = Some(until);
                }
                Admit::Send => {}
            }
            sent += 1;
            let read = c;
            let verdict = if *up { Verdict::Up } else { Verdict::Down };
            let change = after(cfg, &read, verdict, now);
            apply(&mut c, change, now);
            let mv = next(cfg, change, &read, Some(&c), now);
            apply_move(&mut c, mv, now);
        }
        (c, sent)
    }

    proptest! {
        /// A destination failing below the rate keeps all its traffic: the circuit never opens.
        #[test]
        fn failing_below_the_rate_never_opens(seed in any::<u64>(), n in 1usize..400) {
            let cfg = cfg(); // 50 %
            // One failure in four, spread: at most 40 % of any run of at least 4 requests.
            let answers: Vec<bool> = (0..n)
                .map(|i| !(i as u64).wrapping_add(seed).is_multiple_of(4))
                .collect();
            let (c, sent) = run(&cfg, &answers);
            prop_assert_eq!(c.opened_at, None);
            prop_assert_eq!(sent, n);
        }

        /// Down throughout: the circuit opens once enough requests failed, and from then on only
        /// probes are sent: one per cool-down.
        #[test]
        fn a_destination_down_is_sent_probes_only(n in 10usize..600) {
            let cfg = cfg();
            let (c, sent) = run(&cfg, &vec![false; n]);
            prop_assert!(c.opened_at.is_some());
            let probes_most = n as u64 / 30 + 1;
            prop_assert!(sent as u64 <= u64::from(cfg.min_requests) + probes_most, "{}", sent);
        }

        /// Down, then back up: recognised at the first half-open round after it is back (within
        /// a cool-down plus the probes).
        #[test]
        fn a_recovered_destination_is_recognised_within_a_cool_down(down in 4usize..100) {
            let cfg = cfg();
            let mut answers = vec![false; down];
            answers.extend(vec![true; 80]);
            let (c, _) = run(&cfg, &answers);
            prop_assert_eq!(c.opened_at, None);
            prop_assert_eq!(c.failing_since, None);
        }
    }
}
