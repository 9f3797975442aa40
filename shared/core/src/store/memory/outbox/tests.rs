//! The in-memory outbox's conditions, which the worker's unit tests rely on being DynamoDB's.

use super::*;
use crate::domain::{EventId, SourceName};
use crate::outbox::delivery::DeliveryStatus;
use crate::outbox::destination::did;
use crate::outbox::schema::{done_shard, outbox_shard};

const M: fn(i64) -> Millis = Millis::new;

fn key(id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse("stripe").unwrap(),
        EventId::parse(id).unwrap(),
    )
}

#[tokio::test]
async fn deliveries_are_saved_on_their_version_and_ensured_without_overwriting() {
    let store = MemoryStore::new();
    let mut d = OutboundDelivery::new(&did("crm"), &key("evt_1"), None, 1_000);
    assert_eq!(store.save_delivery(&d, None).await.unwrap(), Applied::Done);
    assert_eq!(
        store.save_delivery(&d, None).await.unwrap(),
        Applied::MessageConflict,
        "created once"
    );
    d.attempts = 1;
    assert_eq!(
        store.save_delivery(&d, Some(1)).await.unwrap(),
        Applied::MessageConflict
    );
    assert_eq!(
        store.save_delivery(&d, Some(0)).await.unwrap(),
        Applied::Done
    );
    let read = store.delivery(&d.reference()).await.unwrap().unwrap();
    assert_eq!((read.version, read.attempts), (1, 1));

    // An `Ensure` of a new delivery changes nothing of the existing one.
    let fresh = OutboundDelivery::new(&did("crm"), &key("evt_1"), None, 9_000);
    store.ensure_delivery(&fresh).await.unwrap();
    assert_eq!(store.delivery(&d.reference()).await.unwrap(), Some(read));
    let other = OutboundDelivery::new(&did("crm"), &key("evt_2"), None, 9_000);
    store.ensure_delivery(&other).await.unwrap();
    assert_eq!(
        store
            .delivery(&other.reference())
            .await
            .unwrap()
            .map(|d| d.created_at),
        Some(9_000)
    );
    assert_eq!(store.all_deliveries().await.unwrap().len(), 2);
}

#[tokio::test]
async fn due_work_is_per_shard_oldest_first_and_bounded() {
    let store = MemoryStore::new();
    let mut shard = None;
    let mut saved = 0;
    for (i, created) in [(0, 3_000), (1, 1_000), (2, 2_000), (3, 9_000)] {
        let d = OutboundDelivery::new(&did("crm"), &key(&format!("evt_{i}")), None, created);
        store.save_delivery(&d, None).await.unwrap();
        saved += 1;
        shard.get_or_insert_with(|| outbox_shard(&d.reference().pk()));
    }
    assert_eq!(saved, 4);
    let shard = shard.unwrap();
    let mut all = Vec::new();
    for s in crate::outbox::schema::outbox_shards() {
        all.extend(store.due_work_items(&s, M(5_000), 10).await.unwrap());
    }
    let mut dues: Vec<i64> = all.iter().map(|d| d.due.get()).collect();
    dues.sort_unstable();
    assert_eq!(dues, [1_000, 2_000, 3_000], "not the one due later");
    let one = store.due_work_items(&shard, M(5_000), 1).await.unwrap();
    assert!(one.len() <= 1);
    let items = store.due_work_items(&shard, M(5_000), 10).await.unwrap();
    assert!(items.windows(2).all(|w| w[0].due <= w[1].due));
    assert!(items
        .iter()
        .all(|d| d.sk == DELIVERY_SK && d.source == "stripe"));

    let mut done = OutboundDelivery::new(&did("crm"), &key("evt_1"), None, 1_000);
    done.status = DeliveryStatus::Delivered;
    done.delivered_at = Some(1_500);
    store.save_delivery(&done, Some(0)).await.unwrap();
    let mut after = Vec::new();
    for s in crate::outbox::schema::outbox_shards() {
        after.extend(store.due_work_items(&s, M(5_000), 10).await.unwrap());
    }
    assert_eq!(after.len(), 2, "a delivered one leaves the swept shards");
}

#[tokio::test]
async fn tokens_are_conditional_on_the_stored_tat() {
    let store = MemoryStore::new();
    let granted = store
        .take_token(
            &did("crm"),
            Take::Reset {
                now: 10,
                new_tat: 20,
            },
        )
        .await
        .unwrap();
    assert!(matches!(granted, TokenAnswer::Granted(s) if s.tat_us == Some(20)));
    assert_eq!(
        store
            .take_token(
                &did("crm"),
                Take::Reset {
                    now: 10,
                    new_tat: 20
                }
            )
            .await
            .unwrap(),
        TokenAnswer::Refused(Some(20)),
        "another worker took it: the stored tat comes back"
    );
    let advanced = store
        .take_token(
            &did("crm"),
            Take::Advance {
                now: 10,
                at_most: 25,
                by: 10,
            },
        )
        .await
        .unwrap();
    assert!(matches!(advanced, TokenAnswer::Granted(s) if s.tat_us == Some(30)));
    assert_eq!(
        store
            .take_token(&did("crm"), Take::Wait(std::time::Duration::from_secs(1)))
            .await
            .unwrap(),
        TokenAnswer::Refused(None),
        "a wait sends no request"
    );
    assert_eq!(
        store.worker_state(&did("crm")).await.unwrap().tat_us,
        Some(30)
    );
}

#[tokio::test]
async fn the_circuit_counts_opens_once_lets_its_probes_through_and_closes() {
    let store = MemoryStore::new();
    assert_eq!(
        store
            .change_circuit(&did("crm"), Change::None, M(1))
            .await
            .unwrap(),
        None
    );
    assert!(
        !store
            .claim_probe(&did("crm"), M(5), M(100), M(10))
            .await
            .unwrap(),
        "nothing to probe: no state"
    );
    let count = |up, bucket| Change::Count {
        up,
        probe: false,
        bucket,
        roll: false,
        reopen: None,
    };
    store
        .change_circuit(&did("crm"), count(false, 7), M(1))
        .await
        .unwrap();
    store
        .change_circuit(&did("crm"), count(true, 7), M(2))
        .await
        .unwrap();
    let c = store
        .change_circuit(&did("crm"), count(false, 8), M(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (c.failures, c.failing_since, c.opened_at),
        (1, Some(3), None),
        "the success ended the first run"
    );
    let [w0, w1] = c
        .window
        .slots
        .map(|b| b.map(|b| (b.at, b.requests, b.failures)));
    assert_eq!((w0, w1), (Some((8, 1, 1)), Some((7, 2, 1))));
    // Bucket 9 rolls slot 1 over (bucket 7 is forgotten).
    let c = store
        .change_circuit(&did("crm"), count(false, 9), M(4))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.window.slots[1].map(|b| (b.at, b.requests)), Some((9, 1)));

    assert!(store
        .move_circuit(&did("crm"), Move::Open, M(5))
        .await
        .unwrap());
    assert!(
        !store
            .move_circuit(&did("crm"), Move::Open, M(6))
            .await
            .unwrap(),
        "once"
    );
    assert_eq!(store.circuit_openings(), 1);

    let crm = did("crm");
    let claim = |opened, until, now| store.claim_probe(&crm, M(opened), M(until), M(now));
    assert!(!claim(4, 100, 10).await.unwrap(), "another opening");
    assert!(claim(5, 100, 10).await.unwrap(), "the first");
    assert!(!claim(5, 110, 20).await.unwrap(), "one out");
    let probe = |up| Change::Count {
        up,
        probe: true,
        bucket: 9,
        roll: false,
        reopen: None,
    };
    let c = store
        .change_circuit(&did("crm"), probe(true), M(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (c.probes, c.probes_up, c.probe_until),
        (1, 1, None),
        "up: the lease is free"
    );
    assert!(claim(5, 200, 40).await.unwrap(), "the next");
    assert!(!claim(5, 300, 199).await.unwrap(), "out");
    assert!(claim(5, 300, 200).await.unwrap(), "its lease lapsed");
    let c = store
        .change_circuit(&did("crm"), probe(false), M(220))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((c.probes, c.probes_down, c.probe_until), (3, 1, Some(300)));

    assert!(
        !store
            .move_circuit(&did("crm"), Move::Reopen { from: 4 }, M(400))
            .await
            .unwrap(),
        "not that opening"
    );
    assert!(store
        .move_circuit(&did("crm"), Move::Reopen { from: 5 }, M(400))
        .await
        .unwrap());
    let c = store.worker_state(&did("crm")).await.unwrap().circuit;
    assert_eq!(
        (c.opened_at, c.probes, c.probes_down, c.probe_until),
        (Some(400), 0, 0, None)
    );
    assert_eq!(store.circuit_openings(), 2);
    assert!(store
        .move_circuit(&did("crm"), Move::Close { from: 400 }, M(500))
        .await
        .unwrap());
    let c = store.worker_state(&did("crm")).await.unwrap().circuit;
    assert_eq!(
        Circuit {
            failures: 0,
            failing_since: None,
            ..c
        },
        Circuit::default(),
        "closed: the probes and the window forgotten"
    );
    assert_eq!(
        c.failing_since,
        Some(220),
        "the run of failures is the counts' business"
    );
}

#[tokio::test]
async fn fanouts_are_read_and_closed() {
    let store = MemoryStore::new();
    let f = FanoutItem {
        source: key("evt_1").source,
        event_id: key("evt_1").event_id,
        event_type: None,
        destinations: vec![did("a")],
        created_at: 1_000,
        expanded_at: None,
    };
    assert_eq!(store.fanout(&f.key()).await.unwrap(), None);
    store.put_item(f.to_item().unwrap());
    assert_eq!(store.fanout(&f.key()).await.unwrap(), Some(f.clone()));
    store.close_fanout(&f, M(2_000), M(99_999)).await.unwrap();
    let closed = store.fanout(&f.key()).await.unwrap().unwrap();
    assert_eq!(closed.expanded_at, Some(2_000));
    let item = store.item(&fanout_pk(&f.key()), FANOUT_SK).unwrap();
    assert_eq!(
        get_s(&item, OPEN_SHARD),
        Some(done_shard(&fanout_pk(&f.key())).as_str())
    );
    assert_eq!(get_n(&item, EXPIRES_AT), Some(99));
}
