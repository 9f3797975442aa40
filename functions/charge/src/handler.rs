//! The charge Lambda's handler: one charging pass ([`wallet_ledger::autopay::Pass`]) per
//! scheduled invocation (every minute), against the invocation's deadline, then its metrics
//! (namespace `WebhookIngestor/Wallet`, through the core's [`MetricSink`]: `AutopayCharged`,
//! `AutopayDeclined`, `AutopaySuspended`, `AutopayLimitReached`, `AutopayUncredited`, …) and the
//! report as the invocation's result. An error reading or writing the table fails the invocation
//! (its Errors alarm) after the metrics of what did commit are emitted.
//!
//! Generic over the table, the provider and the clock: [`build`] is the composition root that
//! picks them; tests run [`handle`] on the wallet crate's fakes.
//!
//! Reads `AUTOPAY_LADDER_DAYS`, `AUTOPAY_LEASE_SECS`, `AUTOPAY_CREDIT_WITHIN_SECS` and
//! `AUTOPAY_BATCH` ([`PassConfig::read`]), documented in `wallet_ledger::config`.

mod unplugged;

pub use unplugged::Unplugged;

use inbox_core::clock::{Clock, Millis, SystemClock};
use inbox_core::config::{ConfigError, Env};
use inbox_core::metrics::{EmfWriter, MetricSink};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;
use std::sync::Arc;
use wallet_ledger::autopay::{AttemptStore, Charger, Pass, PassConfig, PassReport, Settle};

/// The charging pass and where its metrics go.
pub struct Service<S, P, C, U> {
    pub pass: Pass<S, P, C, U>,
    pub metrics: Arc<dyn MetricSink>,
}

impl<S, P, C, U> std::fmt::Debug for Service<S, P, C, U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

/// The pass on `store` and `charger`, its metrics as EMF on stdout.
pub fn compose<S: AttemptStore, P: Charger, C: Clock>(
    store: S,
    charger: P,
    clock: C,
    config: PassConfig,
) -> Service<S, P, C, wallet_ledger::autopay::ReportOnly> {
    Service {
        pass: Pass::new(store, charger, clock, config),
        metrics: Arc::new(EmfWriter::stdout()),
    }
}

/// The function as deployed, built once per cold start. The composition root: the table's
/// `AttemptStore` and the payment provider's `Charger` are plugged in here.
pub async fn build() -> Result<
    Service<Unplugged, Unplugged, SystemClock, wallet_ledger::autopay::ReportOnly>,
    ConfigError,
> {
    let config = PassConfig::read(&Env::process())?;
    Ok(compose(Unplugged, Unplugged, SystemClock, config))
}

/// The Lambda entry point (the scheduled event's content is not needed): one pass that starts
/// no try it could not finish before the invocation's deadline.
pub async fn handle<S: AttemptStore, P: Charger, C: Clock, U: Settle>(
    service: &Service<S, P, C, U>,
    event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let deadline = i64::try_from(event.context.deadline)
        .ok()
        .filter(|d| *d > 0);
    run(service, deadline.map(Millis::new)).await
}

/// One pass: its metrics emitted, the report logged and returned; an error if any attempt could
/// not be handled (it stays as it was: the next run takes it again).
pub async fn run<S: AttemptStore, P: Charger, C: Clock, U: Settle>(
    service: &Service<S, P, C, U>,
    deadline: Option<Millis>,
) -> Result<Value, Error> {
    let report: PassReport = service.pass.run(deadline).await;
    service
        .metrics
        .emit(service.pass.clock().now_millis(), &report.metrics);
    log(&report);
    if report.errors > 0 {
        return Err(format!(
            "{} autopay attempt(s) or reads failed ({}); the next run tries again",
            report.errors,
            report.error_samples.join("; ")
        )
        .into());
    }
    Ok(serde_json::to_value(&report)?)
}

fn log(r: &PassReport) {
    if r.is_idle() {
        tracing::info!(due = 0, "nothing due");
        return;
    }
    tracing::info!(
        due = r.due,
        tries = r.tries,
        requests = r.requests,
        succeeded = r.succeeded,
        declined = r.declined,
        indeterminate = r.indeterminate,
        ended = r.ended,
        suspended = r.suspended,
        recurring_made = r.recurring_made,
        recurring_waiting = r.recurring_waiting,
        recurring_skipped = r.recurring_skipped,
        limit_reached = r.limit_reached,
        conflicts = r.conflicts,
        left_alone = r.left_alone,
        deferred = r.deferred,
        uncredited = r.uncredited.len(),
        settled = r.settled,
        errors = r.errors,
        "charging pass"
    );
}

#[cfg(test)]
mod tests;
