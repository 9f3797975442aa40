//! Units by partition-key pattern of the flows the wallet webhook of `units.rs` does not
//! exercise: a hold the wallet API places before a send (`wallet_ledger::email::holds::Holds::place`,
//! as the API's handler calls it) and the delivery webhook that captures it (ingest and
//! processing, wallet handler), each against the emulator through the counted client: on a
//! wallet of one item ([`hold_and_capture`]), and on one of 8 shards with each function's view
//! of it warm, as deployed (`WALLET_VIEW_MS`: [`hold_and_capture_sharded`]).

use inbox_core::clock::SystemClock;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::keys::{self, KeyUnits};
use integration_tests::pipeline::Pipeline;
use std::time::Duration;
use wallet_ledger::balance::items::shards::{pick, shard_key};
use wallet_ledger::email::holds::{HoldOutcome, HoldRequest, Holds};
use wallet_ledger::{Ledger, TenantId, WalletSources, WalletViews};

/// How many shards the sharded flow's wallet has.
pub const SHARDS: u32 = 8;

/// The units of one hold, and of the webhook that captures it (a wallet of one item).
pub async fn hold_and_capture() -> (KeyUnits, KeyUnits) {
    let p = Pipeline::new().await;
    super::units::put_wallet(&p).await;
    let none = WalletViews::disabled();
    let flow = Flow::new(&p, none.clone(), none).await;
    flow.measured("m-held", "h-1", "msg_held").await
}

/// The same on a wallet of [`SHARDS`] shards, each funded, with the wallet API's and the
/// processor's views warm (one hold and its capture before the measured ones): each reads the
/// movement's own shard alone.
pub async fn hold_and_capture_sharded() -> (KeyUnits, KeyUnits) {
    let p = Pipeline::new().await;
    super::units::put_wallet(&p).await;
    let tenant = TenantId::parse("acme").expect("tenant");
    let counted = DynamoTable::new(p.counted_dynamodb().await, p.harness.table.clone());
    Ledger::new(&counted)
        .set_shards(&tenant, SHARDS)
        .await
        .expect("shards");
    // Each shard funded, as top-ups and refills leave a busy wallet (shard 0 has its floor).
    for shard in 1..SHARDS {
        let (pk, sk) = shard_key("acme", shard);
        p.harness
            .client
            .update_item()
            .table_name(&p.harness.table)
            .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk))
            .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(sk))
            .update_expression("SET balance = :b")
            .expression_attribute_values(
                ":b",
                aws_sdk_dynamodb::types::AttributeValue::N("1000000".into()),
            )
            .send()
            .await
            .expect("fund a shard");
    }
    // Each function's own view (one per instance), as deployed.
    let view = || WalletViews::system(Duration::from_secs(60));
    let flow = Flow::new(&p, view(), view()).await;
    // Messages whose shard is not the wallet item's: the shard items' own pattern.
    let mut ids = (0..)
        .map(|i| format!("m-k8-{i}"))
        .filter(|m| pick(m, SHARDS) != 0);
    let (warm, measured) = (ids.next().expect("an id"), ids.next().expect("an id"));
    flow.measured(&warm, "h-warm", "msg_warm").await;
    flow.measured(&measured, "h-k8", "msg_k8").await
}

/// A hold and its capture on the pipeline's wallet, each function with its view.
struct Flow<'p> {
    p: &'p Pipeline,
    store: DynamoTable,
    api_views: WalletViews,
    processor: Processor<DynamoTable, SqsRetryQueue, SqsQuarantine, SystemClock>,
}

impl<'p> Flow<'p> {
    async fn new(p: &'p Pipeline, api_views: WalletViews, process_views: WalletViews) -> Self {
        let store = DynamoTable::new(p.counted_dynamodb().await, p.harness.table.clone());
        let processor = Processor::new(
            store.clone(),
            SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
            SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
            SystemClock,
            process_function::registry_with(store.clone(), WalletSources::default(), process_views),
            ProcessorConfig::default(),
        );
        Self {
            p,
            store,
            api_views,
            processor,
        }
    }

    /// The units of the hold of `message_id`, and of its capture (webhook `event_id`).
    async fn measured(
        &self,
        message_id: &str,
        hold_id: &str,
        event_id: &str,
    ) -> (KeyUnits, KeyUnits) {
        let p = self.p;
        let snap = || keys::snapshot(&p.harness.client, &p.harness.table);
        let start = snap().await;
        p.keys.reset();
        let request = HoldRequest {
            tenant: TenantId::parse("acme").expect("tenant"),
            message_id: message_id.into(),
            amount: None,
            hold_id: hold_id.into(),
            expires_in: None,
        };
        let outcome = Holds::new(&self.store)
            .with_views(self.api_views.clone())
            .place(&request, |_| Vec::new())
            .await
            .expect("hold");
        assert!(matches!(outcome, HoldOutcome::Held(_)), "{outcome:?}");
        let held = snap().await;
        let hold = p.keys.attribute(&start, &held);

        p.keys.reset();
        let ingest = super::units::ingestor(&self.store);
        let body = integration_tests::mailer_event(message_id, "acme", 2 * 1024);
        super::units::send(&ingest, p, &body, event_id).await;
        let ingested = snap().await;
        let mut capture = p.keys.attribute(&held, &ingested);
        p.keys.reset();
        let (_, summary) = self
            .processor
            .handle_stream_batch(p.read_stream().await)
            .await;
        assert_eq!(summary.outcomes.get("processed"), Some(&1), "{summary:?}");
        keys::merge(&mut capture, p.keys.attribute(&ingested, &snap().await));
        (hold, capture)
    }
}
