//! Hostile input and S3's conflict answer, through the ingest function's handler against the
//! emulators (a table of their own on the shared ones): each test records what it sent and what
//! it found (`docs/faults.md`).
//!
//! - A signed 6 MiB `[1,1,…]` on a batching source is refused whole (413 naming the limit),
//!   nothing stored; before, it became three million events.
//! - A Twilio resend with its parameters reordered and one repeated (the same signature, as
//!   Twilio's own `RequestValidator` confirms) is a duplicate of the first delivery, keyed on the
//!   hash of what the signature covers; before, a second event.
//! - SNS: messages naming a path that is not an SNS certificate name cause no fetch; a
//!   certificate SNS does not have, or cannot serve, costs one fetch for a flood of requests
//!   (401, resp. 503); before, one fetch and a 503 per request.
//! - The claim check's S3 put answered 409 `ConditionalRequestConflict` (another write of the
//!   same key under way) is tried again and the webhook acknowledged; before, 503.

use aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextMut;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use inbox_core::clock::SystemClock;
use inbox_core::ingest::Ingestor;
use inbox_core::signature::{FetchError, FetchFuture, Fetcher};
use inbox_core::store::dynamo::{DynamoTable, S3Bodies};
use inbox_core::store::schema::BODY_REF;
use integration_tests::faults::report::record;
use integration_tests::{
    api_event, body_bucket, endpoints, local_secret, local_sources_fetching, now_secs, run_python,
    stripe_event, unique, Harness, Reply,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const KEY: &str = "8-hostile";

// ------------------------------------------------------------------ batches

#[tokio::test]
async fn a_signed_six_mib_array_of_ones_is_refused_whole_and_stores_nothing() {
    let h = Harness::on(&endpoints(), inbox_core::config::DEFAULT_MAX_BODY_BYTES).await;
    let mut body = String::with_capacity(6 << 20);
    body.push('[');
    while body.len() < (6 << 20) - 8 {
        body.push_str("1,");
    }
    body.push_str("1]");
    let elements = body.matches('1').count();
    // SendGrid batches by default: its signature covers the whole array.
    let headers = h.sign("sendgrid", body.as_bytes(), "");
    let started = Instant::now();
    let r = h.post("sendgrid", &headers, &body).await;
    let took_ms = started.elapsed().as_millis();
    assert_eq!(
        (r.status, r.code()),
        (413, "too_many_events"),
        "{:?}",
        r.json
    );
    let message = r.json["message"].as_str().unwrap_or_default().to_owned();
    let limit = inbox_core::config::DEFAULT_MAX_BATCH_EVENTS.to_string();
    assert!(
        message.contains(&limit) && message.contains(&elements.to_string()),
        "the answer names the count and the limit: {message}"
    );
    let items = h.items().await.len();
    assert_eq!(items, 0, "nothing stored");
    // A batch within the limit on the same source is split as before.
    let batch = json!([
        {"email": "a@example.com", "event": "delivered", "sg_event_id": unique("sg-"), "timestamp": now_secs()},
        {"email": "b@example.com", "event": "open", "sg_event_id": unique("sg-"), "timestamp": now_secs()},
    ])
    .to_string();
    let r = h
        .post(
            "sendgrid",
            &h.sign("sendgrid", batch.as_bytes(), ""),
            &batch,
        )
        .await;
    assert_eq!((r.status, r.json["accepted"].as_u64()), (200, Some(2)));
    record(
        KEY,
        "a signed 6 MiB JSON array of ones on a batching source (SendGrid)",
        format!(
            "1 request, {elements} elements, signed with the source's key; limit \
             MAX_BATCH_EVENTS={limit}"
        ),
        format!(
            "answered {} `{}` in {took_ms} ms naming the count and the limit; items stored \
             {items} (before: 1 write per element, three million); a 2-event batch then \
             accepted 2",
            413, "too_many_events"
        ),
    );
}

// ------------------------------------------------------------------ Twilio

/// Signs `params` with Twilio's own `RequestValidator`; checks that the `resent` body (parsed
/// as a multi-valued form, as Django's `QueryDict` is) validates with that signature; and
/// writes out the parameters' signed string as Twilio documents it (names sorted, each name's
/// distinct values sorted, `name` + `value`), hashed.
const TWILIO: &str = r#"
import json, sys, hashlib
from urllib.parse import parse_qsl
from twilio.request_validator import RequestValidator
req = json.load(sys.stdin)
v = RequestValidator(req["secret"])
class Form:
    def __init__(self, pairs): self.pairs = pairs
    def __iter__(self): return iter(n for n, _ in self.pairs)
    def getlist(self, name): return [x for n, x in self.pairs if n == name]
first = Form(parse_qsl(req["body"], keep_blank_values=True))
resent = Form(parse_qsl(req["resent"], keep_blank_values=True))
sig = v.compute_signature(req["url"], first)
signed = "".join(n + x for n in sorted(set(first)) for x in sorted(set(first.getlist(n))))
print(json.dumps({
    "signature": sig,
    "resent_valid": v.validate(req["url"], resent, sig),
    "changed_valid": v.validate(req["url"], Form(parse_qsl(req["changed"])), sig),
    "sha256": hashlib.sha256(signed.encode("utf-8")).hexdigest(),
}))
"#;

#[tokio::test]
async fn a_twilio_resend_with_reordered_or_repeated_parameters_is_a_duplicate() {
    let h = Harness::new().await;
    let sid = unique("SM");
    let body = format!(
        "AccountSid=AC1&MessageSid={sid}&MessageStatus=delivered&To=%2B15558675310&Body=Gr%C3%BC%C3%9Fe+%E2%9C%93"
    );
    let resent = format!(
        "To=%2B15558675310&Body=Gr%C3%BC%C3%9Fe+%E2%9C%93&MessageStatus=delivered&MessageSid={sid}&AccountSid=AC1&MessageStatus=delivered"
    );
    let changed = body.replace("delivered", "undelivered");
    let out = run_python(
        TWILIO,
        &json!({"secret": local_secret("twilio"),
            "url": "http://127.0.0.1:9000/lambda-url/ingest/webhooks/twilio",
            "body": body, "resent": resent, "changed": changed}),
    );
    assert_eq!(
        (
            out["resent_valid"].as_bool(),
            out["changed_valid"].as_bool()
        ),
        (Some(true), Some(false)),
        "Twilio's library: the resend carries the same signature, a changed value does not: {out}"
    );
    let headers = vec![
        (
            "X-Twilio-Signature".to_owned(),
            out["signature"].as_str().unwrap().to_owned(),
        ),
        (
            "content-type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
    ];
    let first = h.post("twilio", &headers, &body).await;
    let again = h.post("twilio", &headers, &resent).await;
    assert_eq!((first.status, first.code()), (200, "accepted"), "{first:?}");
    assert_eq!(
        (again.status, again.code()),
        (200, "duplicate"),
        "{again:?}"
    );
    assert_eq!(first.json["id"], again.json["id"], "one event");
    assert_eq!(
        first.json["id"].as_str(),
        out["sha256"].as_str(),
        "the id is the SHA-256 of the signed parameters"
    );
    let messages = h.items_of_kind("message").await.len();
    assert_eq!(messages, 1);
    record(
        KEY,
        "a Twilio delivery resent with its parameters reordered and one repeated",
        "2 deliveries of one status callback signed by twilio's RequestValidator (9.13), the \
         second's 5 parameters reordered and `MessageStatus` given twice (the library validates \
         it with the same signature)"
            .into(),
        format!(
            "answers `{}`, `{}`, one id (the SHA-256 of the signed parameters, as the library's \
             algorithm builds them); messages stored {messages} (before: 2, keyed on the raw \
             body's hash)",
            first.code(),
            again.code()
        ),
    );
}

// ------------------------------------------------------------------ SNS certificates

/// Counts fetches by URL; answers as `answer` says.
#[derive(Debug)]
struct CountingFetcher {
    answer: Mutex<Result<Vec<u8>, FetchError>>,
    calls: Mutex<BTreeMap<String, usize>>,
}

impl CountingFetcher {
    fn total(&self) -> usize {
        self.calls.lock().unwrap().values().sum()
    }
}

impl Fetcher for CountingFetcher {
    fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a> {
        *self
            .calls
            .lock()
            .unwrap()
            .entry(url.to_owned())
            .or_default() += 1;
        let answer = self.answer.lock().unwrap().clone();
        Box::pin(async move { answer })
    }
}

/// How many requests of each kind were answered with each status.
type Answers = BTreeMap<String, BTreeMap<i64, usize>>;

/// Requests per kind of certificate URL.
const FLOOD: usize = 25;

/// Posts `body` to the SNS source [`FLOOD`] times, counting the answers under `label`.
async fn flood(
    h: &Harness,
    headers: &[(String, String)],
    answers: &mut Answers,
    label: &str,
    body: &str,
) {
    for _ in 0..FLOOD {
        let r = h.post("ses", headers, body).await;
        *answers
            .entry(label.to_owned())
            .or_default()
            .entry(r.status)
            .or_default() += 1;
    }
}

#[tokio::test]
async fn sns_certificate_urls_cost_at_most_one_fetch_a_minute_and_only_for_sns_names() {
    let counting = Arc::new(CountingFetcher {
        answer: Mutex::new(Err(FetchError::absent("the server has no such document"))),
        calls: Mutex::default(),
    });
    let fetcher: Arc<dyn Fetcher> = counting.clone();
    let h = Harness::with_sources(
        &endpoints(),
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        local_sources_fetching(Some(&fetcher)),
    )
    .await;
    // A message of the pinned topic, signed locally; only its certificate URL is changed (the
    // topic check passes, as it would for anyone who knows the topic's ARN).
    let event = json!({"eventType": "Delivery", "mail": {"messageId": unique("m-")}}).to_string();
    let (headers, signed) = h.sign_message("ses", event.as_bytes(), &unique(""), now_secs());
    let naming = |url: &str| {
        let mut m: Value = serde_json::from_str(&signed).unwrap();
        m["SigningCertURL"] = json!(url);
        m.to_string()
    };
    let mut answers: Answers = BTreeMap::new();
    // 1. Arbitrary paths on SNS's host: refused before any fetch.
    for path in ["x.pem", "a/b/c.pem", "SimpleNotificationService-zz.pem"] {
        let url = format!("https://sns.us-east-1.amazonaws.com/{path}");
        flood(&h, &headers, &mut answers, "arbitrary paths", &naming(&url)).await;
    }
    let after_paths = counting.total();
    // 2. An SNS certificate name SNS does not have: one fetch, then remembered; 401.
    let missing =
        "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123456789abcdef0123456789abcdef.pem";
    let label = "a certificate SNS does not have";
    flood(&h, &headers, &mut answers, label, &naming(missing)).await;
    let after_missing = counting.total();
    // 3. SNS unreachable for another name: one fetch, then remembered; 503 (SNS retries).
    *counting.answer.lock().unwrap() = Err(FetchError::new("the request timed out"));
    let unreachable =
        "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-fedcba9876543210fedcba9876543210.pem";
    flood(
        &h,
        &headers,
        &mut answers,
        "SNS unreachable",
        &naming(unreachable),
    )
    .await;
    let after_outage = counting.total();
    assert_eq!(
        after_paths, 0,
        "no fetch for a path that is no SNS certificate"
    );
    assert_eq!(after_missing, 1, "one fetch for {FLOOD} requests");
    assert_eq!(after_outage, 2, "one fetch for {FLOOD} requests");
    let expect = |label: &str, status: i64| {
        assert_eq!(
            answers[label].get(&status).copied().unwrap_or(0),
            if label == "arbitrary paths" {
                3 * FLOOD
            } else {
                FLOOD
            },
            "{label}: {answers:?}"
        );
    };
    expect("arbitrary paths", 401);
    expect("a certificate SNS does not have", 401);
    expect("SNS unreachable", 503);
    assert!(h.items().await.is_empty(), "nothing stored");
    record(
        KEY,
        "SNS messages of the pinned topic naming certificate URLs SNS never issued",
        format!(
            "{} requests naming 3 arbitrary paths on sns.us-east-1.amazonaws.com, {FLOOD} naming \
             an SNS certificate name SNS answers 404 for, {FLOOD} naming one while SNS is \
             unreachable",
            3 * FLOOD
        ),
        format!(
            "outbound fetches {after_paths}, {}, {} (before: one per request); answers \
             {answers:?} (before: 503 for all of them); stored 0",
            after_missing - after_paths,
            after_outage - after_missing
        ),
    );
}

// ------------------------------------------------------------------ S3's 409 on the claim check

/// Rewrites the answer of the next `conflicts` `PutObject` attempts into S3's 409
/// `ConditionalRequestConflict` (the write itself reached the emulator, as a concurrent writer's
/// would have); counts every attempt.
#[derive(Debug, Default)]
struct Conflicts {
    conflicts: AtomicUsize,
    injected: AtomicUsize,
    attempts: AtomicUsize,
}

const CONFLICT: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>ConditionalRequestConflict</Code><Message>A conflicting operation occurred. If using PutObject you can retry the request.</Message><RequestId>fault</RequestId></Error>";

#[derive(Debug, Clone)]
struct SharedConflicts(Arc<Conflicts>);

impl Intercept for SharedConflicts {
    fn name(&self) -> &'static str {
        "Conflicts"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if cfg.load::<Metadata>().map(Metadata::name) != Some("PutObject") {
            return Ok(());
        }
        self.0.attempts.fetch_add(1, Ordering::SeqCst);
        let take = self
            .0
            .conflicts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if take.is_ok() {
            let response = context.response_mut();
            *response.status_mut() = 409.try_into()?;
            *response.body_mut() = aws_sdk_s3::primitives::SdkBody::from(CONFLICT);
            self.0.injected.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_claim_check_put_answered_409_is_tried_again_and_acknowledged() {
    let endpoints = endpoints();
    let h = Harness::on(&endpoints, inbox_core::config::DEFAULT_MAX_BODY_BYTES).await;
    let (s3, bodies) = body_bucket(&endpoints, 8 * 1024).await;
    let conflicts = Arc::new(Conflicts::default());
    let client = aws_sdk_s3::Client::from_conf(
        s3.config()
            .to_builder()
            .interceptor(SharedConflicts(conflicts.clone()))
            .build(),
    );
    let bodies = S3Bodies::new(client, bodies.bucket(), 8 * 1024);
    let ingest = Ingestor::new(
        h.sources.clone(),
        DynamoTable::new(h.client.clone(), h.table.clone()).with_bodies(Some(bodies.clone())),
        SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    );
    let send = |body: String| {
        let headers = h.sign("stripe", body.as_bytes(), "");
        let ingest = &ingest;
        async move {
            let event = api_event("POST", "stripe", &headers, Some(&body), false);
            Reply::from(ingest_function::respond(ingest, &event).await)
        }
    };

    // 1. The first put answered 409 (another write of the key under way): tried again, S3 then
    //    answers 412 (the same bytes are there), the webhook is acknowledged.
    conflicts.conflicts.store(1, Ordering::SeqCst);
    let id = unique("evt_conflict_");
    let body = stripe_event(&id, "invoice.paid", 300 * 1024);
    let r = send(body.clone()).await;
    let attempts = conflicts.attempts.load(Ordering::SeqCst);
    assert_eq!(conflicts.injected.load(Ordering::SeqCst), 1, "injected");
    assert_eq!((r.status, r.code()), (200, "accepted"), "{:?}", r.json);
    assert_eq!(attempts, 2, "the conflicting put was tried once more");
    let item = h.items_of_kind("message").await;
    let key = item[0][BODY_REF].as_s().unwrap().clone();
    let stored = s3
        .get_object()
        .bucket(bodies.bucket())
        .key(&key)
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    assert_eq!(
        stored.as_ref(),
        body.as_bytes(),
        "the body is durable in S3"
    );

    // 2. A conflict that outlasts the retries: 503, nothing acknowledged, no item; the
    //    provider's resend is then accepted.
    conflicts.conflicts.store(100, Ordering::SeqCst);
    let before = conflicts.attempts.load(Ordering::SeqCst);
    let id2 = unique("evt_conflict_");
    let body2 = stripe_event(&id2, "invoice.paid", 300 * 1024);
    let r2 = send(body2.clone()).await;
    let persistent_attempts = conflicts.attempts.load(Ordering::SeqCst) - before;
    assert_eq!(
        (r2.status, r2.code()),
        (503, "store_unavailable"),
        "{:?}",
        r2.json
    );
    assert_eq!(persistent_attempts, 4, "the put and its 3 retries");
    assert_eq!(h.items_of_kind("message").await.len(), 1, "no item for it");
    conflicts.conflicts.store(0, Ordering::SeqCst);
    let resent = send(body2).await;
    assert_eq!((resent.status, resent.code()), (200, "accepted"));
    record(
        KEY,
        "the claim check's S3 put answered 409 ConditionalRequestConflict",
        "a 300 KB event whose first PutObject answer became 409 (the write had reached the \
         emulator, as a concurrent writer's would); a second whose every attempt did \
         (SDK interceptor on the real client)"
            .into(),
        format!(
            "first: `{}` after {attempts} put attempts, the body durable in S3 (before: 503); \
             second: `{}` after {persistent_attempts} attempts and no item, its resend `{}`",
            r.code(),
            r2.code(),
            resent.code()
        ),
    );
}
