//! The deliver Lambda's handler and composition root.
//!
//! Three event sources, one function: the table's stream (new delivery and fan-out items: the
//! event source mapping's FilterCriteria pass only INSERTs of `sk` `OUT` and `FAN`), the delivery
//! queue (retries up to 15 minutes ahead, the sweep's re-drives, operator retries), and a schedule
//! (every minute: the sweep). Batches answer with per-record failures
//! (`ReportBatchItemFailures`), reported only for infrastructure errors.
//!
//! [`http`] is the HTTP client with the SSRF guard ([`ssrf`]).

pub mod http;
pub mod ssrf;

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::invocation::Incoming;
use inbox_core::outbox::config::DeliverFunctionConfig;
use inbox_core::outbox::queue::SqsOutboxQueues;
use inbox_core::outbox::worker::{until_deadline, Deliverer, DeliveryPorts};
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

/// The deliver function as deployed.
pub struct Service {
    pub deliverer: Deliverer<(
        DynamoTable,
        http::HttpTransport,
        SqsOutboxQueues,
        SystemClock,
    )>,
    pub sweep_max_per_run: usize,
}

/// Builds the service once per cold start.
pub async fn build() -> Result<Service, Error> {
    let config = DeliverFunctionConfig::from_env()?;
    let sdk = inbox_core::tls::sdk_config(&inbox_core::config::Env::process()).await?;
    let bodies =
        inbox_core::store::dynamo::body::BodyConfig::read(&inbox_core::config::Env::process())?
            .s3(&sdk);
    let secrets_key =
        inbox_core::store::dynamo::SecretsKey::from_env(&inbox_core::config::Env::process(), &sdk);
    if secrets_key.is_none() {
        tracing::warn!(
            "DESTINATION_SECRETS_KEY is not set: encrypted destination secrets cannot be read"
        );
    }
    let store = DynamoTable::new(fail_fast_client(&sdk), config.table_name.clone())
        .with_bodies(bodies)
        .with_secrets_key(secrets_key);
    let queues = SqsOutboxQueues::new(
        aws_sdk_sqs::Client::new(&sdk),
        config.delivery_queue_url.clone(),
        config.delivery_quarantine_queue_url.clone(),
    );
    let transport = http::HttpTransport::new(ssrf::AddressPolicy {
        allow_loopback: config.allow_loopback,
    })?;
    if config.allow_loopback {
        tracing::warn!("DELIVERY_ALLOW_LOOPBACK is set: loopback and plain http:// destinations are allowed (local use only)");
    }
    Ok(Service {
        deliverer: Deliverer::new(
            store,
            transport,
            queues,
            SystemClock,
            config.worker,
            config.destination_cache,
        ),
        sweep_max_per_run: config.sweep_max_per_run,
    })
}

/// The Lambda entry point: a stream or queue batch (answered with its batch item failures), or a
/// scheduled event (the sweep; answered with its report).
pub async fn handle<P: DeliveryPorts>(
    deliverer: &Deliverer<P>,
    sweep_max_per_run: usize,
    event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    // Every wait of a delivery ends in time for its POST and its record before this (an event
    // without one, as a hand-made test context or a local emulator's has, sets none).
    let deadline =
        inbox_core::invocation::deadline(event.context.deadline, SystemClock.now_millis())
            .unwrap_or(i64::MAX);
    match Incoming::parse(event.payload)? {
        Incoming::Stream(batch) => {
            let (response, summary) =
                until_deadline(deadline, deliverer.handle_stream_batch(batch)).await;
            summary.log("stream");
            Ok(serde_json::to_value(response)?)
        }
        Incoming::Queue(batch) => {
            let (response, summary) =
                until_deadline(deadline, deliverer.handle_sqs_batch(batch)).await;
            summary.log("delivery_queue");
            Ok(serde_json::to_value(response)?)
        }
        Incoming::Schedule => {
            let report = until_deadline(deadline, deliverer.sweep(sweep_max_per_run)).await?;
            if report.due > 0 {
                tracing::warn!(
                    due = report.due,
                    redriven = report.redriven,
                    left = report.left,
                    oldest_due_secs = report.oldest_due_secs,
                    "re-drove due deliveries"
                );
            } else {
                tracing::info!(
                    due = 0,
                    disabled_destinations = report.disabled_destinations,
                    "nothing due"
                );
            }
            Ok(serde_json::to_value(report)?)
        }
    }
}

/// The entry point of the deployed service.
pub async fn handle_service(service: &Service, event: LambdaEvent<Value>) -> Result<Value, Error> {
    handle(&service.deliverer, service.sweep_max_per_run, event).await
}
