//! The wallet's own events (`shared/wallet/src/balance/events.rs`) through the outbox against the
//! emulators: [`WalletEvent::publish`] committed through the core's `ItemWriter::commit` (as the
//! ledger and the charging pass commit it, with the change it reports) writes a message of the
//! source `wallet`, which has no signature scheme and no handler: the deployed registry marks it
//! `ignored`, the fan-out gives it to the destinations subscribed to its type only, and each gets
//! it once, signed with Standard Webhooks, however often the commit is repeated (before the
//! message is processed, or after) and whether the stream or the reaper brings it to the processor.

use crate::outbox::verify_with_library;
use inbox_core::clock::{Clock, ManualClock, Millis, SystemClock};
use inbox_core::domain::{EventId, MessageKey, SourceName, Status};
use inbox_core::message::StoredMessage;
use inbox_core::outbox::delivery::{DeliveryRef, DeliveryStatus};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::worker::DeliverConfig;
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome};
use inbox_core::store::schema::{message_pk, MESSAGE_SK, PENDING_GRACE_MS};
use inbox_core::store::{Applied, Effect, ItemStore as _, ItemWriter as _};
use integration_tests::outbox::{dest_id, OutboxRig, TestDeliverer};
use integration_tests::pipeline::{TestProcessor, TYPE};
use integration_tests::receiver::Receiver;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use wallet_ledger::balance::events::{WalletEvent, SOURCE};
use wallet_ledger::{TenantId, WalletSources};

pub(crate) fn config() -> DeliverConfig {
    DeliverConfig {
        max_wait: Duration::ZERO,
        ..DeliverConfig::default()
    }
}

fn failed_try(try_no: u32) -> WalletEvent {
    WalletEvent::AutopayFailed {
        tenant: TenantId::parse("acme").expect("tenant"),
        attempt: "att_renewal_2027_01".into(),
        try_no,
        code: "insufficient_funds".into(),
        next_try_at: Some(Millis::new(1_800_086_400_000)),
    }
}

fn key_of(event: &WalletEvent) -> MessageKey {
    MessageKey::new(
        SourceName::parse(SOURCE).expect("source"),
        EventId::parse(&event.id()).expect("event id"),
    )
}

fn delivery_of(destination: &str, event: &WalletEvent) -> DeliveryRef {
    DeliveryRef {
        destination: dest_id(destination),
        source: SourceName::parse(SOURCE).expect("source"),
        event_id: EventId::parse(&event.id()).expect("event id"),
    }
}

/// Commits the event's publication after `with` (the change it reports), as a writer that
/// re-runs its transaction would.
async fn publish_with(rig: &OutboxRig, event: &WalletEvent, at: i64, mut with: Vec<Effect>) {
    with.push(event.publish(Millis::new(at)).expect("a valid event"));
    assert_eq!(
        rig.store().commit(with).await.expect("commit"),
        Applied::Done,
        "publishing never conflicts"
    );
}

async fn publish(rig: &OutboxRig, event: &WalletEvent, at: i64) {
    publish_with(rig, event, at, Vec::new()).await;
}

/// `ADD n 1` on the item `COUNT#{name}`: a change committed with a publication.
fn count(name: &str) -> Effect {
    Effect::Adjust {
        pk: format!("COUNT#{name}"),
        sk: "COUNT".into(),
        add: vec![("n".into(), 1)],
        set: Vec::new(),
    }
}

async fn counted(rig: &OutboxRig, name: &str) -> i64 {
    rig.store()
        .get_item(&format!("COUNT#{name}"), "COUNT")
        .await
        .expect("get")
        .and_then(|i| inbox_core::store::attr::get_n(&i, "n"))
        .unwrap_or(0)
}

/// The message item as stored (every attribute), to compare before and after a repeat.
async fn raw_message(rig: &OutboxRig, event: &WalletEvent) -> inbox_core::store::Item {
    rig.store()
        .get_item(&message_pk(&key_of(event)), MESSAGE_SK)
        .await
        .expect("get")
        .expect("the message item exists")
}

/// Delivers what the stream carries since it was last read (INSERTs of `OUT` and `FAN`), as the
/// deliver function's mapping does.
async fn deliver_new<C: Clock>(
    rig: &OutboxRig,
    worker: &TestDeliverer<deliver_function::http::HttpTransport, C>,
) {
    let batch = rig
        .pipeline
        .read_stream_where(|sk| sk == "OUT" || sk == "FAN")
        .await;
    let (response, _) = worker.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
}

/// The deployed registry (the wallet ledger's handlers): nothing handles the source `wallet`.
async fn deployed_processor<C: Clock>(rig: &OutboxRig, clock: C) -> TestProcessor<C> {
    let registry = process_function::registry(rig.store(), WalletSources::default());
    rig.processor(registry, clock).await
}

#[tokio::test]
async fn a_wallet_event_reaches_its_subscribers_once_signed_however_often_it_is_committed() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    let others = Receiver::always(200);
    let d = rig
        .destination("crm", &crm.url, &["wallet:wallet.autopay_failed"], |_| {})
        .await;
    rig.destination(
        "topups",
        &others.url,
        &["wallet:wallet.topped_up", "stripe:*"],
        |_| {},
    )
    .await;
    let event = failed_try(1);
    let now = SystemClock.now_millis();
    // A writer that re-runs its transaction publishes again (a later `now`: same id).
    publish(&rig, &event, now).await;
    publish(&rig, &event, now + 1_000).await;

    let processor = deployed_processor(&rig, SystemClock).await;
    let batch = rig.pipeline.read_stream().await;
    assert_eq!(batch.records.len(), 1, "one INSERT of one message");
    let (response, _) = processor.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    let message = rig.pipeline.message_of(SOURCE, &event.id()).await;
    assert_eq!(message.status, Status::Ignored, "{:?}", message.history);
    assert_eq!(
        message.event_type.as_ref().map(|t| t.as_str()),
        Some("wallet.autopay_failed")
    );
    assert_eq!(message.open_due, None, "out of the open index once ignored");

    // Published once more after it was processed, alone and in a transaction with another
    // change: the message stays as it is (not pending again, not back in the open index, same
    // version) and the other change is made.
    let before = raw_message(&rig, &event).await;
    publish(&rig, &event, now + 2_000).await;
    publish_with(&rig, &event, now + 2_500, vec![count("rerun")]).await;
    assert_eq!(
        raw_message(&rig, &event).await,
        before,
        "a repeat changes nothing"
    );
    assert_eq!(
        counted(&rig, "rerun").await,
        1,
        "the rest of the transaction committed"
    );

    // The deliveries the processor's transition wrote: one, to the subscriber of the type.
    let batch = rig
        .pipeline
        .read_stream_where(|sk| sk == "OUT" || sk == "FAN")
        .await;
    assert_eq!(batch.records.len(), 1, "one delivery item");
    assert!(rig
        .store()
        .delivery(&delivery_of("topups", &event))
        .await
        .unwrap()
        .is_none());
    let worker = rig.deliverer(SystemClock, config()).await;
    let (response, summary) = worker.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.outcomes.get("delivered"), Some(&1), "{summary:?}");
    assert_eq!((crm.count(), others.count()), (1, 0));

    let hit = &crm.hits()[0];
    assert_eq!(hit.body, message.body, "the event as published");
    assert_eq!(
        (
            hit.header("webhook-source"),
            hit.header("webhook-event-type")
        ),
        (SOURCE, "wallet.autopay_failed")
    );
    let body: Value = serde_json::from_slice(&hit.body).expect("JSON");
    assert_eq!(body["id"], event.id().as_str());
    assert_eq!(body["data"]["code"], "insufficient_funds");
    assert_eq!(body["data"]["tenant"], "acme");
    assert_eq!(body["data"]["try"], 1);
    assert_eq!(
        verify_with_library(hit, &[d.secrets[0].secret.expose()]),
        vec!["ok"]
    );
    let done = rig
        .store()
        .delivery(&delivery_of("crm", &event))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((done.status, done.attempts), (DeliveryStatus::Delivered, 1));

    // Nothing is left to find: past every deadline, the reaper has nothing due (no stale entry of
    // the open index) and the sweep nothing to deliver.
    let later = Arc::new(ManualClock::at_millis(now + PENDING_GRACE_MS + 3_600_000));
    let report = rig
        .pipeline
        .reaper(later.clone(), 100)
        .await
        .run()
        .await
        .unwrap();
    assert_eq!((report.due, report.redriven), (0, 0), "{report:?}");
    let sweep = rig.deliverer(later, config()).await;
    assert!(sweep.deliver_due(100).await.unwrap().is_empty());
    assert_eq!(crm.count(), 1, "delivered exactly once");

    // The next try's failure is a new event: delivered too.
    publish(&rig, &failed_try(2), now + 3_000).await;
    let (response, _) = processor
        .handle_stream_batch(rig.pipeline.read_stream().await)
        .await;
    assert!(response.batch_item_failures.is_empty());
    deliver_new(&rig, &worker).await;
    assert_eq!((crm.count(), others.count()), (2, 0));
    assert_ne!(
        crm.hits()[1].header("webhook-id"),
        crm.hits()[0].header("webhook-id")
    );
}

#[tokio::test]
async fn a_wallet_event_the_stream_never_delivered_is_found_by_the_reaper_and_delivered() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    rig.destination("crm", &crm.url, &["wallet:*"], |_| {})
        .await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let event = failed_try(3);
    publish(&rig, &event, clock.now_millis()).await;
    // Its stream record is never consumed (the mapping was down past the stream's retention).
    let _lost = rig.pipeline.read_stream().await;
    let processor = deployed_processor(&rig, clock.clone()).await;
    let reaper = rig.pipeline.reaper(clock.clone(), 100).await;
    assert_eq!(reaper.run().await.unwrap().due, 0, "within its grace");
    clock.advance_millis(PENDING_GRACE_MS + 1);
    let report = reaper.run().await.unwrap();
    assert_eq!(report.by_status.get("pending"), Some(&1), "{report:?}");
    assert_eq!(rig.pipeline.drain_retry_once(&processor).await, 1);
    let message = rig.pipeline.message_of(SOURCE, &event.id()).await;
    assert_eq!(message.status, Status::Ignored);
    let worker = rig.deliverer(SystemClock, config()).await;
    deliver_new(&rig, &worker).await;
    assert_eq!(crm.count(), 1);
    assert_eq!(
        crm.hits()[0].header("webhook-event-type"),
        "wallet.autopay_failed"
    );
}

/// For each `stripe` event: a change (a counter) and the publication of the same wallet event (one
/// per wallet and month), committed with the message's transition, as the ledger's handlers do.
struct PublishesMonthly;

fn limit_reached() -> WalletEvent {
    let usd = wallet_ledger::Currency::parse("usd").expect("usd");
    WalletEvent::LimitReached {
        tenant: TenantId::parse("acme").expect("tenant"),
        month: "2027_01".into(),
        wanted: usd.amount(4_000),
        charged: usd.amount(9_000),
        cap: usd.amount(10_000),
    }
}

impl Handler for PublishesMonthly {
    fn name(&self) -> &str {
        "publishes-monthly"
    }

    fn handle<'a>(&'a self, m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            let publish = match limit_reached().publish(Millis::new(m.received_at)) {
                Ok(e) => e,
                Err(e) => return HandlerOutcome::Permanent(e.to_string()),
            };
            HandlerOutcome::commit(vec![count("refusals"), publish])
        })
    }
}

#[tokio::test]
async fn a_handler_publishing_an_event_that_exists_commits_its_change_and_leaves_the_event_alone() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    rig.destination(
        "crm",
        &crm.url,
        &["wallet:wallet.autopay_limit_reached"],
        |_| {},
    )
    .await;
    let registry = process_function::registry(rig.store(), WalletSources::default()).on(
        "stripe",
        TYPE,
        Arc::new(PublishesMonthly),
    );
    let processor = rig.processor(registry, SystemClock).await;
    let event = limit_reached();

    // The first refusal of the month publishes the event; the processor ignores it.
    rig.ingest_and_process(&processor, "evt_refused_1", TYPE)
        .await;
    let (response, _) = processor
        .handle_stream_batch(rig.pipeline.read_stream().await)
        .await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        rig.pipeline.message_of(SOURCE, &event.id()).await.status,
        Status::Ignored
    );
    let before = raw_message(&rig, &event).await;

    // The second refusal of the month: its transition commits with its change, and the event,
    // which exists, is left as it is (no conflict, so no retry of the handler).
    rig.ingest_and_process(&processor, "evt_refused_2", TYPE)
        .await;
    let second = rig.pipeline.message("evt_refused_2").await;
    assert_eq!(
        (second.status, second.attempts),
        (Status::Processed, 1),
        "{:?}",
        second.history
    );
    assert_eq!(counted(&rig, "refusals").await, 2);
    assert_eq!(
        raw_message(&rig, &event).await,
        before,
        "the event is untouched"
    );

    // (Its delivery's stream record went by with the stripe messages': the sweep sends it.)
    let worker = rig.deliverer(SystemClock, config()).await;
    assert_eq!(worker.deliver_due(100).await.unwrap().len(), 1);
    assert!(worker.deliver_due(100).await.unwrap().is_empty());
    assert_eq!(crm.count(), 1, "one event of the month, delivered once");
}
