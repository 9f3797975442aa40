//! Contention as DynamoDB reports it: a write refused only because another transaction touched
//! one of its items at the same moment (a transaction cancelled with `TransactionConflict`
//! reasons and nothing else, see [`super::cancel::conflict_only`]; a single-item write answered
//! `TransactionConflictException`) is sent again, unchanged, after a backoff with full jitter,
//! a bounded number of times ([`crate::policy::CONFLICT_RETRY`]); only then is it reported as
//! today (a transaction's or an effect's conflict: the caller decides again on fresh state).
//!
//! [`Contention`]: the policy, the wait and the jitter's draw (injected: tests never sleep) and
//! where its counts go; [`Conflicts`]: one write's tries. Counted, in `WebhookIngestor/Inbox` with
//! the property `Operation` (`TransactWriteItems`, `PutItem`, `UpdateItem`), once the write ended:
//! [`TRANSACTION_CONFLICTS`] (the retries it took) and [`TRANSACTION_CONFLICTS_EXHAUSTED`] (it
//! still conflicted after the last).

use crate::clock::{sleeping, Clock, Draw, Pause, SystemClock};
use crate::metrics::{EmfWriter, Metric, MetricSink};
use crate::policy::{RetryPolicy, CONFLICT_RETRY};
use crate::process::METRICS_NAMESPACE;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use std::future::Future;
use std::sync::Arc;

/// The error code of a single-item write that met an ongoing transaction on its item.
const TRANSACTION_CONFLICT_EXCEPTION: &str = "TransactionConflictException";

/// Whether a single-item write's error is DynamoDB's answer to an ongoing transaction on its item.
pub(super) fn is_transaction_conflict<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    matches!(e, SdkError::ServiceError(se) if se.err().code() == Some(TRANSACTION_CONFLICT_EXCEPTION))
}

/// The metric counting writes sent again after a transaction conflict (its value: the retries).
pub const TRANSACTION_CONFLICTS: &str = "TransactionConflicts";
/// The metric counting writes that still met a transaction conflict after the last retry.
pub const TRANSACTION_CONFLICTS_EXHAUSTED: &str = "TransactionConflictsExhausted";

/// How the store meets contention: the bounded retries, the wait between them, the jitter's draw
/// and where their counts go.
#[derive(Clone)]
pub struct Contention {
    pub(super) policy: RetryPolicy,
    pause: Pause,
    draw: Draw,
    metrics: Arc<dyn MetricSink>,
}

impl std::fmt::Debug for Contention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contention")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Default for Contention {
    /// [`CONFLICT_RETRY`], tokio's sleep, a random draw, metrics as EMF on stdout.
    fn default() -> Self {
        Self {
            policy: CONFLICT_RETRY,
            pause: sleeping(),
            draw: Arc::new(fastrand::f64),
            metrics: Arc::new(EmfWriter::stdout()),
        }
    }
}

impl Contention {
    /// The same with other bounded retries.
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The same with another wait and jitter draw between tries (tests).
    pub fn with_pause(mut self, pause: Pause, draw: Draw) -> Self {
        self.pause = pause;
        self.draw = draw;
        self
    }

    /// The same with the counts going to `sink`.
    pub fn with_metrics(mut self, sink: Arc<dyn MetricSink>) -> Self {
        self.metrics = sink;
        self
    }

    /// A single-item write of `operation` (`send` sends it: a clone of its request each time),
    /// sent again while DynamoDB answers `TransactionConflictException`, within the bound; its
    /// last answer (after the last retry, that conflict: [`is_transaction_conflict`]).
    pub(super) async fn single<T, E, R, F, Fut>(
        &self,
        operation: &'static str,
        mut send: F,
    ) -> Result<T, SdkError<E, R>>
    where
        E: ProvideErrorMetadata,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, R>>>,
    {
        let mut tries = self.tries(operation);
        let result = loop {
            let result = send().await;
            if result.as_ref().is_err_and(|e| is_transaction_conflict(e)) && tries.again().await {
                continue;
            }
            break result;
        };
        tries.report();
        result
    }

    /// The tries of one write of `operation` (the DynamoDB operation's name).
    pub(super) fn tries(&self, operation: &'static str) -> Conflicts<'_> {
        Conflicts {
            contention: self,
            operation,
            retries: 0,
            exhausted: false,
        }
    }
}

/// One write's tries against contention. [`Conflicts::again`] after each conflict;
/// [`Conflicts::report`] once the write ended, whatever its end.
pub(super) struct Conflicts<'c> {
    contention: &'c Contention,
    operation: &'static str,
    retries: u32,
    exhausted: bool,
}

impl Conflicts<'_> {
    /// The try just sent met a transaction conflict: waits the backoff and says `true` (send it
    /// again), or `false` when that was the last try (the retries are exhausted).
    pub(super) async fn again(&mut self) -> bool {
        let c = self.contention;
        match c.policy.next_try(self.retries + 1, (c.draw)()) {
            Some(wait) => {
                self.retries += 1;
                (c.pause)(wait).await;
                true
            }
            None => {
                self.exhausted = true;
                false
            }
        }
    }

    /// Counts what the write met: its retries, and whether it gave up (nothing when it met no
    /// conflict).
    pub(super) fn report(self) {
        let mut metrics = Vec::new();
        if self.retries > 0 {
            metrics.push(
                Metric::count(
                    METRICS_NAMESPACE,
                    TRANSACTION_CONFLICTS,
                    i64::from(self.retries),
                )
                .with_property("Operation", self.operation),
            );
        }
        if self.exhausted {
            metrics.push(
                Metric::count(METRICS_NAMESPACE, TRANSACTION_CONFLICTS_EXHAUSTED, 1)
                    .with_property("Operation", self.operation)
                    .with_note(
                        "a write still met a transaction conflict after its bounded retries; \
                         the caller decides again on fresh state",
                    ),
            );
        }
        if !metrics.is_empty() {
            self.contention
                .metrics
                .emit(SystemClock.now_millis(), &metrics);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RecordingSink;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A contention whose waits are recorded (none is slept) and whose draw is `unit`.
    fn recorded(unit: f64) -> (Contention, Arc<Mutex<Vec<Duration>>>, Arc<RecordingSink>) {
        let waits = Arc::new(Mutex::new(Vec::new()));
        let w = waits.clone();
        let pause: Pause = Arc::new(move |d| {
            w.lock().unwrap().push(d);
            Box::pin(async {})
        });
        let sink = Arc::new(RecordingSink::new());
        let c = Contention::default()
            .with_pause(pause, Arc::new(move || unit))
            .with_metrics(sink.clone());
        (c, waits, sink)
    }

    fn values(sink: &RecordingSink, name: &str) -> Vec<(i64, Vec<(String, String)>)> {
        sink.emitted()
            .into_iter()
            .filter(|(_, m)| m.name == name)
            .map(|(_, m)| (m.value, m.properties))
            .collect()
    }

    #[tokio::test]
    async fn conflicts_are_retried_with_full_jitter_then_given_up_and_counted() {
        // (conflicts met before the write went through, or None: it never did) → tries sent
        // again, the waits (draw 0.5: half of 10, 20, 40, 80, 160 ms), whether it gave up.
        let cases: [(Option<u32>, u32, &[u64], bool); 5] = [
            (Some(0), 0, &[], false),
            (Some(1), 1, &[5], false),
            (Some(3), 3, &[5, 10, 20], false),
            (Some(5), 5, &[5, 10, 20, 40, 80], false),
            (None, 5, &[5, 10, 20, 40, 80], true),
        ];
        for (through_after, retries, waits, exhausted) in cases {
            let (c, recorded_waits, sink) = recorded(0.5);
            let mut tries = c.tries("TransactWriteItems");
            let mut sent = 1;
            loop {
                if through_after.is_some_and(|n| sent > n) {
                    break;
                }
                if !tries.again().await {
                    break;
                }
                sent += 1;
            }
            tries.report();
            let case = format!("{through_after:?}");
            assert_eq!(sent, retries + 1, "{case}: sends");
            let waits: Vec<Duration> = waits.iter().map(|&ms| Duration::from_millis(ms)).collect();
            assert_eq!(*recorded_waits.lock().unwrap(), waits, "{case}: waits");
            let op = vec![("Operation".to_string(), "TransactWriteItems".to_string())];
            let expected_retries = if retries > 0 {
                vec![(i64::from(retries), op.clone())]
            } else {
                vec![]
            };
            assert_eq!(
                values(&sink, TRANSACTION_CONFLICTS),
                expected_retries,
                "{case}: retries counted"
            );
            let expected_exhausted = if exhausted { vec![(1, op)] } else { vec![] };
            assert_eq!(
                values(&sink, TRANSACTION_CONFLICTS_EXHAUSTED),
                expected_exhausted,
                "{case}: exhaustion counted"
            );
        }
    }

    #[tokio::test]
    async fn the_draw_spans_zero_to_the_ceiling() {
        for (unit, first) in [(0.0, 0), (0.999, 9), (1.0, 10)] {
            let (c, waits, _) = recorded(unit);
            let mut tries = c.tries("PutItem");
            assert!(tries.again().await);
            assert_eq!(
                waits.lock().unwrap().first().map(Duration::as_millis),
                Some(first),
                "{unit}"
            );
        }
    }
}
