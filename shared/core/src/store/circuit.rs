//! The circuit breaker's state as both stores read it from a destination's state item.

use crate::outbox::breaker::window::{Bucket, Window};
use crate::outbox::breaker::Circuit;
use crate::outbox::schema::*;
use crate::outbox::store::WorkerState;
use crate::store::attr::get_n;
use crate::store::Item;

fn u32_of(item: &Item, k: &str) -> u32 {
    get_n(item, k)
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or(0)
}

/// A destination's state item (token bucket and circuit) as the workers read it.
pub fn worker_state(item: &Item) -> WorkerState {
    let bucket = |[at, requests, failures]: [&str; 3]| {
        get_n(item, at).map(|at| Bucket {
            at,
            requests: u32_of(item, requests),
            failures: u32_of(item, failures),
        })
    };
    WorkerState {
        tat_us: get_n(item, TAT_US),
        circuit: Circuit {
            failures: u32_of(item, FAILURES),
            failing_since: get_n(item, FAILING_SINCE),
            opened_at: get_n(item, OPENED_AT),
            probe_until: get_n(item, PROBE_UNTIL),
            probes: u32_of(item, PROBES),
            probes_up: u32_of(item, PROBES_UP),
            probes_down: u32_of(item, PROBES_DOWN),
            window: Window {
                slots: WINDOW_SLOTS.map(bucket),
            },
        },
    }
}
