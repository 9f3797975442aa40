//! Cross-checks with the providers' OWN libraries, run at test time from the project's venv
//! (`stripe` 16.1, `standardwebhooks` 1.1; `$INBOX_VENV/bin/python`):
//!
//! - headers signed by `stripe.WebhookSignature.generate_signature_header` and by
//!   `standardwebhooks.webhooks.Webhook.sign` are accepted by the ingest handler (and refused when
//!   signed with another secret, or too long ago);
//! - headers produced by our `Scheme::sign` are accepted by `stripe.Webhook.construct_event` and
//!   by `standardwebhooks.webhooks.Webhook.verify`.
//!
//! Data goes to Python as JSON on stdin (never through a shell or the script text) and comes back
//! as JSON on stdout.

mod schemes;

use integration_tests::{api_event, local_secret, run_python, stripe_event, Harness};
use serde_json::{json, Value};

/// Signs each `payload` with `stripe.WebhookSignature.generate_signature_header`.
const STRIPE_SIGN: &str = r#"
import json, sys, stripe
req = json.load(sys.stdin)
kwargs = {} if req.get("timestamp") is None else {"timestamp": req["timestamp"]}
print(json.dumps({"header": stripe.WebhookSignature.generate_signature_header(req["payload"], req["secret"], **kwargs)}))
"#;

/// Verifies with `stripe.Webhook.construct_event`; prints the event's id and type, or the error.
const STRIPE_VERIFY: &str = r#"
import json, sys, stripe
req = json.load(sys.stdin)
try:
    event = stripe.Webhook.construct_event(req["payload"].encode("utf-8"), req["header"], req["secret"])
    print(json.dumps({"id": event["id"], "type": event["type"]}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))
"#;

/// Signs with `standardwebhooks.webhooks.Webhook.sign` at `timestamp` with each secret of `secrets`
/// and prints the three headers (several signatures are space-separated, as the spec says).
const STANDARD_SIGN: &str = r#"
import json, sys
from datetime import datetime, timezone
from standardwebhooks.webhooks import Webhook
req = json.load(sys.stdin)
when = datetime.fromtimestamp(req["timestamp"], tz=timezone.utc)
sigs = [Webhook(s).sign(req["msg_id"], when, req["body"]) for s in req["secrets"]]
print(json.dumps({
    "webhook-id": req["msg_id"],
    "webhook-timestamp": str(req["timestamp"]),
    "webhook-signature": " ".join(sigs),
}))
"#;

/// Verifies with `standardwebhooks.webhooks.Webhook.verify`; prints the parsed payload or the error.
const STANDARD_VERIFY: &str = r#"
import json, sys
from standardwebhooks.webhooks import Webhook
req = json.load(sys.stdin)
try:
    print(json.dumps({"payload": Webhook(req["secret"]).verify(req["body"].encode("utf-8"), req["headers"])}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))
"#;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

fn unique(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

/// A Stripe event with non-ASCII text, pretty-printed as Stripe sends it: the signature covers the
/// exact UTF-8 bytes.
fn stripe_payload(id: &str) -> String {
    let mut event: Value =
        serde_json::from_str(&stripe_event(id, "checkout.session.completed", 0)).expect("JSON");
    event["data"]["object"]["metadata"]["note"] = json!("Zürich — 10 € ✓");
    serde_json::to_string_pretty(&event).expect("JSON")
}

fn stripe_library_header(payload: &str, secret: &str, timestamp: Option<i64>) -> String {
    let out = run_python(
        STRIPE_SIGN,
        &json!({"payload": payload, "secret": secret, "timestamp": timestamp}),
    );
    out["header"].as_str().expect("header").to_owned()
}

fn header(pairs: &[(String, String)], name: &str) -> String {
    pairs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} in {pairs:?}"))
}

// --------------------------------------------------------------------- provider → ingest

#[tokio::test]
async fn stripe_library_signatures_are_accepted_by_ingest() {
    let h = Harness::new().await;
    let secret = local_secret("stripe");

    // Plain body.
    let id = unique("evt_lib_");
    let payload = stripe_payload(&id);
    let sig = stripe_library_header(&payload, &secret, None);
    assert!(sig.starts_with("t=") && sig.contains(",v1="), "{sig}");
    let hdrs = vec![("Stripe-Signature".to_owned(), sig)];
    let r = h
        .send(&api_event("POST", "stripe", &hdrs, Some(&payload), false))
        .await;
    assert_eq!(
        (r.status, &r.json),
        (200, &json!({"status": "accepted", "id": id}))
    );

    // Base64-encoded by API Gateway: verified on the decoded bytes.
    use base64::Engine as _;
    let id_b64 = unique("evt_lib_b64_");
    let payload_b64 = stripe_payload(&id_b64);
    let sig = stripe_library_header(&payload_b64, &secret, None);
    let encoded = base64::engine::general_purpose::STANDARD.encode(payload_b64.as_bytes());
    let hdrs = vec![("Stripe-Signature".to_owned(), sig)];
    let r = h
        .send(&api_event("POST", "stripe", &hdrs, Some(&encoded), true))
        .await;
    assert_eq!(
        (r.status, &r.json),
        (200, &json!({"status": "accepted", "id": id_b64}))
    );

    // Both stored, with the exact bytes the library signed.
    let messages = h.items_of_kind("message").await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    for m in &messages {
        let event_id = m["event_id"].as_s().expect("event_id");
        let expected = if *event_id == id {
            &payload
        } else {
            &payload_b64
        };
        let stored = integration_tests::raw_body(m);
        assert_eq!(stored, expected.as_bytes(), "stored body of {event_id}");
    }
}

#[tokio::test]
async fn stripe_library_signature_with_another_secret_is_refused() {
    let h = Harness::new().await;
    let id = unique("evt_other_");
    let payload = stripe_payload(&id);
    let sig = stripe_library_header(&payload, "whsec_not_the_configured_secret", None);
    let hdrs = vec![("Stripe-Signature".to_owned(), sig)];
    let r = h
        .send(&api_event("POST", "stripe", &hdrs, Some(&payload), false))
        .await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.code(), "signature_invalid", "{r:?}");
    assert!(h.items().await.is_empty(), "nothing stored");
}

#[tokio::test]
async fn stripe_library_signature_from_an_hour_ago_is_out_of_tolerance() {
    let h = Harness::new().await;
    let payload = stripe_payload(&unique("evt_old_"));
    let sig = stripe_library_header(&payload, &local_secret("stripe"), Some(now() - 3600));
    let hdrs = vec![("Stripe-Signature".to_owned(), sig)];
    let r = h
        .send(&api_event("POST", "stripe", &hdrs, Some(&payload), false))
        .await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.code(), "timestamp_out_of_tolerance", "{r:?}");
    assert!(h.items().await.is_empty(), "nothing stored");
}

fn standard_headers(
    body: &str,
    msg_id: &str,
    secrets: &[String],
    timestamp: i64,
) -> Vec<(String, String)> {
    let out = run_python(
        STANDARD_SIGN,
        &json!({"body": body, "msg_id": msg_id, "secrets": secrets, "timestamp": timestamp}),
    );
    ["webhook-id", "webhook-timestamp", "webhook-signature"]
        .iter()
        .map(|k| {
            (
                (*k).to_owned(),
                out[*k].as_str().expect("header").to_owned(),
            )
        })
        .collect()
}

fn mailer_body() -> String {
    json!({
        "type": "email.delivered",
        "timestamp": "2026-11-30T10:00:00Z",
        "data": {"email_id": "em_123", "to": ["jenny.rosen@example.com"], "subject": "Grüße ✓"}
    })
    .to_string()
}

#[tokio::test]
async fn standard_webhooks_library_signatures_are_accepted_by_ingest() {
    let h = Harness::new().await;
    let secret = local_secret("mailer");
    assert!(
        secret.starts_with("whsec_"),
        "the mailer secret is a Standard Webhooks secret"
    );
    let body = mailer_body();

    let msg_id = unique("msg_");
    let hdrs = standard_headers(&body, &msg_id, std::slice::from_ref(&secret), now());
    assert!(
        header(&hdrs, "webhook-signature").starts_with("v1,"),
        "{hdrs:?}"
    );
    let r = h
        .send(&api_event("POST", "mailer", &hdrs, Some(&body), false))
        .await;
    assert_eq!(
        (r.status, &r.json),
        (200, &json!({"status": "accepted", "id": msg_id}))
    );

    // The sender rotating its secret: two signatures, only the second one ours.
    let msg_id2 = unique("msg_");
    let other = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned();
    let hdrs = standard_headers(&body, &msg_id2, &[other, secret.clone()], now());
    assert_eq!(
        header(&hdrs, "webhook-signature").matches("v1,").count(),
        2,
        "{hdrs:?}"
    );
    let r = h
        .send(&api_event("POST", "mailer", &hdrs, Some(&body), false))
        .await;
    assert_eq!(
        (r.status, &r.json),
        (200, &json!({"status": "accepted", "id": msg_id2}))
    );

    let messages = h.items_of_kind("message").await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    for m in &messages {
        assert_eq!(
            m["event_type"].as_s().expect("event_type"),
            "email.delivered"
        );
    }
}

#[tokio::test]
async fn standard_webhooks_library_signature_with_another_secret_is_refused() {
    let h = Harness::new().await;
    let body = mailer_body();
    let hdrs = standard_headers(
        &body,
        &unique("msg_"),
        &["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned()],
        now(),
    );
    let r = h
        .send(&api_event("POST", "mailer", &hdrs, Some(&body), false))
        .await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.code(), "signature_invalid", "{r:?}");
    assert!(h.items().await.is_empty(), "nothing stored");
}

// --------------------------------------------------------------------- our signing → provider

#[tokio::test]
async fn our_stripe_signatures_verify_with_the_stripe_library() {
    let h = Harness::new().await;
    let id = unique("evt_ours_");
    let payload = stripe_payload(&id);
    let sig = header(
        &h.sign("stripe", payload.as_bytes(), ""),
        "stripe-signature",
    );

    let ok = run_python(
        STRIPE_VERIFY,
        &json!({"payload": payload, "header": sig, "secret": local_secret("stripe")}),
    );
    assert_eq!(ok, json!({"id": id, "type": "checkout.session.completed"}));

    // And the library refuses it under another secret (the check is real).
    let refused = run_python(
        STRIPE_VERIFY,
        &json!({"payload": payload, "header": sig, "secret": "whsec_not_the_configured_secret"}),
    );
    assert_eq!(refused["error"], "SignatureVerificationError", "{refused}");
}

#[tokio::test]
async fn our_standard_webhooks_signatures_verify_with_the_standardwebhooks_library() {
    let h = Harness::new().await;
    let body = mailer_body();
    let msg_id = unique("msg_");
    let pairs = h.sign("mailer", body.as_bytes(), &msg_id);
    assert_eq!(header(&pairs, "webhook-id"), msg_id);
    let headers: serde_json::Map<String, Value> =
        pairs.iter().map(|(k, v)| (k.clone(), json!(v))).collect();

    let ok = run_python(
        STANDARD_VERIFY,
        &json!({"body": body, "headers": headers, "secret": local_secret("mailer")}),
    );
    let expected: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(ok, json!({"payload": expected}));

    let refused = run_python(
        STANDARD_VERIFY,
        &json!({"body": body, "headers": headers, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}),
    );
    assert_eq!(refused["error"], "WebhookVerificationError", "{refused}");

    // Tampered body: refused too.
    let tampered = body.replace("em_123", "em_124");
    let refused = run_python(
        STANDARD_VERIFY,
        &json!({"body": tampered, "headers": headers, "secret": local_secret("mailer")}),
    );
    assert_eq!(refused["error"], "WebhookVerificationError", "{refused}");
}

// --------------------------------------------------------------------- the libraries as the reference

/// `stripe.WebhookSignature.verify_header` (tolerance 300 s) on each header: accepted or not.
const STRIPE_ACCEPTS: &str = r#"
import json, sys, stripe
req = json.load(sys.stdin)
out = []
for header in req["headers"]:
    try:
        stripe.WebhookSignature.verify_header(req["payload"], header, req["secret"], tolerance=300)
        out.append(True)
    except stripe.SignatureVerificationError:
        out.append(False)
print(json.dumps(out))
"#;

/// `standardwebhooks.webhooks.Webhook.verify` on each `webhook-signature`: accepted or not.
const STANDARD_ACCEPTS: &str = r#"
import json, sys
from standardwebhooks.webhooks import Webhook
req = json.load(sys.stdin)
out = []
for signature in req["signatures"]:
    headers = dict(req["headers"], **{"webhook-signature": signature})
    try:
        Webhook(req["secret"]).verify(req["body"].encode("utf-8"), headers)
        out.append(True)
    except Exception:
        out.append(False)
print(json.dumps(out))
"#;

/// Stripe-Signature headers the ingest path must judge as stripe-python does: a candidate that
/// cannot be a signature (not hex, wrong length, empty) is skipped rather than failing the header,
/// items without `=` other than `t`/`v1` are ignored, and a header with nothing usable is refused.
/// Deliberate differences are left out: we refuse timestamps more than the tolerance in the
/// FUTURE and a header with two `t`, and accept upper-case hex and spaces around items.
#[tokio::test]
async fn stripe_headers_are_judged_as_the_stripe_library_judges_them() {
    let h = Harness::new().await;
    let secret = local_secret("stripe");
    let payload = stripe_payload(&unique("evt_judge_"));
    let t = now();
    let lib = stripe_library_header(&payload, &secret, Some(t));
    let good = lib.split_once(",v1=").expect("v1").1.to_owned();
    let other = stripe_library_header(&payload, "whsec_other", Some(t))
        .split_once(",v1=")
        .expect("v1")
        .1
        .to_owned();
    let old = stripe_library_header(&payload, &secret, Some(t - 3600));
    let headers = vec![
        format!("t={t},v1={good}"),
        format!("t={t},v1={good},v1=bad"),
        format!("t={t},v1=bad,v1={good}"),
        format!("t={t},v1=,v1={good}"),
        format!("t={t},v1={},v1={good}", &good[..62]),
        format!("t={t},v1={good},extra"),
        format!("t={t},v1={good},v0=zz"),
        format!("t={t},v1={other}"),
        format!("t={t},v1=bad,v1={other}"),
        format!("t={t},v1=bad"),
        format!("t={t},v1="),
        format!("t={t}"),
        format!("v1={good}"),
        format!("t={t},v0={good}"),
        format!("t={t},v1,v1={good}"),
        old,
    ];
    let library: Vec<bool> = serde_json::from_value(run_python(
        STRIPE_ACCEPTS,
        &json!({"payload": payload, "headers": headers, "secret": secret}),
    ))
    .expect("a list of verdicts");
    assert_eq!(library.len(), headers.len());
    assert!(library.iter().any(|a| *a) && library.iter().any(|a| !*a));
    let mut disagreements = Vec::new();
    for (header, accepted_by_library) in headers.iter().zip(library) {
        let hdrs = vec![("Stripe-Signature".to_owned(), header.clone())];
        let r = h
            .send(&api_event("POST", "stripe", &hdrs, Some(&payload), false))
            .await;
        if (r.status == 200) != accepted_by_library {
            disagreements.push(format!(
                "{header}: library {accepted_by_library}, ingest {} {}",
                r.status,
                r.code()
            ));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// webhook-signature headers the ingest path must judge as the `standardwebhooks` library does:
/// a `v1` entry that is not 32 bytes of base64 is skipped. Left out: entries whose base64 padding
/// is wrong (the library raises on them or not depending on whether a valid entry came first; we
/// always skip them).
#[tokio::test]
async fn standard_webhooks_headers_are_judged_as_the_library_judges_them() {
    let h = Harness::new().await;
    let secret = local_secret("mailer");
    let body = mailer_body();
    let msg_id = unique("msg_");
    let signed = standard_headers(&body, &msg_id, std::slice::from_ref(&secret), now());
    let good = header(&signed, "webhook-signature");
    let other = header(
        &standard_headers(
            &body,
            &msg_id,
            &["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned()],
            now(),
        ),
        "webhook-signature",
    );
    use base64::Engine as _;
    let long = base64::engine::general_purpose::STANDARD.encode([7u8; 33]);
    let signatures = vec![
        good.clone(),
        format!("v1,AAAA {good}"),
        format!("{good} v1,AAAA"),
        format!("v1,{long} {good}"),
        format!("v1a,xyz {good}"),
        "v1,AAAA".to_owned(),
        format!("v1,AAAA {other}"),
        other.clone(),
        good.replacen("v1,", "v2,", 1),
    ];
    let base: serde_json::Map<String, Value> = signed
        .iter()
        .filter(|(k, _)| k != "webhook-signature")
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let library: Vec<bool> = serde_json::from_value(run_python(
        STANDARD_ACCEPTS,
        &json!({"body": body, "headers": base, "signatures": signatures, "secret": secret}),
    ))
    .expect("a list of verdicts");
    assert_eq!(library.len(), signatures.len());
    assert!(library.iter().any(|a| *a) && library.iter().any(|a| !*a));
    let mut disagreements = Vec::new();
    for (signature, accepted_by_library) in signatures.iter().zip(library) {
        let mut hdrs: Vec<(String, String)> = signed
            .iter()
            .filter(|(k, _)| k != "webhook-signature")
            .cloned()
            .collect();
        hdrs.push(("webhook-signature".to_owned(), signature.clone()));
        let r = h
            .send(&api_event("POST", "mailer", &hdrs, Some(&body), false))
            .await;
        if (r.status == 200) != accepted_by_library {
            disagreements.push(format!(
                "{signature}: library {accepted_by_library}, ingest {} {}",
                r.status,
                r.code()
            ));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
