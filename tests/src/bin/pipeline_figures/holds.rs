//! Units by partition-key pattern of the flows the wallet webhook of `units.rs` does not
//! exercise: a hold the wallet API places before a send (`wallet_ledger::holds::Holds::place`,
//! as the API's handler calls it) and the delivery webhook that captures it (ingest and
//! processing, wallet handler), each against the emulator through the counted client.

use inbox_core::clock::SystemClock;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::keys::{self, KeyUnits};
use integration_tests::pipeline::Pipeline;
use wallet_ledger::holds::{HoldOutcome, HoldRequest, Holds};
use wallet_ledger::WalletSources;

/// The units of one hold, and of the webhook that captures it.
pub async fn hold_and_capture() -> (KeyUnits, KeyUnits) {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.counted_dynamodb().await, p.harness.table.clone());
    let tenant = wallet_ledger::TenantId::parse("acme").expect("tenant");
    super::units::put_wallet(&p).await;
    let snap = || keys::snapshot(&p.harness.client, &p.harness.table);

    let start = snap().await;
    p.keys.reset();
    let request = HoldRequest {
        tenant,
        message_id: "m-held".into(),
        amount: None,
        hold_id: "h-1".into(),
    };
    let outcome = Holds::new(&store)
        .place(&request, |_| Vec::new())
        .await
        .expect("hold");
    assert!(matches!(outcome, HoldOutcome::Held(_)), "{outcome:?}");
    let held = snap().await;
    let hold = p.keys.attribute(&start, &held);

    p.keys.reset();
    let ingest = super::units::ingestor(&store);
    let body = integration_tests::mailer_event("m-held", "acme", 2 * 1024);
    super::units::send(&ingest, &p, &body, "msg_held").await;
    let ingested = snap().await;
    let mut capture = p.keys.attribute(&held, &ingested);
    p.keys.reset();
    let processor = Processor::new(
        store.clone(),
        SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
        SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
        SystemClock,
        process_function::registry(store, WalletSources::default()),
        ProcessorConfig::default(),
    );
    let (_, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(summary.outcomes.get("processed"), Some(&1), "{summary:?}");
    keys::merge(&mut capture, p.keys.attribute(&ingested, &snap().await));
    (hold, capture)
}
