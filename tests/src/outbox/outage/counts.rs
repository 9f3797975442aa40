//! What the outage simulation counts ([`super::simulate`]): per run and per hour, and per
//! pending delivery per hour.

use std::collections::BTreeMap;

/// What was counted, over the whole run or one hour of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Delivery-queue messages sent (scheduled retries and deferrals, the sweep's re-drives).
    pub sent: usize,
    /// Of those, by their delay: under 10 s, 10 s to 1 min, longer (the sweep's re-drives: 0).
    pub sent_by_delay: [usize; 3],
    /// Delivery-queue messages received (handed to the worker).
    pub received: usize,
    /// Invocations of the deliver function: stream batches, queue batches.
    pub stream_batches: usize,
    pub queue_batches: usize,
    /// SQS requests: `SendMessage` per scheduled message, `SendMessageBatch` per 10 re-driven,
    /// and per queue batch one `ReceiveMessage` and one `DeleteMessageBatch` (the pollers'
    /// empty receives are not counted).
    pub sqs_requests: usize,
    /// Sweeps run (one a minute whatever the deliveries: not charged to them).
    pub sweeps: usize,
    /// DynamoDB write requests (see the module's doc).
    pub writes: usize,
    /// Of those, the writes of a delivery whose message carried the item as written (every
    /// deferral and every scheduled retry), and their write units by that item's size.
    pub carried_writes: usize,
    pub carried_units: u64,
    /// POSTs to the destination (probes of the open circuit).
    pub posts: usize,
}

impl Counts {
    /// Write units: the carried writes' by their item's size (after the write, which DynamoDB
    /// bills on the larger of before and after: a lower bound when an item shrank), every other
    /// write one unit (token and circuit writes of the small state item, the sweep's takes, the
    /// probes' claims).
    pub fn write_units(&self) -> u64 {
        self.carried_units + (self.writes - self.carried_writes) as u64
    }

    /// Invocations: stream and queue batches (the sweeps are not charged to the deliveries).
    pub fn invocations(&self) -> usize {
        self.stream_batches + self.queue_batches
    }

    /// What was counted since `earlier`.
    pub(super) fn since(&self, earlier: &Self) -> Self {
        let d = |a: usize, b: usize| a - b;
        Self {
            sent: d(self.sent, earlier.sent),
            sent_by_delay: [0, 1, 2].map(|i| d(self.sent_by_delay[i], earlier.sent_by_delay[i])),
            received: d(self.received, earlier.received),
            stream_batches: d(self.stream_batches, earlier.stream_batches),
            queue_batches: d(self.queue_batches, earlier.queue_batches),
            sqs_requests: d(self.sqs_requests, earlier.sqs_requests),
            sweeps: d(self.sweeps, earlier.sweeps),
            writes: d(self.writes, earlier.writes),
            carried_writes: d(self.carried_writes, earlier.carried_writes),
            carried_units: self.carried_units - earlier.carried_units,
            posts: d(self.posts, earlier.posts),
        }
    }
}

/// What `deliveries` pending deliveries cost over `hours` simulated hours of an outage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutageCost {
    pub deliveries: usize,
    pub hours: u32,
    /// Over the whole run.
    pub total: Counts,
    /// Over each hour (the first with the deliveries' arrival).
    pub hourly: Vec<Counts>,
    /// What the handled records came to, by outcome.
    pub outcomes: BTreeMap<&'static str, usize>,
    /// The largest delivery item at the end, bytes (DynamoDB's item-size rules): under 1024,
    /// each of its writes is one write unit.
    pub largest_item: usize,
    /// Whether the circuit was open at the end.
    pub open_at_end: bool,
    /// What happened once the destination was back (answering 200, or resumed).
    pub recovery: Recovery,
}

/// The destination back after the outage: how fast its backlog drained, and at what pace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Seconds from the destination's return to its first delivered POST (the circuit's probe).
    pub first_after_s: i64,
    /// Seconds from the destination's return to the last of the backlog delivered (`None`: not
    /// within the simulated recovery).
    pub drained_after_s: Option<i64>,
    /// Deliveries delivered.
    pub delivered: usize,
    /// The most POSTs in any window of [`RATE_WINDOW_S`] seconds (the destination's rate bounds
    /// it by its burst + rate × the window).
    pub most_in_window: usize,
    /// Queue messages and DynamoDB write requests of the recovery, per delivery.
    pub sent: usize,
    pub writes: usize,
}

/// The window over which the recovery's pace is measured, s.
pub const RATE_WINDOW_S: usize = 10;

impl OutageCost {
    pub(super) fn tally(&mut self, s: inbox_core::invocation::Summary) {
        for (k, v) in s.outcomes {
            *self.outcomes.entry(k).or_default() += v;
        }
    }

    /// `count` (over `hours` hours) per pending delivery per hour.
    pub fn per_delivery_hour(&self, count: usize, hours: u32) -> f64 {
        count as f64 / (self.deliveries as f64 * f64::from(hours.max(1)))
    }
}
