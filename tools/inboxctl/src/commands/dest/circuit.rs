//! The circuit line of `dest show`: its state, its recent failure rate (the breaker's window,
//! [`inbox_core::outbox::breaker::window`]) and the destination's backlog.

use crate::when;
use inbox_core::outbox::breaker::{BreakerConfig, Circuit, CircuitState, Recent};
use inbox_core::outbox::parking::Backlog;
use serde_json::{json, Value};

/// What `dest show` says of a circuit at `now`, with the breaker settings it assumes.
pub(super) struct CircuitView {
    pub state: CircuitState,
    pub recent: Recent,
    pub window_s: u64,
    pub failures: u32,
    pub failing_since: Option<i64>,
}

impl CircuitView {
    pub fn of(c: &Circuit, cfg: &BreakerConfig, now: i64) -> Self {
        Self {
            state: c.state(cfg, now),
            recent: c.recent(cfg, now),
            window_s: cfg.window.as_secs(),
            failures: c.failures,
            failing_since: c.failing_since,
        }
    }

    /// `open; 9/10 requests failed in the last 60 s (90 %), 12 failures since the last success;
    /// backlog 3, the oldest …`.
    pub fn text(&self, backlog: &Backlog) -> String {
        let rate = match self.recent.percent() {
            None => format!("no requests in the last {} s", self.window_s),
            Some(p) => format!(
                "{}/{} requests failed in the last {} s ({p} %)",
                self.recent.failures, self.recent.requests, self.window_s
            ),
        };
        let oldest = backlog.oldest.map_or_else(String::new, |t| {
            format!(", the oldest {}", when::rfc3339(t))
        });
        format!(
            "{}; {rate}, {} failures since the last success; backlog {backlog}{oldest}",
            self.state.as_str(),
            self.failures
        )
    }

    /// The same for `--json`.
    pub fn json(&self) -> Value {
        json!({
            "state": self.state,
            "window_s": self.window_s,
            "requests": self.recent.requests,
            "failures": self.recent.failures,
            "failure_rate_percent": self.recent.percent(),
            "failures_since_success": self.failures,
            "failing_since": self.failing_since.map(when::rfc3339),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::outbox::breaker::window::bucket_of;

    #[test]
    fn the_circuit_line_says_its_recent_failure_rate() {
        let cfg = BreakerConfig::default(); // 120 s
        let now = 1_700_000_000_000;
        let mut c = Circuit {
            failures: 2,
            ..Circuit::default()
        };
        for failed in [true, false, false, true] {
            c.window.count(bucket_of(cfg.window, now), failed);
        }
        let v = CircuitView::of(&c, &cfg, now);
        let backlog = Backlog::default();
        assert_eq!(
            v.text(&backlog),
            format!(
                "closed; 2/4 requests failed in the last 120 s (50 %), 2 failures since the last \
                 success; backlog {backlog}"
            )
        );
        let j = v.json();
        assert_eq!(
            (
                &j["state"],
                &j["requests"],
                &j["failures"],
                &j["failure_rate_percent"]
            ),
            (&json!("closed"), &json!(4), &json!(2), &json!(50))
        );
        let idle = CircuitView::of(&Circuit::default(), &cfg, now);
        assert!(idle
            .text(&backlog)
            .contains("no requests in the last 120 s"));
        assert_eq!(idle.json()["failure_rate_percent"], Value::Null);
    }
}
