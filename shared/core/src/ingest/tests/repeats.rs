//! Repeated deliveries: counted, the first ten journaled, within a time budget, under contention.

use super::*;
use crate::clock::Millis;
use crate::store::{NewMessage, PutOutcome, RepeatCount, MAX_JOURNALED_REPEATS};
use std::sync::Arc;

#[tokio::test]
async fn only_the_first_ten_repeats_are_journaled_the_rest_counted() {
    let ing = ingestor(1024);
    let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
    let first = post(&ing, "stripe", &headers, EVENT).await.unwrap();
    assert_eq!(ing.store().write_requests(), 1, "a new event: one write");
    let mut numbers = Vec::new();
    for _ in 0..25 {
        let ack = post(&ing, "stripe", &headers, EVENT).await.unwrap();
        assert_eq!(ack.outcome, Outcome::Duplicate);
        numbers.push(ack.repeated.unwrap());
    }
    assert_eq!(numbers, (1..=25).collect::<Vec<u64>>());
    assert_eq!(
        ing.store().journal().len() as u64,
        MAX_JOURNALED_REPEATS,
        "the journal stops at ten"
    );
    assert_eq!(ing.store().delivery_counter(&first.key), Some(25));
    assert_eq!(
        crate::store::MessageStore::repeat_count(ing.store(), &first.key)
            .await
            .unwrap(),
        25
    );
    // Writes: 1 (new) + per repeat: the failed insert, the counter (the first try finds no
    // counter; every later repeat's first try finds one and the second counts), and the journal
    // record for the first ten only.
    let writes = ing.store().write_requests();
    assert_eq!(writes, 1 + 25 + (1 + 24 * 2) + 10, "{writes}");
}

#[tokio::test]
async fn a_counter_moved_by_another_delivery_is_retried_with_its_value() {
    let ing = ingestor(1024);
    let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
    let first = post(&ing, "stripe", &headers, EVENT).await.unwrap();
    post(&ing, "stripe", &headers, EVENT).await.unwrap();
    // Six other deliveries counted concurrently (by other containers).
    ing.store().set_delivery_counter(&first.key, 7);
    let ack = post(&ing, "stripe", &headers, EVENT).await.unwrap();
    assert_eq!(ack.repeated, Some(8));
    assert_eq!(ing.store().journal().len(), 2);
    ing.store().set_delivery_counter(&first.key, 10);
    let ack = post(&ing, "stripe", &headers, EVENT).await.unwrap();
    assert_eq!(ack.repeated, Some(11));
    assert_eq!(ing.store().journal().len(), 2, "past ten: counted only");
}

/// An inbox whose every request takes `step_ms` on the shared manual clock.
struct Slow {
    inner: MemoryInbox,
    clock: Arc<ManualClock>,
    step_ms: i64,
}

impl Inbox for Slow {
    async fn put_if_absent(
        &self,
        msg: &NewMessage,
    ) -> Result<PutOutcome, crate::store::StoreError> {
        self.clock.advance_millis(self.step_ms);
        self.inner.put_if_absent(msg).await
    }

    async fn journal_repeat(
        &self,
        delivery: &crate::store::Repeat,
    ) -> Result<(), crate::store::StoreError> {
        self.clock.advance_millis(self.step_ms);
        self.inner.journal_repeat(delivery).await
    }

    async fn count_repeat(
        &self,
        key: &MessageKey,
        expected: Option<u64>,
        at: Millis,
        expires_at: Millis,
    ) -> Result<RepeatCount, crate::store::StoreError> {
        self.clock.advance_millis(self.step_ms);
        self.inner.count_repeat(key, expected, at, expires_at).await
    }
}

fn slow_ingestor(step_ms: i64) -> Ingestor<Slow, Arc<ManualClock>> {
    let secrets = parse_secrets(r#"{"stripe":["whsec_test"]}"#, "WEBHOOK_SECRETS").unwrap();
    let sources = Sources::from_json(r#"{"stripe":{"scheme":"stripe"}}"#, &secrets).unwrap();
    let clock = Arc::new(ManualClock::at_secs(NOW));
    let store = Slow {
        inner: MemoryInbox::new(),
        clock: clock.clone(),
        step_ms,
    };
    Ingestor::new(sources, store, clock, 1024, 30)
}

#[tokio::test]
async fn a_slow_store_ends_the_bookkeeping_not_the_answer() {
    let sign = |ing: &Ingestor<Slow, Arc<ManualClock>>| {
        let sources = ing.sources();
        let signed = sources
            .get("stripe")
            .unwrap()
            .scheme
            .sign(&crate::signature::Unsigned::new(EVENT.as_bytes(), NOW, ""))
            .unwrap();
        signed.header_map()
    };
    // Each store request takes 1.1 s: the counter starts within the 2 s budget (at 1.1 s), the
    // journal record (at 2.2 s) does not.
    let ing = slow_ingestor(1_100);
    let headers = sign(&ing);
    ing.ingest(request(&headers)).await.unwrap();
    ing.store().clock.set_millis(NOW * 1000);
    let ack = ing.ingest(request(&headers)).await.unwrap();
    assert_eq!(ack.outcome, Outcome::Duplicate, "answered all the same");
    assert_eq!(ack.repeated, Some(1), "counted");
    assert!(
        ing.store().inner.journal().is_empty(),
        "no record started after 2 s"
    );
    // A store so slow that the insert alone takes the budget: not even counted.
    let ing = slow_ingestor(2_001);
    let headers = sign(&ing);
    ing.ingest(request(&headers)).await.unwrap();
    ing.store().clock.set_millis(NOW * 1000);
    let ack = ing.ingest(request(&headers)).await.unwrap();
    assert_eq!((ack.outcome, ack.repeated), (Outcome::Duplicate, None));
    assert_eq!(
        ing.store().inner.write_requests(),
        2,
        "the two inserts only"
    );
}

fn request(headers: &HeaderMap) -> IngestRequest<'_> {
    IngestRequest {
        source_ip: None,
        method: "POST",
        source: "stripe",
        headers,
        body: Some(EVENT),
        body_is_base64: false,
    }
}
