use super::*;
use crate::script::{answer, fast, rig};
use inbox_core::clock::ManualClock;
use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::ingest::ORIGIN_HEADER;
use inbox_core::sources::{parse_secrets, Sources};
use inbox_core::store::memory::MemoryInbox;
use serde_json::{json, Value};

const NOW: i64 = 1_800_000_000;

fn ingestor() -> Ingestor<MemoryInbox, ManualClock> {
    let secrets = parse_secrets(r#"{"stripe":["whsec_test"]}"#, "WEBHOOK_SECRETS").unwrap();
    let sources = Sources::from_json(r#"{"stripe":{"scheme":"stripe"}}"#, &secrets).unwrap();
    Ingestor::new(
        sources,
        MemoryInbox::new(),
        ManualClock::at_secs(NOW),
        64 * 1024,
        30,
    )
}

fn request(dry_run: bool) -> CatchUpRequest {
    CatchUpRequest {
        query: EventQuery {
            types: vec!["payment_intent.succeeded".into()],
            created_gte: NOW - 72 * 3600,
            created_lte: None,
            delivery_success: None,
        },
        source: "stripe".into(),
        key_livemode: Some(false),
        dry_run,
        origin: Origin {
            how: "catch-up",
            operator: "alice".into(),
            at_ms: NOW * 1000,
        },
    }
}

fn event(id: &str, created: i64) -> Value {
    json!({"id": id, "object": "event", "type": "payment_intent.succeeded", "created": created,
        "livemode": false, "data": {"object": {"id": format!("pi_{id}")}}})
}

fn key(id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse("stripe").unwrap(),
        EventId::parse(id).unwrap(),
    )
}

fn page(events: Vec<Value>, has_more: bool) -> Value {
    json!({"object": "list", "data": events, "has_more": has_more, "url": "/v1/events"})
}

#[tokio::test]
async fn what_the_inbox_lacks_is_stored_once_oldest_first_the_rest_untouched() {
    let ing = ingestor();
    // evt_2 came by webhook.
    ing.store_fetched(
        "stripe",
        event("evt_2", NOW - 20).to_string().into_bytes(),
        &Origin {
            how: "webhook-stand-in",
            operator: "-".into(),
            at_ms: 0,
        },
    )
    .await
    .unwrap();
    let writes = ing.store().write_requests();
    let mut other_mode = event("evt_live", NOW - 5);
    other_mode["livemode"] = json!(true);
    let mut connect = event("evt_acct", NOW - 4);
    connect["account"] = json!("acct_9");
    let answers = vec![
        answer(
            200,
            page(vec![connect, other_mode, event("evt_3", NOW - 10)], true),
        ),
        answer(
            200,
            page(
                vec![event("evt_2", NOW - 20), event("evt_1", NOW - 30)],
                false,
            ),
        ),
    ];
    let r = rig(answers, fast(), StripeEvents::on);
    let mut pages = Vec::new();
    let report = catch_up(&r.it, &ing, &request(false), |n| pages.push(n))
        .await
        .unwrap();
    assert_eq!(pages, [3, 5]);
    let verdicts: Vec<(&str, &Verdict)> = report
        .events
        .iter()
        .map(|e| (e.id.as_str(), &e.verdict))
        .collect();
    assert_eq!(
        verdicts[..3],
        [
            ("evt_1", &Verdict::New),
            ("evt_2", &Verdict::AlreadyHad),
            ("evt_3", &Verdict::New),
        ]
    );
    assert!(
        matches!(verdicts[3], ("evt_live", Verdict::Refused(r)) if r.contains("live mode event"))
    );
    assert!(matches!(verdicts[4], ("evt_acct", Verdict::Refused(r)) if r.contains("acct_9")));
    assert_eq!(
        (report.new_events(), report.already_had(), report.refused()),
        (2, 1, 2)
    );
    assert_eq!(report.missing_between(), Some((NOW - 30, NOW - 10)));
    assert_eq!(
        report.missing_by_type().into_iter().collect::<Vec<_>>(),
        [("payment_intent.succeeded", 2)]
    );
    assert_eq!(report.requests, 2);
    // Three conditional puts (one refused by its condition), nothing for the refused events.
    assert_eq!(ing.store().write_requests(), writes + 3);
    assert_eq!(ing.store().message_count(), 3);
    let stored = ing.store().message(&key("evt_1")).unwrap();
    assert!(stored.headers[ORIGIN_HEADER].starts_with("catch-up; operator=alice; at="));
    assert!(ing.store().message(&key("evt_live")).is_none());

    // Run again: everything is had, nothing new.
    let again = vec![answer(
        200,
        page(
            vec![
                event("evt_3", NOW - 10),
                event("evt_2", NOW - 20),
                event("evt_1", NOW - 30),
            ],
            false,
        ),
    )];
    let r = rig(again, fast(), StripeEvents::on);
    let report = catch_up(&r.it, &ing, &request(false), |_| {})
        .await
        .unwrap();
    assert_eq!((report.new_events(), report.already_had()), (0, 3));
    assert_eq!(report.missing_between(), None);
    assert_eq!(ing.store().message_count(), 3);
}

#[tokio::test]
async fn a_dry_run_looks_and_writes_no_event() {
    let ing = ingestor();
    ing.store_fetched(
        "stripe",
        event("evt_2", NOW - 20).to_string().into_bytes(),
        &request(false).origin,
    )
    .await
    .unwrap();
    let writes = ing.store().write_requests();
    let answers = vec![answer(
        200,
        page(
            vec![event("evt_2", NOW - 20), event("evt_1", NOW - 30)],
            false,
        ),
    )];
    let r = rig(answers, fast(), StripeEvents::on);
    let report = catch_up(&r.it, &ing, &request(true), |_| {}).await.unwrap();
    assert_eq!((report.new_events(), report.already_had()), (1, 1));
    assert_eq!(ing.store().write_requests(), writes, "no write");
    assert!(ing.store().message(&key("evt_1")).is_none());
}

#[tokio::test]
async fn a_store_outage_stops_the_run_with_what_it_decided() {
    let ing = ingestor();
    let answers = vec![answer(200, page(vec![event("evt_1", NOW - 30)], false))];
    let r = rig(answers, fast(), StripeEvents::on);
    ing.store().set_down(true);
    match catch_up(&r.it, &ing, &request(false), |_| {}).await {
        Err(CatchUpError::Store { event, so_far, .. }) => {
            assert_eq!(event, "evt_1");
            assert!(so_far.events.is_empty());
        }
        other => panic!("expected the store's failure, got {other:?}"),
    }
    // A listing that fails: nothing stored.
    let r = rig(
        vec![answer(401, json!({"error": {"code": "x"}}))],
        fast(),
        StripeEvents::on,
    );
    ing.store().set_down(false);
    let out = catch_up(&r.it, &ing, &request(false), |_| {}).await;
    assert!(
        matches!(out, Err(CatchUpError::List(ListError::Refused { .. }))),
        "{out:?}"
    );
    assert_eq!(ing.store().message_count(), 0);
}

#[test]
fn an_event_names_the_payment_intent_it_is_about() {
    let intent = br#"{"id":"evt_1","data":{"object":{"id":"pi_1","object":"payment_intent"}}}"#;
    let charge = br#"{"id":"evt_2","data":{"object":{"id":"ch_1","payment_intent":"pi_2"}}}"#;
    let customer = br#"{"id":"evt_3","data":{"object":{"id":"cus_1"}}}"#;
    assert_eq!(intent_of(intent).as_deref(), Some("pi_1"));
    assert_eq!(intent_of(charge).as_deref(), Some("pi_2"));
    assert_eq!(intent_of(customer), None);
    assert_eq!(intent_of(b"not json"), None);
}
