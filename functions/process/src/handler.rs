//! The process Lambda's handler and composition root.
//!
//! One function consumes two event sources: the table's stream (new messages; the event source
//! mapping's FilterCriteria pass only INSERTs of message items) and the retry queue (scheduled
//! retries, re-drives by the reaper and by operator replays). Both answer with per-record
//! failures (`ReportBatchItemFailures`), reported only for infrastructure errors.

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::config::{ConfigError, Env};
use inbox_core::invocation::Incoming;
use inbox_core::outbox::cache::DestinationCache;
use inbox_core::outbox::config::destination_cache;
use inbox_core::outbox::fanout::Outbox;
use inbox_core::process::registry::Registry;
use inbox_core::process::{ProcessConfig, Processor};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::queue::{Quarantine, RetryQueue};
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use inbox_core::store::{ItemStore, MessageStore};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;
use std::sync::Arc;
use wallet_ledger::{WalletConfig, WalletHandler, WalletViews};

/// The processor as deployed.
pub type Service = Processor<DynamoTable, SqsRetryQueue, SqsQuarantine, SystemClock>;

/// The composition root: every handler, by `(source, event type)`, in one place. Events without a
/// handler become `ignored` (kept, listable, replayable once a handler exists).
///
/// - the wallet ledger: Stripe top-ups and refunds (`WALLET_STRIPE_SOURCE`, default `stripe`, in
///   the `WALLET_STRIPE_MODE`) and email delivery events (`WALLET_MAILER_SOURCE`, default
///   `mailer`, and each provider's source in `WALLET_EMAIL_SOURCES`). Given its sources alone, the rest of its configuration is the documented default.
pub fn registry<S: ItemStore + 'static>(store: S, wallet: impl Into<WalletConfig>) -> Registry {
    registry_with(store, wallet, WalletViews::disabled())
}

/// The same with the instance's view of sharded wallets (`WALLET_VIEW_MS`): each email's
/// movement on a wallet of K > 1 shards reads its own shard alone.
pub fn registry_with<S: ItemStore + 'static>(
    store: S,
    wallet: impl Into<WalletConfig>,
    views: WalletViews,
) -> Registry {
    WalletHandler::new(store, wallet)
        .with_views(views)
        .register(Registry::new())
}

/// The partition-key patterns the process function reads in the table: the processor's
/// ([`inbox_core::process::PROCESS_READS`]: the message, the destinations) and its handlers'
/// (the wallet's, [`wallet_ledger::ledger::reads::handler_reads`]). Its role may read nothing
/// else (template.yaml's `dynamodb:LeadingKeys` on `ProcessRole`, compared by
/// tests/it/template.rs); a handler added to [`registry`] adds its reads here.
pub fn table_reads() -> Vec<String> {
    let mut reads: Vec<String> = inbox_core::process::PROCESS_READS
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    reads.extend(wallet_ledger::ledger::reads::handler_reads());
    reads
}

/// Builds the service once per cold start: the handlers, and the outbox's fan-out at the
/// terminal transitions.
pub async fn build() -> Result<Service, ConfigError> {
    let env = Env::process();
    let config = ProcessConfig::read(&env)?;
    let wallet = WalletConfig::read(&env)?;
    let sdk = inbox_core::tls::sdk_config(&env).await?;
    let bodies = inbox_core::store::dynamo::body::BodyConfig::read(&env)?.s3(&sdk);
    let store = DynamoTable::new(fail_fast_client(&sdk), config.table_name).with_bodies(bodies);
    let sqs = inbox_core::queue::sqs::fail_fast_sqs(&sdk);
    let retry = SqsRetryQueue::new(sqs.clone(), config.retry_queue_url);
    let quarantine = SqsQuarantine::new(sqs, config.quarantine_queue_url);
    let views = WalletViews::system(wallet_ledger::config::view_ttl(&env)?);
    let registry = registry_with(store.clone(), wallet, views);
    // The outbox: every event that becomes processed or ignored is fanned out to the matching
    // destinations in the transaction of that transition (destinations cached briefly).
    let destinations = DestinationCache::new(store.clone(), destination_cache(&env)?);
    let outbox = Arc::new(Outbox::new(destinations));
    Ok(Processor::new(
        store,
        retry,
        quarantine,
        SystemClock,
        registry,
        config.processor,
    )
    .with_fanout(outbox))
}

/// The Lambda entry point: a stream or retry-queue batch, answered with its batch item failures.
pub async fn handle<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock>(
    processor: &Processor<S, R, Q, C>,
    event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    match Incoming::parse(event.payload)? {
        Incoming::Stream(batch) => {
            let (response, summary) = processor.handle_stream_batch(batch).await;
            summary.log("stream");
            Ok(serde_json::to_value(response)?)
        }
        Incoming::Queue(batch) => {
            let (response, summary) = processor.handle_sqs_batch(batch).await;
            summary.log("retry_queue");
            Ok(serde_json::to_value(response)?)
        }
        Incoming::Schedule => Err(
            "unsupported event: a scheduled event; the process function takes a DynamoDB stream or SQS batch"
                .into(),
        ),
    }
}
