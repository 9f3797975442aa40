//! The catch-up Lambda's handler: one scheduled catch-up run
//! ([`stripe_charges::catch_up::scheduled::Scheduled::run`]) per invocation (every 15 minutes),
//! against the invocation's deadline; then its counts by outcome (namespace
//! `WebhookIngestor/CatchUp`: `CaughtUp`, `AlreadyHad`, `Refused`, `LeftForNextRun`,
//! `StripeRequests`, `StripeRateLimited`) emitted after the writes that made them true, and the
//! report as the invocation's result; about hourly ([`against::due`]) the ledger reconciled
//! against Stripe after the run ([`against`]). A run that could not list Stripe's events or store one
//! fails the invocation (its Errors alarm) after the counts of what it did are emitted; the next
//! run takes its window again.
//!
//! A function of its own, not part of the reconciliation: the reconcile function only reads
//! (and may Scan); this one writes the Stripe source's messages and holds the Stripe key.
//! Each keeps the permissions of its own job.
//!
//! Generic over the table, Stripe and the clock: [`build`] is the composition root;
//! `tests/it/stripe_catch_up.rs` runs [`run`] on DynamoDB Local and the Stripe stand-in.
//!
//! Reads `TABLE_NAME`, `WEBHOOK_SOURCES` (the Stripe source's settings: how an event's id and
//! type are read), `WALLET_STRIPE_SOURCE`, `BODY_BUCKET`, `BODY_INLINE_MAX_BYTES`,
//! `MAX_BODY_BYTES`, `DELIVERY_RETENTION_DAYS`, the Stripe module's `STRIPE_*`.
//! It never verifies a signature, so it is given no signing secret: the Stripe source is set up
//! with a random secret made at start and never shown (it signs nothing, and nothing it could
//! verify exists).

pub mod against;

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::config::{catalog, vars, ConfigError, Env};
use inbox_core::ingest::config::read_max_body;
use inbox_core::ingest::Ingestor;
use inbox_core::metrics::{EmfWriter, MetricSink};
use inbox_core::outbox::bucket::shared::SharedBucket;
use inbox_core::signature::Secret;
use inbox_core::sources::Sources;
use inbox_core::store::dynamo::body::BodyConfig;
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use inbox_core::store::{Inbox, ItemStore, ItemWriter, MessageStore};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use stripe_charges::catch_up::scheduled::{Run, Scheduled};
use stripe_charges::events::StripeEvents;
use stripe_charges::transport::Transport;
use stripe_charges::{HttpTransport, StripeClient, StripeConfig};

/// The scheduled run, the reconciliation against Stripe after it, its clock and where its
/// metrics go.
pub struct Service<T, B, S, C, K> {
    pub scheduled: Scheduled<T, B, S, C>,
    /// `None`: no reconciliation (tests of the catch-up alone).
    pub against: Option<against::Against<T, B>>,
    pub clock: K,
    pub metrics: Arc<dyn MetricSink>,
}

impl<T, B, S, C, K> std::fmt::Debug for Service<T, B, S, C, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

/// The function as deployed.
pub type Deployed = Service<HttpTransport, DynamoTable, DynamoTable, SystemClock, SystemClock>;

/// The Stripe source alone, from `WEBHOOK_SOURCES`, with a random secret (nothing is verified).
pub fn stripe_source(sources_json: &str, source: &str) -> Result<Sources, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        var: vars::WEBHOOK_SOURCES,
        reason,
    };
    let all: HashMap<String, Value> =
        serde_json::from_str(sources_json).map_err(|e| invalid(e.to_string()))?;
    let spec = all.get(source).ok_or_else(|| {
        invalid(format!(
            "no source {source:?} (WALLET_STRIPE_SOURCE) to store Stripe's events as"
        ))
    })?;
    let secret: Vec<u8> = (0..32).map(|_| fastrand::u8(..)).collect();
    let secrets = HashMap::from([(source.to_owned(), vec![Secret::from_bytes(secret)])]);
    Sources::from_json(&json!({ source: spec }).to_string(), &secrets)
}

/// The function as deployed, built once per cold start.
pub async fn build() -> Result<Deployed, ConfigError> {
    let env = Env::process();
    let source: String = env.parse(&wallet_ledger::config::WALLET_STRIPE_SOURCE)?;
    let sources = stripe_source(&env.required(&catalog::WEBHOOK_SOURCES)?, &source)?;
    let retention_days: u32 = env.parse(&catalog::DELIVERY_RETENTION_DAYS)?;
    let bodies = BodyConfig::read(&env)?;
    let max_body = read_max_body(&env, &bodies)?;
    let sdk = inbox_core::tls::sdk_config(&env).await?;
    let table = DynamoTable::new(fail_fast_client(&sdk), env.required(&catalog::TABLE_NAME)?)
        .with_bodies(bodies.s3(&sdk));
    let stripe = StripeConfig::read(&env, &sdk).await?;
    let client = || {
        StripeClient::from_config(&stripe, table.clone()).map_err(|e| ConfigError::Invalid {
            var: "STRIPE_API_BASE",
            reason: format!("no TLS configuration for the Stripe client: {e}"),
        })
    };
    let against = against::Against {
        payments: stripe_charges::reconcile::StripePayments::on(client()?),
        options: Default::default(),
    };
    let client = client()?;
    let ingestor = Ingestor::new(sources, table, SystemClock, max_body, retention_days);
    Ok(Service {
        scheduled: Scheduled {
            events: StripeEvents::on(client),
            ingestor,
            types: wallet_ledger::STRIPE_TYPES
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            source,
            key_livemode: stripe.key.livemode(),
        },
        against: Some(against),
        clock: SystemClock,
        metrics: Arc::new(EmfWriter::stdout()),
    })
}

/// The Lambda entry point (the scheduled event's content is not needed).
pub async fn handle<T, B, S, C, K>(
    service: &Service<T, B, S, C, K>,
    event: LambdaEvent<Value>,
) -> Result<Value, Error>
where
    T: Transport,
    B: SharedBucket,
    S: Inbox + MessageStore + ItemStore + ItemWriter,
    C: Clock,
    K: Clock,
{
    let now = service.clock.now_millis();
    run(
        service,
        inbox_core::invocation::deadline(event.context.deadline, now),
    )
    .await
}

/// One run: its counts emitted, the report logged and returned; an error when it failed.
pub async fn run<T, B, S, C, K>(
    service: &Service<T, B, S, C, K>,
    deadline_ms: Option<i64>,
) -> Result<Value, Error>
where
    T: Transport,
    B: SharedBucket,
    S: Inbox + MessageStore + ItemStore + ItemWriter,
    C: Clock,
    K: Clock,
{
    let now = service.clock.now_millis();
    let run = service
        .scheduled
        .run(&service.clock, deadline_ms)
        .await
        .map_err(|e| format!("the catch-up checkpoint could not be read or written: {e}"))?;
    service
        .metrics
        .emit(service.clock.now_millis(), &run.metrics());
    let mut value = report(&run);
    if let Some(a) = service.against.as_ref().filter(|_| against::due(now)) {
        let in_flight = run
            .report
            .events
            .iter()
            .filter(|e| e.verdict == stripe_charges::catch_up::Verdict::New)
            .filter_map(|e| e.intent.clone())
            .collect();
        let (done, metrics) = against::run(
            a,
            service.scheduled.ingestor.store(),
            service.clock.now_millis(),
            &in_flight,
        )
        .await;
        service.metrics.emit(service.clock.now_millis(), &metrics);
        value["stripe_reconcile"] = against::summary(&done);
    }
    tracing::info!(report = %value, "stripe catch-up run");
    match &run.failed {
        Some(why) => Err(format!(
            "the catch-up run stopped: {why}; the next run takes its window again"
        )
        .into()),
        None => Ok(value),
    }
}

/// The run as the invocation's result (ids of what was missing, never a body).
pub fn report(run: &Run) -> Value {
    let r = &run.report;
    let missing: Vec<&str> = r
        .events
        .iter()
        .filter(|e| e.verdict == stripe_charges::catch_up::Verdict::New)
        .map(|e| e.id.as_str())
        .collect();
    json!({
        "window": {
            "created_gte": run.window.created_gte,
            "created_lte": run.window.created_lte,
            "start": run.window.start.as_str(),
        },
        "listed": r.events.len() + r.too_recent,
        "new": r.new_events(),
        "already_had": r.already_had(),
        "refused": r.refused(),
        "too_recent": r.too_recent,
        "left_from": r.left_from,
        "missing": missing,
        "missing_by_type": r.missing_by_type(),
        "stripe_requests": r.requests,
        "checkpoint_written": run.checkpoint_written,
        "failed": run.failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stripe_source_is_taken_alone_with_its_settings() {
        let json = r#"{"stripe":{"scheme":"stripe"},"github":{"scheme":"github"}}"#;
        let sources = stripe_source(json, "stripe").unwrap();
        assert_eq!(sources.names(), ["stripe"]);
        let missing = stripe_source(json, "billing").unwrap_err().to_string();
        assert!(missing.contains("no source \"billing\""), "{missing}");
    }
}
