//! The provider schemes against the providers' own libraries (pinned in
//! scripts/requirements-dev.txt): `sendgrid`, `svix` (Resend), `paddle-python-sdk`, `squareup`,
//! `twilio`, `PyNaCl` (Discord's documented verifier; Standard Webhooks `v1a`) and `cryptography`
//! (SNS: an RSA key and a certificate made by the test, SignatureVersion 1 and 2 signed over the
//! string to sign as AWS documents it). Each way: what the library signs, the ingest accepts;
//! what we sign, the library accepts (and refuses when tampered).

use integration_tests::{api_event, local_secret, run_python, Harness};
use serde_json::{json, Value};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

fn unique(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .expect("headers object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("header value").to_owned()))
        .collect()
}

fn header_map(pairs: &[(String, String)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

async fn accepted(h: &Harness, source: &str, headers: &[(String, String)], body: &str) {
    let r = h
        .send(&api_event("POST", source, headers, Some(body), false))
        .await;
    assert_eq!((r.status, r.code()), (200, "accepted"), "{source}: {r:?}");
}

// ------------------------------------------------------------------ SendGrid

const SENDGRID: &str = r#"
import json, sys, base64
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sendgrid.helpers.eventwebhook import EventWebhook
req = json.load(sys.stdin)
key = serialization.load_der_private_key(base64.b64decode(req["private"]), password=None)
public = base64.b64encode(key.public_key().public_bytes(
    serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
hook = EventWebhook(public)
ours = hook.verify_signature(req["body"], req["signature"], req["timestamp"])
tampered = hook.verify_signature(req["body"] + " ", req["signature"], req["timestamp"])
theirs = base64.b64encode(key.sign((req["timestamp"] + req["body"]).encode(), ec.ECDSA(hashes.SHA256()))).decode()
print(json.dumps({"ours": ours, "tampered": tampered, "theirs": theirs}))
"#;

#[tokio::test]
async fn sendgrid_library_agrees() {
    let h = Harness::new().await;
    let body = json!([{"email": "customer@example.com", "event": "delivered", "sg_event_id": unique("sg_")}]).to_string();
    let ours = h.sign("sendgrid", body.as_bytes(), "");
    let ts = ours
        .iter()
        .find(|(k, _)| k.ends_with("-timestamp"))
        .unwrap()
        .1
        .clone();
    let sig = ours
        .iter()
        .find(|(k, _)| k.ends_with("-signature"))
        .unwrap()
        .1
        .clone();
    let out = run_python(
        SENDGRID,
        &json!({"private": local_secret("sendgrid"), "body": body, "signature": sig, "timestamp": ts}),
    );
    assert_eq!(
        (out["ours"].as_bool(), out["tampered"].as_bool()),
        (Some(true), Some(false)),
        "{out}"
    );
    let theirs = vec![
        (
            "X-Twilio-Email-Event-Webhook-Signature".to_owned(),
            out["theirs"].as_str().unwrap().to_owned(),
        ),
        ("X-Twilio-Email-Event-Webhook-Timestamp".to_owned(), ts),
    ];
    accepted(&h, "sendgrid", &theirs, &body).await;
}

// ------------------------------------------------------------------ Resend (Svix)

const SVIX: &str = r#"
import json, sys
from datetime import datetime, timezone
from svix.webhooks import Webhook, WebhookVerificationError
req = json.load(sys.stdin)
hook = Webhook(req["secret"])
try:
    hook.verify(req["body"], req["headers"])
    ours = True
except WebhookVerificationError:
    ours = False
try:
    hook.verify(req["body"] + " ", req["headers"])
    tampered = True
except WebhookVerificationError:
    tampered = False
when = datetime.fromtimestamp(req["timestamp"], tz=timezone.utc)
theirs = {"svix-id": req["msg_id"], "svix-timestamp": str(req["timestamp"]),
          "svix-signature": hook.sign(req["msg_id"], when, req["body"])}
print(json.dumps({"ours": ours, "tampered": tampered, "theirs": theirs}))
"#;

#[tokio::test]
async fn svix_library_agrees_for_resend() {
    let h = Harness::new().await;
    let body = json!({"type": "email.delivered", "created_at": "2026-11-30T10:00:00Z", "data": {"email_id": unique("em_")}}).to_string();
    let ours = h.sign("resend", body.as_bytes(), &unique("msg_"));
    assert!(ours.iter().any(|(k, _)| k == "svix-signature"), "{ours:?}");
    let out = run_python(
        SVIX,
        &json!({"secret": local_secret("resend"), "body": body, "headers": header_map(&ours), "msg_id": unique("msg_"), "timestamp": now()}),
    );
    assert_eq!(
        (out["ours"].as_bool(), out["tampered"].as_bool()),
        (Some(true), Some(false)),
        "{out}"
    );
    accepted(&h, "resend", &pairs(&out["theirs"]), &body).await;
}

// ------------------------------------------------------------------ Standard Webhooks v1a, Discord (Ed25519)

const ED25519: &str = r#"
import json, sys, base64
from nacl.signing import SigningKey, VerifyKey
from nacl.exceptions import BadSignatureError
req = json.load(sys.stdin)
key = SigningKey(req["seed"])
def ok(message, signature):
    try:
        key.verify_key.verify(message.encode(), signature)
        return True
    except BadSignatureError:
        return False
print(json.dumps({
    "ours": ok(req["message"], bytes.fromhex(req["signature_hex"])),
    "tampered": ok(req["message"] + " ", bytes.fromhex(req["signature_hex"])),
    "theirs_hex": key.sign(req["theirs"].encode()).signature.hex(),
}))
"#;

fn ed25519(seed: &[u8], message: &str, signature: &[u8], theirs: &str) -> Value {
    let seed: Vec<u8> = seed.to_vec();
    // PyNaCl takes the 32-byte seed as raw bytes: handed over as a JSON list is awkward, so hex.
    let script = ED25519.replace(
        "SigningKey(req[\"seed\"])",
        "SigningKey(bytes.fromhex(req[\"seed\"]))",
    );
    run_python(
        &script,
        &json!({"seed": hex::encode(seed), "message": message, "signature_hex": hex::encode(signature), "theirs": theirs}),
    )
}

#[tokio::test]
async fn pynacl_agrees_for_discord_and_v1a() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let h = Harness::new().await;

    // Discord: Ed25519 over timestamp + body, hex.
    let seed = hex::decode(&local_secret("discord")[..64]).unwrap();
    let body = json!({"version": 1, "application_id": "1234567890", "type": 1, "event": {"type": "APPLICATION_AUTHORIZED", "id": unique("")}}).to_string();
    let ours = h.sign("discord", body.as_bytes(), "");
    let ts = ours
        .iter()
        .find(|(k, _)| k == "x-signature-timestamp")
        .unwrap()
        .1
        .clone();
    let sig = hex::decode(
        &ours
            .iter()
            .find(|(k, _)| k == "x-signature-ed25519")
            .unwrap()
            .1,
    )
    .unwrap();
    let body2 = body.replace("APPLICATION_AUTHORIZED", "ENTITLEMENT_CREATE");
    let out = ed25519(&seed, &format!("{ts}{body}"), &sig, &format!("{ts}{body2}"));
    assert_eq!(
        (out["ours"].as_bool(), out["tampered"].as_bool()),
        (Some(true), Some(false)),
        "{out}"
    );
    let theirs = vec![
        (
            "X-Signature-Ed25519".to_owned(),
            out["theirs_hex"].as_str().unwrap().to_owned(),
        ),
        ("X-Signature-Timestamp".to_owned(), ts),
    ];
    accepted(&h, "discord", &theirs, &body2).await;

    // Standard Webhooks v1a: Ed25519 over "{id}.{ts}.{body}", base64.
    let secret = local_secret("webhooks-v1a");
    let seed = b64.decode(secret.trim_start_matches("whsk_")).unwrap();
    let id = unique("msg_");
    let ours = h.sign("webhooks-v1a", body.as_bytes(), &id);
    let ts = ours
        .iter()
        .find(|(k, _)| k == "webhook-timestamp")
        .unwrap()
        .1
        .clone();
    let entry = ours
        .iter()
        .find(|(k, _)| k == "webhook-signature")
        .unwrap()
        .1
        .clone();
    let sig = b64
        .decode(entry.strip_prefix("v1a,").expect("a v1a signature"))
        .unwrap();
    let id2 = unique("msg_");
    let out = ed25519(
        &seed,
        &format!("{id}.{ts}.{body}"),
        &sig,
        &format!("{id2}.{ts}.{body}"),
    );
    assert_eq!(
        (out["ours"].as_bool(), out["tampered"].as_bool()),
        (Some(true), Some(false)),
        "{out}"
    );
    let theirs_sig = b64.encode(hex::decode(out["theirs_hex"].as_str().unwrap()).unwrap());
    let theirs = vec![
        ("webhook-id".to_owned(), id2),
        ("webhook-timestamp".to_owned(), ts),
        ("webhook-signature".to_owned(), format!("v1a,{theirs_sig}")),
    ];
    accepted(&h, "webhooks-v1a", &theirs, &body).await;
}

// ------------------------------------------------------------------ Paddle, Square, Twilio (HMAC)

const PADDLE: &str = r#"
import json, sys
from paddle_billing.Notifications.PaddleSignature import PaddleSignature
from paddle_billing.Notifications.Secret import Secret
req = json.load(sys.stdin)
sig = PaddleSignature()
ours = sig.verify(req["header"], req["body"], Secret(req["secret"]))
tampered = sig.verify(req["header"], req["body"] + " ", Secret(req["secret"]))
h1 = PaddleSignature.calculate_hmac(req["secret"], f'{req["timestamp"]}:{req["body"]}'.encode()).hexdigest()
print(json.dumps({"ours": ours, "tampered": tampered, "theirs": f'ts={req["timestamp"]};h1={h1}'}))
"#;

const SQUARE: &str = r#"
import json, sys, hmac, hashlib, base64
from square.utils.webhooks_helper import verify_signature
req = json.load(sys.stdin)
kw = dict(signature_key=req["secret"], notification_url=req["url"])
ours = verify_signature(request_body=req["body"], signature_header=req["signature"], **kw)
tampered = verify_signature(request_body=req["body"] + " ", signature_header=req["signature"], **kw)
other = req["body"].replace("updated", "created")
theirs = base64.b64encode(hmac.new(req["secret"].encode(), (req["url"] + other).encode(), hashlib.sha256).digest()).decode()
assert verify_signature(request_body=other, signature_header=theirs, **kw)
print(json.dumps({"ours": ours, "tampered": tampered, "theirs": theirs, "other": other}))
"#;

const TWILIO: &str = r#"
import json, sys
from urllib.parse import parse_qsl
from twilio.request_validator import RequestValidator
req = json.load(sys.stdin)
v = RequestValidator(req["secret"])
params = dict(parse_qsl(req["body"], keep_blank_values=True))
ours = v.validate(req["url"], params, req["signature"])
tampered = v.validate(req["url"], dict(params, MessageStatus="failed"), req["signature"])
other = dict(params, MessageStatus="undelivered")
print(json.dumps({"ours": ours, "tampered": tampered, "theirs": v.compute_signature(req["url"], other), "other": other}))
"#;

fn url(source: &str) -> String {
    format!("http://127.0.0.1:9000/lambda-url/ingest/webhooks/{source}")
}

#[tokio::test]
async fn paddle_square_and_twilio_libraries_agree() {
    let h = Harness::new().await;

    let body = json!({"event_id": unique("evt_"), "event_type": "transaction.completed", "data": {"id": "txn_1"}}).to_string();
    let ours = h.sign("paddle", body.as_bytes(), "");
    let out = run_python(
        PADDLE,
        &json!({"secret": local_secret("paddle"), "body": body, "header": ours[0].1, "timestamp": now()}),
    );
    assert_eq!(
        (out["ours"].as_bool(), out["tampered"].as_bool()),
        (Some(true), Some(false)),
        "{out}"
    );
    let theirs = vec![(
        "Paddle-Signature".to_owned(),
        out["theirs"].as_str().unwrap().to_owned(),
    )];
    accepted(&h, "paddle", &theirs, &body).await;

    let body = json!({"event_id": unique(""), "type": "payment.updated", "data": {"id": "p1"}})
        .to_string();
    let ours = h.sign("square", body.as_bytes(), "");
    let out = run_python(
        SQUARE,
        &json!({"secret": local_secret("square"), "url": url("square"), "body": body, "signature": ours[0].1}),
    );
    assert_eq!(
        (out["ours"].as_bool(), out["tampered"].as_bool()),
        (Some(true), Some(false)),
        "{out}"
    );
    let other = json!({"event_id": unique(""), "type": "payment.created"}).to_string();
    let r = run_python(
        SQUARE,
        &json!({"secret": local_secret("square"), "url": url("square"), "body": other, "signature": "x"}),
    );
    let theirs = vec![(
        "x-square-hmacsha256-signature".to_owned(),
        r["theirs"].as_str().unwrap().to_owned(),
    )];
    accepted(&h, "square", &theirs, r["other"].as_str().unwrap()).await;

    let body = format!("AccountSid=AC1&MessageSid={}&MessageStatus=delivered&To=%2B15558675310&Body=Gr%C3%BC%C3%9Fe+%E2%9C%93", unique("SM"));
    let ours = h.sign("twilio", body.as_bytes(), "");
    let out = run_python(
        TWILIO,
        &json!({"secret": local_secret("twilio"), "url": url("twilio"), "body": body, "signature": ours[0].1}),
    );
    assert_eq!(
        (out["ours"].as_bool(), out["tampered"].as_bool()),
        (Some(true), Some(false)),
        "{out}"
    );
    let other: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            out["other"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap())),
        )
        .finish();
    let theirs = vec![
        (
            "X-Twilio-Signature".to_owned(),
            out["theirs"].as_str().unwrap().to_owned(),
        ),
        (
            "content-type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
    ];
    accepted(&h, "twilio", &theirs, &other).await;
}

// ------------------------------------------------------------------ SNS (cryptography)

/// An RSA key and a self-signed certificate made by `cryptography`, and an SNS notification and
/// subscription confirmation signed with SignatureVersion 1 (SHA1withRSA) and 2 (SHA256withRSA)
/// over the string to sign as AWS documents it.
const SNS: &str = r#"
import json, sys, base64, datetime
from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa, padding
req = json.load(sys.stdin)
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365)).sign(key, hashes.SHA256()))
NOTIFICATION = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
CONFIRMATION = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
def sign(m, version):
    names = NOTIFICATION if m["Type"] == "Notification" else CONFIRMATION
    text = "".join(f"{n}\n{m[n]}\n" for n in names if n in m)
    digest = hashes.SHA1() if version == "1" else hashes.SHA256()
    m = dict(m, SignatureVersion=version, SigningCertURL=req["cert_url"])
    m["Signature"] = base64.b64encode(key.sign(text.encode(), padding.PKCS1v15(), digest)).decode()
    return json.dumps(m)
print(json.dumps({
    "cert": cert.public_bytes(serialization.Encoding.PEM).decode(),
    "messages": [sign(m, v) for m in req["messages"] for v in ("1", "2")],
}))
"#;

#[derive(Debug)]
struct ServeOne {
    url: String,
    pem: Vec<u8>,
}

impl inbox_core::signature::Fetcher for ServeOne {
    fn fetch<'a>(&'a self, url: &'a str) -> inbox_core::signature::FetchFuture<'a> {
        let found = (url == self.url)
            .then(|| self.pem.clone())
            .ok_or(inbox_core::signature::FetchError::new("not found"));
        Box::pin(async move { found })
    }
}

#[tokio::test]
async fn sns_messages_signed_by_cryptography_verify_in_both_versions() {
    use inbox_core::signature::{build, Fetcher, Request, Spec};
    let topic = "arn:aws:sns:eu-west-1:123456789012:ses-events";
    let cert_url =
        "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem";
    let ts = sns_timestamp(now());
    let ses = json!({"notificationType": "Bounce", "bounce": {"bounceType": "Permanent"}, "mail": {"messageId": "m-1"}}).to_string();
    let messages = json!([
        {"Type": "Notification", "MessageId": unique(""), "TopicArn": topic, "Subject": "Amazon SES Email Event Notification",
         "Message": ses, "Timestamp": ts},
        {"Type": "Notification", "MessageId": unique(""), "TopicArn": topic, "Message": "line one\nZürich ✓", "Timestamp": ts},
        {"Type": "SubscriptionConfirmation", "MessageId": unique(""), "TopicArn": topic, "Token": "2336412f37fb687f5d51e6e2",
         "Message": "You have chosen to subscribe to the topic.", "Timestamp": ts,
         "SubscribeURL": format!("https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn={topic}&Token=2336412f37fb687f5d51e6e2")}
    ]);
    let out = run_python(SNS, &json!({"cert_url": cert_url, "messages": messages}));
    let fetcher: std::sync::Arc<dyn Fetcher> = std::sync::Arc::new(ServeOne {
        url: cert_url.to_owned(),
        pem: out["cert"].as_str().unwrap().as_bytes().to_vec(),
    });
    let Value::Object(settings) = json!({"topic_arn": topic}) else {
        unreachable!()
    };
    let scheme = build(
        "sns",
        &Spec::new(&settings, &[], std::time::Duration::from_secs(300)).with_fetcher(&fetcher),
    )
    .unwrap();
    let headers = http::HeaderMap::new();
    let signed = out["messages"].as_array().unwrap();
    assert_eq!(signed.len(), 6);
    for m in signed {
        let body = m.as_str().unwrap();
        let verdict = scheme
            .verify(Request::new(&headers, body.as_bytes(), now()))
            .resolve()
            .await;
        assert_eq!(verdict, Ok(()), "{body}");
        let tampered = body
            .replace("You have chosen", "You chose")
            .replace("Permanent", "Transient")
            .replace("line one", "line 1");
        assert_ne!(tampered, body);
        let verdict = scheme
            .verify(Request::new(&headers, tampered.as_bytes(), now()))
            .resolve()
            .await;
        assert_eq!(
            verdict.unwrap_err().code(),
            "signature_invalid",
            "{tampered}"
        );
    }
}

/// Unix seconds as SNS writes them (`2026-11-30T10:00:00.000Z`), formatted by Python so that the
/// test does not depend on the code under test.
fn sns_timestamp(secs: i64) -> String {
    run_python(
        "import json, sys, datetime\nt = json.load(sys.stdin)\nprint(json.dumps(datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.000Z')))",
        &json!(secs),
    )
    .as_str()
    .unwrap()
    .to_owned()
}

// ------------------------------------------------------------------ through ingest: SES, Mailgun replays, Postmark addresses

#[tokio::test]
async fn ses_mailgun_and_postmark_through_ingest() {
    let h = Harness::new().await;

    // SES through SNS with the local signing identity: the SES event type, deduplicated on MessageId.
    let ses = json!({"eventType": "Bounce", "bounce": {"bounceType": "Permanent"}, "mail": {"tags": {"tenant": ["acme"]}}}).to_string();
    let id = unique("");
    let (_, body) = h.sign_message("ses", ses.as_bytes(), &id, now());
    let text = vec![(
        "content-type".to_owned(),
        "text/plain; charset=UTF-8".to_owned(),
    )];
    accepted(&h, "ses", &text, &body).await;
    let r = h
        .send(&api_event("POST", "ses", &text, Some(&body), false))
        .await;
    assert_eq!(
        (r.status, r.code(), r.json["id"].as_str()),
        (200, "duplicate", Some(id.as_str()))
    );
    let messages = h.items_of_kind("message").await;
    assert_eq!(messages[0]["event_type"].as_s().unwrap(), "Bounce");

    // Mailgun: the same signature object again, with another event: a duplicate, nothing new.
    let event = json!({"event-data": {"event": "delivered", "id": "e1"}}).to_string();
    let token = unique("");
    let (_, body) = h.sign_message("mailgun", event.as_bytes(), &token, now());
    accepted(&h, "mailgun", &[], &body).await;
    let mut replay: Value = serde_json::from_str(&body).unwrap();
    replay["event-data"] = json!({"event": "delivered", "id": "forged"});
    let r = h
        .send(&api_event(
            "POST",
            "mailgun",
            &[],
            Some(&replay.to_string()),
            false,
        ))
        .await;
    assert_eq!(
        (r.status, r.code(), r.json["id"].as_str()),
        (200, "duplicate", Some(token.as_str()))
    );
    assert_eq!(
        h.items_of_kind("message").await.len(),
        2,
        "SES + Mailgun, the replay stored no message"
    );

    // Postmark with an allow-list: an allowed address passes, API Gateway's sourceIp is used.
    let body = json!({"RecordType": "Delivery", "MessageID": unique(""), "Recipient": "customer@example.com"}).to_string();
    let auth = h.sign("postmark-allowlist", body.as_bytes(), "");
    let mut event = api_event("POST", "postmark-allowlist", &auth, Some(&body), false);
    event.request_context.http.source_ip = Some("50.31.156.6".to_owned());
    let r = h.send(&event).await;
    assert_eq!((r.status, r.code()), (200, "accepted"), "{r:?}");
    let stored = h.items_of_kind("message").await;
    let postmark = stored
        .iter()
        .find(|m| m["source"].as_s().unwrap() == "postmark-allowlist")
        .unwrap();
    assert_eq!(postmark["event_type"].as_s().unwrap(), "Delivery");
    let kept = format!("{:?}", postmark.get("headers"));
    assert!(
        !kept.to_ascii_lowercase().contains("authorization"),
        "credentials are never stored: {kept}"
    );
}
