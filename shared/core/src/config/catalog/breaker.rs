//! The deliver function's circuit breaker settings ([`crate::outbox::breaker`]), part of the
//! [catalog](super).

use crate::config::doc::readers::DELIVER;
use crate::config::doc::{ReadBy, Unset, Var};

pub const BREAKER_WINDOW_MS: Var = Var {
    name: "BREAKER_WINDOW_MS",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("120000"),
    meaning: "the sliding window a destination's failure rate is measured over, ms (two buckets \
              of half of it: the last half window to the last window of attempts)",
};

pub const BREAKER_MIN_REQUESTS: Var = Var {
    name: "BREAKER_MIN_REQUESTS",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("20"),
    meaning: "the fewest attempts in the window that may open a destination's circuit",
};

pub const BREAKER_FAILURE_RATE: Var = Var {
    name: "BREAKER_FAILURE_RATE",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("50"),
    meaning: "the failure rate, percent (1-100), of the window's attempts (failures: 5xx, 408, \
              timeouts, connection errors) that opens a destination's circuit; the same rate of \
              a half-open circuit's probes re-opens it",
};

pub const BREAKER_HALF_OPEN_PROBES: Var = Var {
    name: "BREAKER_HALF_OPEN_PROBES",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("3"),
    meaning: "deliveries a half-open circuit lets through after its cool-down, one at a time; it \
              re-opens as soon as the failure rate of those answered reaches \
              `BREAKER_FAILURE_RATE` and closes when all answered under it",
};

pub const BREAKER_COOLDOWN_MS: Var = Var {
    name: "BREAKER_COOLDOWN_MS",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("30000"),
    meaning: "how long an open circuit sends nothing before its probes, ms (the first cool-down: \
              it grows with the outage up to `BREAKER_MAX_COOLDOWN_MS`)",
};

pub const BREAKER_MAX_COOLDOWN_MS: Var = Var {
    name: "BREAKER_MAX_COOLDOWN_MS",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("300000"),
    meaning: "the longest cool-down of a long outage, ms: an open circuit cools down for a \
              quarter of how long its destination has been failing, at least \
              `BREAKER_COOLDOWN_MS` and at most this",
};

pub const BREAKER_DISABLE_AFTER_MS: Var = Var {
    name: "BREAKER_DISABLE_AFTER_MS",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("86400000"),
    meaning: "a destination failing this long without a success (its circuit open) is disabled, \
              ms (24 h by default); the metric `DestinationDisabled` and an error log line say so",
};
