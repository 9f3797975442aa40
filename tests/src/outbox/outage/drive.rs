//! The Lambda's drive of the worker in the outage simulation ([`super::simulate`]): the delivery
//! queue as the simulation sees it ([`Queue`]) and one simulated second of receiving its
//! messages in batches, with the sweep on the minute ([`Sim`]).

use super::{Counts, OutageCost, Worker, BATCH, SWEEP_LIMIT, T0};
use inbox_core::outbox::queue::{MemoryOutboxQueues, Work};
use inbox_core::store::size::{item_size, write_units};

/// The delivery queue as the simulation sees it: each message with the time it becomes visible.
#[derive(Default)]
pub(super) struct Queue {
    waiting: Vec<(i64, Work)>,
}

impl Queue {
    /// Takes what the worker sent since the last call (sent at `now`) and counts it in `cost`.
    pub(super) fn take_sent(&mut self, queues: &MemoryOutboxQueues, now: i64, cost: &mut Counts) {
        let scheduled = std::mem::take(&mut *queues.scheduled.lock().expect("scheduled"));
        let redriven = std::mem::take(&mut *queues.redriven.lock().expect("redriven"));
        cost.sent += scheduled.len() + redriven.len();
        cost.sent_by_delay[0] += redriven.len();
        // One `SendMessage` per scheduled message; the sweep's re-drive sends batches of 10.
        cost.sqs_requests += scheduled.len() + redriven.len().div_ceil(BATCH);
        for (w, delay) in scheduled {
            // The message carries the delivery as its write left it: that write's units.
            if let Work::Attempt(d) = &w {
                let bytes = d.to_item().map_or(0, |i| item_size(&i));
                cost.carried_writes += 1;
                cost.carried_units += write_units(bytes);
            }
            cost.sent_by_delay[match delay.as_secs() {
                0..10 => 0,
                10..60 => 1,
                _ => 2,
            }] += 1;
            let delay = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
            self.waiting.push((now.saturating_add(delay), w));
        }
        self.waiting.extend(redriven.into_iter().map(|w| (now, w)));
    }

    /// The messages visible at `now`, removed.
    pub(super) fn visible(&mut self, now: i64) -> Vec<Work> {
        let (due, later) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.waiting = later;
        due.into_iter().map(|(_, w)| w).collect()
    }
}

/// The Lambda's drive of the worker, one simulated second at a time.
pub(super) struct Sim<'a> {
    pub(super) worker: &'a Worker,
    pub(super) queues: &'a MemoryOutboxQueues,
    pub(super) queue: Queue,
    /// The sweep's takes (`postpone_due`), which the in-memory store does not count.
    pub(super) postponed: usize,
}

impl Sim<'_> {
    /// One second at `now`: the messages visible, received in batches until none is left (a
    /// message sent with no delay is received in the same second), and the sweep on the minute.
    pub(super) async fn second(&mut self, now: i64, counts: &mut Counts, cost: &mut OutageCost) {
        let mut swept = (now - T0) % 60_000 != 0;
        loop {
            let visible = self.queue.visible(now);
            if visible.is_empty() {
                if swept {
                    break;
                }
                let report = self.worker.sweep(SWEEP_LIMIT).await.expect("sweep");
                counts.sweeps += 1;
                self.postponed += report.due - report.left;
                swept = true;
                self.queue.take_sent(self.queues, now, counts);
                continue;
            }
            counts.received += visible.len();
            for chunk in visible.chunks(BATCH) {
                let mut event = aws_lambda_events::event::sqs::SqsEvent::default();
                event.records = chunk
                    .iter()
                    .map(|w| {
                        let mut m = aws_lambda_events::event::sqs::SqsMessage::default();
                        m.body = Some(serde_json::to_string(w).expect("json"));
                        m
                    })
                    .collect();
                let (_, summary) = self.worker.handle_sqs_batch(event).await;
                counts.queue_batches += 1;
                // Lambda's poller: one `ReceiveMessage` and one `DeleteMessageBatch` per batch.
                counts.sqs_requests += 2;
                cost.tally(summary);
            }
            self.queue.take_sent(self.queues, now, counts);
        }
    }
}
