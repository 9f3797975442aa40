//! The fan-out hook through the real processor on the in-memory store: deliveries are written
//! with the terminal transition, for matching active destinations only, never twice.

use super::*;
use crate::clock::ManualClock;
use crate::domain::{BodyDigest, EventId, EventType, MessageKey, SourceName};
use crate::outbox::delivery::DeliveryStatus;
use crate::outbox::destination::did;
use crate::outbox::destination::Destination;
use crate::outbox::pattern::Pattern;
use crate::outbox::schema::{delivery_pk, fanout_pk, DELIVERY_SK, FANOUT_SK};
use crate::process::registry::{Handler, HandlerFuture, HandlerOutcome, Registry};
use crate::process::{Outcome, Processor, ProcessorConfig};
use crate::queue::memory::{MemoryQuarantine, MemoryRetryQueue};
use crate::store::attr::get_s;
use crate::store::memory::MemoryStore;
use crate::store::{Inbox, MessageStore, NewMessage, MAX_EFFECTS};
use std::sync::Arc;
use std::time::Duration;

const T0: i64 = 1_700_000_000_000;

struct Writes(usize);

impl Handler for Writes {
    fn name(&self) -> &str {
        "writes"
    }
    fn handle<'a>(&'a self, m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            let effects = (0..self.0)
                .map(|i| {
                    Effect::Create(crate::store::Item::from([
                        (
                            "pk".to_string(),
                            crate::store::attr::s(format!("W#{}#{i}", m.event_id)),
                        ),
                        ("sk".to_string(), crate::store::attr::s("W")),
                    ]))
                })
                .collect();
            HandlerOutcome::commit(effects)
        })
    }
}

fn destination(id: &str, pattern: &str, state: DestinationState) -> Destination {
    let mut d = Destination::new(
        &did(id),
        "https://x.example/h",
        vec![Pattern::parse(pattern).unwrap()],
        None,
        T0,
    );
    d.state = state;
    d
}

struct Setup {
    store: Arc<MemoryStore>,
    processor: Processor<Arc<MemoryStore>, MemoryRetryQueue, MemoryQuarantine, Arc<ManualClock>>,
}

fn setup(destinations: &[Destination], handler_writes: usize) -> Setup {
    let store = Arc::new(MemoryStore::new());
    for d in destinations {
        store.put_item(d.to_item().unwrap());
    }
    let registry = Registry::new().on("stripe", "handled", Arc::new(Writes(handler_writes)));
    let outbox = Outbox::new(DestinationCache::new(store.clone(), Duration::from_secs(5)));
    let processor = Processor::new(
        store.clone(),
        MemoryRetryQueue::new(),
        MemoryQuarantine::new(),
        Arc::new(ManualClock::at_millis(T0)),
        registry,
        ProcessorConfig::default(),
    )
    .with_fanout(Arc::new(outbox));
    Setup { store, processor }
}

async fn ingest(store: &MemoryStore, id: &str, event_type: &str) -> MessageKey {
    let key = MessageKey::new(
        SourceName::parse("stripe").unwrap(),
        EventId::parse(id).unwrap(),
    );
    let body = br#"{"id":"x"}"#.to_vec();
    store
        .put_if_absent(&NewMessage {
            key: key.clone(),
            event_type: Some(EventType::parse(event_type).unwrap()),
            received_at_ms: T0,
            body_digest: Some(BodyDigest::of(&body)),
            body,
            headers: Vec::new(),
            provider_id: None,
            unidentified: None,
            batch: None,
        })
        .await
        .unwrap();
    key
}

fn delivery(store: &MemoryStore, dest: &str, key: &MessageKey) -> Option<OutboundDelivery> {
    store
        .item(&delivery_pk(dest, key), DELIVERY_SK)
        .map(|i| OutboundDelivery::from_item(i).unwrap())
}

#[tokio::test]
async fn processed_and_ignored_events_fan_out_to_matching_active_destinations_only() {
    let s = setup(
        &[
            destination("all", "*", DestinationState::Active),
            destination("stripe-handled", "stripe:handled", DestinationState::Active),
            destination("mailer", "mailer:*", DestinationState::Active),
            destination("paused", "*", DestinationState::Paused),
            destination("disabled", "*", DestinationState::Disabled),
        ],
        1,
    );
    let handled = ingest(&s.store, "evt_1", "handled").await;
    let m = s.store.message(&handled).unwrap();
    assert_eq!(s.processor.process(m).await.unwrap(), Outcome::Processed);
    let d = delivery(&s.store, "all", &handled).expect("the catch-all destination gets it");
    assert_eq!(
        (d.status, d.attempts, d.created_at),
        (DeliveryStatus::Pending, 0, T0)
    );
    assert_eq!(
        d.webhook_id,
        crate::outbox::schema::webhook_id("all", &handled)
    );
    assert!(delivery(&s.store, "stripe-handled", &handled).is_some());
    for none in ["mailer", "paused", "disabled"] {
        assert!(delivery(&s.store, none, &handled).is_none(), "{none}");
    }
    // An event without a handler (ignored) is delivered too.
    let ignored = ingest(&s.store, "evt_2", "nobody.handles.this").await;
    let m = s.store.message(&ignored).unwrap();
    assert_eq!(s.processor.process(m).await.unwrap(), Outcome::Ignored);
    assert!(delivery(&s.store, "all", &ignored).is_some());
    assert!(delivery(&s.store, "stripe-handled", &ignored).is_none());
}

#[tokio::test]
async fn a_replayed_message_adds_no_second_delivery_and_does_not_conflict() {
    let s = setup(&[destination("all", "*", DestinationState::Active)], 0);
    let key = ingest(&s.store, "evt_1", "handled").await;
    let m = s.store.message(&key).unwrap();
    assert_eq!(s.processor.process(m).await.unwrap(), Outcome::Processed);
    // The delivery moves on (delivered), then the message is replayed and processed again.
    let mut d = delivery(&s.store, "all", &key).unwrap();
    d.status = DeliveryStatus::Delivered;
    d.delivered_at = Some(T0 + 5);
    s.store.put_item(d.to_item().unwrap());
    let retry = MemoryRetryQueue::new();
    let clock = ManualClock::at_millis(T0 + 10);
    let replayed = crate::ops::replay(&*s.store, &retry, &clock, &key, "ana", true)
        .await
        .unwrap();
    assert_eq!(replayed, crate::ops::ReplayOutcome::Replayed);
    let m = s.store.message(&key).unwrap();
    assert_eq!(
        s.processor.process(m).await.unwrap(),
        Outcome::Processed,
        "no conflict, no re-run"
    );
    let after = delivery(&s.store, "all", &key).unwrap();
    assert_eq!(
        after.status,
        DeliveryStatus::Delivered,
        "the existing delivery is untouched"
    );
    assert_eq!(after.delivered_at, Some(T0 + 5));
    assert_eq!(s.store.message(&key).unwrap().attempts, 1);
}

#[tokio::test]
async fn more_destinations_than_fit_become_one_fanout_item() {
    let many: Vec<Destination> = (0..(MAX_EFFECTS - 2))
        .map(|i| destination(&format!("d{i}"), "*", DestinationState::Active))
        .collect();
    // 97 destinations + 2 handler writes = 99: they fit inline.
    let s = setup(&many, 2);
    let key = ingest(&s.store, "evt_fit", "handled").await;
    s.processor
        .process(s.store.message(&key).unwrap())
        .await
        .unwrap();
    assert!(delivery(&s.store, "d96", &key).is_some());
    assert!(s.store.item(&fanout_pk(&key), FANOUT_SK).is_none());
    // 3 handler writes: one too many; a single fan-out item names all 97.
    let s = setup(&many, 3);
    let key = ingest(&s.store, "evt_over", "handled").await;
    assert_eq!(
        s.processor
            .process(s.store.message(&key).unwrap())
            .await
            .unwrap(),
        Outcome::Processed
    );
    assert!(delivery(&s.store, "d0", &key).is_none());
    let f = FanoutItem::from_item(
        s.store
            .item(&fanout_pk(&key), FANOUT_SK)
            .expect("a fan-out item"),
    )
    .unwrap();
    assert_eq!(f.destinations.len(), MAX_EFFECTS - 2);
    assert_eq!(f.expanded_at, None);
    let item = s.store.item(&fanout_pk(&key), FANOUT_SK).unwrap();
    assert!(
        get_s(&item, "open_shard").is_some(),
        "in the open index until expanded"
    );
}

#[tokio::test]
async fn no_room_at_all_is_a_permanent_failure_saying_so() {
    let s = setup(
        &[destination("all", "*", DestinationState::Active)],
        MAX_EFFECTS,
    );
    let key = ingest(&s.store, "evt_full", "handled").await;
    let outcome = s
        .processor
        .process(s.store.message(&key).unwrap())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Failed {
            attempts: 1,
            permanent: true
        }
    );
    let m = s.store.get(&key).await.unwrap().unwrap();
    assert!(
        m.last_error.unwrap().contains("no room"),
        "the reason is journaled"
    );
    // Without a matching destination the same handler commits as before.
    let s = setup(
        &[destination("mailer", "mailer:*", DestinationState::Active)],
        MAX_EFFECTS,
    );
    let key = ingest(&s.store, "evt_full", "handled").await;
    assert_eq!(
        s.processor
            .process(s.store.message(&key).unwrap())
            .await
            .unwrap(),
        Outcome::Processed
    );
}

#[test]
fn plan_is_pure() {
    let m = StoredMessage {
        source: SourceName::parse("stripe").unwrap(),
        event_id: EventId::parse("e").unwrap(),
        event_type: None,
        status: Status::Pending,
        received_at: 0,
        body: Vec::new(),
        body_sha256: String::new(),
        headers: Default::default(),
        attempts: 0,
        version: 0,
        lease_until: None,
        next_attempt_at: None,
        last_error: None,
        history: Vec::new(),
        expires_at: None,
        provider_id: None,
        identity_error: None,
        batch: None,
        history_total: 0,
        open_due: None,
        notice_pending: None,
    };
    assert!(
        plan(&m, Vec::new(), 0, 0).unwrap().is_empty(),
        "nothing matched: nothing to write, even with no room"
    );
    let two = plan(&m, vec![did("a"), did("b")], 2, 7).unwrap();
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|e| matches!(e, Effect::Ensure(_))));
    let one = plan(&m, vec![did("a"), did("b")], 1, 7).unwrap();
    assert!(matches!(&one[..], [Effect::Ensure(i)] if get_s(i, "sk") == Some(FANOUT_SK)));
    assert!(matches!(
        plan(&m, vec![did("a")], 0, 7),
        Err(FanoutError::NoRoom { .. })
    ));
}
