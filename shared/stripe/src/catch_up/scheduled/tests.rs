use super::*;
use crate::catch_up::window::{Checkpoint, Start, OVERLAP_SECS, SETTLE_SECS};
use crate::script::{answer, fast, rig};
use inbox_core::clock::ManualClock;
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

fn event(id: &str, created: i64) -> Value {
    json!({"id": id, "object": "event", "type": "payment_intent.succeeded", "created": created,
        "livemode": false, "data": {"object": {"id": format!("pi_{id}")}}})
}

fn page(events: Vec<Value>) -> Value {
    json!({"object": "list", "data": events, "has_more": false, "url": "/v1/events"})
}

async fn stored(ing: &Ingestor<MemoryInbox, ManualClock>) -> Checkpoint {
    checkpoint::load(ing.store(), "stripe")
        .await
        .unwrap()
        .checkpoint
}

fn metric(run: &Run, name: &str) -> i64 {
    run.metrics().iter().find(|m| m.name == name).unwrap().value
}

#[tokio::test]
async fn a_run_stores_what_is_missing_leaves_the_too_recent_and_advances_the_checkpoint() {
    let ing = ingestor();
    let clock = ManualClock::at_secs(NOW);
    // Newest first: one too recent (its webhook may be on its way), two settled.
    let answers = vec![answer(
        200,
        page(vec![
            event("evt_young", NOW - 60),
            event("evt_2", NOW - 3600),
            event("evt_1", NOW - 7200),
        ]),
    )];
    let r = rig(answers, fast(), StripeEvents::on);
    let scheduled = Scheduled {
        events: r.it,
        ingestor: ing,
        types: vec!["payment_intent.succeeded".into()],
        source: "stripe".into(),
        key_livemode: Some(false),
    };
    let run = scheduled.run(&clock, None).await.unwrap();
    assert_eq!(run.window.start, Start::First);
    assert_eq!((run.report.new_events(), run.report.too_recent), (2, 1));
    assert!(run.failed.is_none() && run.checkpoint_written);
    assert_eq!(
        (metric(&run, CAUGHT_UP), metric(&run, "AlreadyHad")),
        (2, 0)
    );
    assert_eq!(metric(&run, "StripeRequests"), 1);
    let ing = &scheduled.ingestor;
    assert_eq!(ing.store().message_count(), 2);
    let sent = r.script.sent.lock().unwrap().clone();
    assert!(
        sent[0]
            .0
            .path
            .contains(&format!("created%5Bgte%5D={}", NOW - 72 * 3600)),
        "{}",
        sent[0].0.path
    );
    assert_eq!(
        stored(ing).await,
        Checkpoint {
            covered_until: Some(NOW - SETTLE_SECS),
            resume_from: None
        }
    );
}

#[tokio::test]
async fn a_run_cut_short_by_its_deadline_resumes_next_time_and_stores_nothing_twice() {
    let clock = ManualClock::at_secs(NOW);
    let events = vec![
        event("evt_3", NOW - 1800),
        event("evt_2", NOW - 3600),
        event("evt_1", NOW - 7200),
    ];
    let answers = vec![
        answer(200, page(events.clone())),
        answer(200, page(events[..2].to_vec())),
    ];
    let r = rig(answers, fast(), StripeEvents::on);
    let scheduled = Scheduled {
        events: r.it,
        ingestor: ingestor(),
        types: vec!["payment_intent.succeeded".into()],
        source: "stripe".into(),
        key_livemode: Some(false),
    };
    let ing = &scheduled.ingestor;
    // A checkpoint of an earlier completed run.
    let earlier = Checkpoint {
        covered_until: Some(NOW - 3 * 3600),
        resume_from: None,
    };
    checkpoint::save(ing.store(), "stripe", &Stored::default(), &earlier, 0)
        .await
        .unwrap();
    // The deadline is already inside the stop margin: nothing is decided.
    let run = scheduled
        .run(&clock, Some(NOW * 1000 + STOP_BEFORE_DEADLINE_MS - 1))
        .await
        .unwrap();
    assert_eq!(run.window.created_gte, NOW - 3 * 3600 - OVERLAP_SECS);
    assert_eq!(run.report.left_from, Some(NOW - 7200));
    assert_eq!(
        (run.report.new_events(), metric(&run, "LeftForNextRun")),
        (0, 1)
    );
    assert_eq!(
        stored(ing).await,
        Checkpoint {
            covered_until: earlier.covered_until,
            resume_from: Some(NOW - 7200)
        }
    );
    // The next run resumes there, with time to finish.
    clock.advance_millis(900_000);
    let next = scheduled.run(&clock, None).await.unwrap();
    assert_eq!(
        (next.window.created_gte, next.window.start),
        (NOW - 7200, Start::Resume)
    );
    assert_eq!(next.report.new_events(), 2);
    assert_eq!(
        stored(ing).await,
        Checkpoint {
            covered_until: Some(NOW + 900 - SETTLE_SECS),
            resume_from: None
        }
    );
    assert_eq!(ing.store().message_count(), 2);
}

#[tokio::test]
async fn a_failed_listing_keeps_the_checkpoint_and_says_why() {
    let clock = ManualClock::at_secs(NOW);
    let answers = vec![answer(
        401,
        json!({"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}}),
    )];
    let r = rig(answers, fast(), StripeEvents::on);
    let scheduled = Scheduled {
        events: r.it,
        ingestor: ingestor(),
        types: vec!["payment_intent.succeeded".into()],
        source: "stripe".into(),
        key_livemode: Some(false),
    };
    let run = scheduled.run(&clock, None).await.unwrap();
    assert!(
        run.failed.as_deref().unwrap().contains("401"),
        "{:?}",
        run.failed
    );
    assert!(!run.checkpoint_written);
    assert_eq!(stored(&scheduled.ingestor).await, Checkpoint::default());
}
