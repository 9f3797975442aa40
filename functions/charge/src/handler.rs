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
//! The same run sweeps the holds past their expiry ([`wallet_ledger::email::holds::expiry`]):
//! it reads the open index's hold shards (`WALLET#HOLDS#…`) and releases each due hold in the
//! wallet's partition, publishing `wallet.hold_expired` (the writes the charging pass already
//! makes: no other permission). Its counts (`HoldsExpired`) are emitted with the pass's.
//!
//! Reads `AUTOPAY_LADDER_DAYS`, `AUTOPAY_LEASE_SECS`, `AUTOPAY_CREDIT_WITHIN_SECS` and
//! `AUTOPAY_BATCH` ([`PassConfig::read`]), documented in `wallet_ledger::config`.

use inbox_core::clock::{Clock, Millis, SystemClock};
use inbox_core::config::{catalog, ConfigError, Env};
use inbox_core::metrics::{EmfWriter, MetricSink};
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;
use std::sync::Arc;
use stripe_charges::charger::StripeCharger;
use stripe_charges::config::StripeConfig;
use stripe_charges::http::HttpTransport;
use wallet_ledger::autopay::table::TableAttempts;
use wallet_ledger::autopay::{AttemptStore, Charger, Pass, PassConfig, PassReport, Settle};
use wallet_ledger::balance::events::SettleByEvent;
use wallet_ledger::email::holds::expiry::{HoldSweep, SweepHolds, SweepReport};

/// The charging pass and where its metrics go.
pub struct Service<S, P, C, U> {
    pub pass: Pass<S, P, C, U>,
    pub metrics: Arc<dyn MetricSink>,
    /// The expiry sweep of holds, run after the pass (none: not swept).
    pub holds: Option<Arc<dyn SweepHolds>>,
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
        holds: None,
    }
}

/// At most this many due holds per hold shard and run (16 shards: 1,600 a minute); the sweep
/// stops 5 s before the invocation's deadline, leaving the rest for the next run.
pub const HOLD_BATCH: usize = 100;

/// The table as the charging pass and the settlement of late credits use it.
pub type Table = TableAttempts<DynamoTable>;

/// The function as deployed: the pass on the table, Stripe, the system clock, and late credits
/// settled by the wallet's own event.
pub type Deployed = Service<
    Table,
    StripeCharger<HttpTransport, DynamoTable>,
    SystemClock,
    SettleByEvent<DynamoTable, SystemClock>,
>;

/// The function as deployed, built once per cold start. The composition root: the ledger's
/// `AttemptStore` over the table, the Stripe `Charger` (its account's token bucket in the same
/// table), and the wallet's settlement of charges whose webhook never came.
pub async fn build() -> Result<Deployed, ConfigError> {
    let env = Env::process();
    let config = PassConfig::read(&env)?;
    let table_name = env.required(&catalog::TABLE_NAME)?;
    let sdk = inbox_core::tls::sdk_config(&env).await?;
    let table = DynamoTable::new(fail_fast_client(&sdk), table_name);
    let stripe = StripeConfig::read(&env, &sdk).await?;
    let charger =
        StripeCharger::from_config(&stripe, table.clone()).map_err(|e| ConfigError::Invalid {
            var: "STRIPE_API_BASE",
            reason: format!("no TLS configuration for the Stripe client: {e}"),
        })?;
    let settle = SettleByEvent {
        writer: table.clone(),
        clock: SystemClock,
    };
    let holds = HoldSweep {
        store: table.clone(),
        clock: Arc::new(SystemClock),
        batch: HOLD_BATCH,
    };
    let service = compose(TableAttempts::new(table), charger, SystemClock, config);
    Ok(Service {
        pass: service.pass.settling_with(settle),
        metrics: service.metrics,
        holds: Some(Arc::new(holds)),
    })
}

/// The Lambda entry point (the scheduled event's content is not needed): one pass that starts
/// no try it could not finish before the invocation's deadline.
pub async fn handle<S: AttemptStore, P: Charger, C: Clock, U: Settle>(
    service: &Service<S, P, C, U>,
    event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let now = service.pass.clock().now_millis();
    let deadline = inbox_core::invocation::deadline(event.context.deadline, now);
    run(service, deadline.map(Millis::new)).await
}

/// One pass: its metrics emitted, the report logged and returned; an error if any attempt could
/// not be handled (it stays as it was: the next run takes it again).
pub async fn run<S: AttemptStore, P: Charger, C: Clock, U: Settle>(
    service: &Service<S, P, C, U>,
    deadline: Option<Millis>,
) -> Result<Value, Error> {
    let report: PassReport = service.pass.run(deadline).await;
    let now = service.pass.clock().now_millis();
    service.metrics.emit(now, &report.metrics);
    // The provider module's own counts (requests, retries, throttling, declines by code).
    service
        .metrics
        .emit(now, &service.pass.charger().take_metrics());
    log(&report);
    let swept = match &service.holds {
        Some(holds) => holds.sweep(deadline).await,
        None => SweepReport::default(),
    };
    service.metrics.emit(now, &swept.metrics);
    if swept.due > 0 || swept.errors > 0 || swept.stopped_at_deadline {
        tracing::info!(
            due = swept.due,
            expired = swept.expired,
            not_due = swept.not_due,
            busy = swept.busy,
            errors = swept.errors,
            left_for_next_run = swept.left,
            stopped_at_deadline = swept.stopped_at_deadline,
            "expiry sweep of holds"
        );
    }
    if report.errors > 0 || swept.errors > 0 {
        return Err(format!(
            "{} autopay attempt(s) or reads failed ({}), {} hold expiries failed ({}); the next run tries again",
            report.errors,
            report.error_samples.join("; "),
            swept.errors,
            swept.error_samples.join("; ")
        )
        .into());
    }
    let mut value = serde_json::to_value(&report)?;
    if let Some(fields) = value.as_object_mut() {
        fields.insert("holds".into(), serde_json::to_value(&swept)?);
    }
    Ok(value)
}

fn log(r: &PassReport) {
    for item in &r.unreadable_samples {
        tracing::warn!(item = %item, "an autopay item could not be read: skipped");
    }
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
        pending = r.pending,
        indeterminate = r.indeterminate,
        resent_after_proof = r.resent_after_proof,
        unreadable = r.unreadable,
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
