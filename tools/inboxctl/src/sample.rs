//! Sample events for `inboxctl send`, shaped like each provider's (Stripe, Standard Webhooks,
//! GitHub, Shopify, Slack, generic), and the request headers a source needs: the signature
//! headers from `Verifier::sign`, plus the id and type headers its configuration reads.

use http::{HeaderName, HeaderValue};
use inbox_core::config::{FieldRule, Source};
use inbox_core::domain::BodyDigest;
use inbox_core::signature::SchemeConfig;
use serde_json::{json, Value};

/// An event ready to be signed and sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub body: Vec<u8>,
    /// Signed where the scheme signs an id (Standard Webhooks) and sent as the id header where
    /// the source reads the id from a header (GitHub, Shopify, …).
    pub msg_id: String,
    /// Sent as the type header where the source reads the type from a header.
    pub event_type: String,
}

fn random_alnum(n: usize) -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(n)
        .collect()
}

/// A fresh id in the provider's format.
pub fn default_id(scheme: &SchemeConfig) -> String {
    match scheme {
        SchemeConfig::Stripe => format!("evt_{}", random_alnum(24)),
        SchemeConfig::StandardWebhooks => format!("msg_{}", random_alnum(27)),
        SchemeConfig::Github | SchemeConfig::Shopify => uuid::Uuid::new_v4().to_string(),
        SchemeConfig::Slack => format!("Ev{}", random_alnum(10).to_ascii_uppercase()),
        SchemeConfig::HmacSha256 { .. } => format!("evt_{}", random_alnum(20)),
    }
}

/// The provider's usual test event type.
pub fn default_type(scheme: &SchemeConfig) -> &'static str {
    match scheme {
        SchemeConfig::Stripe => "checkout.session.completed",
        SchemeConfig::StandardWebhooks => "message.sent",
        SchemeConfig::Github => "ping",
        SchemeConfig::Shopify => "orders/create",
        SchemeConfig::Slack => "app_mention",
        SchemeConfig::HmacSha256 { .. } => "test.event",
    }
}

/// Stripe's object name for an event type: `checkout.session.completed` → `checkout.session`.
fn stripe_object(event_type: &str) -> &str {
    event_type
        .rsplit_once('.')
        .map_or(event_type, |(object, _)| object)
}

/// Builds a sample event for `source`, `now_secs` being the creation time.
pub fn sample(
    source: &Source,
    event_id: Option<&str>,
    event_type: Option<&str>,
    now_secs: i64,
) -> Event {
    let scheme = source.verifier.scheme();
    let msg_id = event_id.map_or_else(|| default_id(scheme), str::to_owned);
    let kind = event_type.unwrap_or(default_type(scheme)).to_owned();
    let mut body = match scheme {
        SchemeConfig::Stripe => json!({
            "id": msg_id,
            "object": "event",
            "api_version": "2024-06-20",
            "created": now_secs,
            "data": {"object": {
                "id": format!("cs_test_{}", random_alnum(24)),
                "object": stripe_object(&kind),
                "amount_total": 2000,
                "currency": "usd",
                "customer": format!("cus_{}", random_alnum(14)),
                "payment_status": "paid",
                "status": "complete",
                "metadata": {"tenant": "acme"}
            }},
            "livemode": false,
            "pending_webhooks": 1,
            "request": {"id": null, "idempotency_key": null},
            "type": kind
        }),
        SchemeConfig::StandardWebhooks => json!({
            "type": kind,
            "timestamp": crate::when::rfc3339(now_secs.saturating_mul(1000)),
            "data": {
                "message_id": format!("m_{}", random_alnum(16)),
                "to": "customer@example.com",
                "status": "sent",
                "tenant": "acme"
            }
        }),
        SchemeConfig::Github => json!({
            "zen": "Keep it logically awesome.",
            "hook_id": 123_456_789,
            "hook": {
                "type": "Repository",
                "id": 123_456_789,
                "name": "web",
                "active": true,
                "events": ["push", "pull_request"],
                "config": {"content_type": "json", "insecure_ssl": "0", "url": "https://example.com/webhooks/github"}
            },
            "repository": {"id": 35_129_377, "name": "widgets", "full_name": "acme/widgets", "private": true},
            "sender": {"login": "octocat", "id": 1, "type": "User"}
        }),
        SchemeConfig::Shopify => json!({
            "id": 820_982_911_946_154_508_u64,
            "email": "customer@example.com",
            "created_at": crate::when::rfc3339(now_secs.saturating_mul(1000)),
            "currency": "USD",
            "total_price": "20.00",
            "financial_status": "paid",
            "note_attributes": [{"name": "tenant", "value": "acme"}]
        }),
        SchemeConfig::Slack => json!({
            "token": "verification-token-unused",
            "team_id": "T0001",
            "api_app_id": "A0001",
            "event": {"type": kind, "user": "U0001", "text": "hello from inboxctl", "ts": format!("{now_secs}.000100"), "channel": "C0001"},
            "type": "event_callback",
            "event_id": msg_id,
            "event_time": now_secs
        }),
        SchemeConfig::HmacSha256 { .. } => json!({
            "id": msg_id,
            "type": kind,
            "created_at": crate::when::rfc3339(now_secs.saturating_mul(1000)),
            "data": {"tenant": "acme", "amount": 2000, "currency": "usd"}
        }),
    };
    // Wherever this source's configuration reads the id and type from the body, put them there.
    if let FieldRule::JsonPointer(p) = &source.event_id {
        set_pointer(&mut body, p, json!(msg_id));
    }
    if let Some(FieldRule::JsonPointer(p)) = &source.event_type {
        set_pointer(&mut body, p, json!(kind));
    }
    Event {
        body: body.to_string().into_bytes(),
        msg_id,
        event_type: kind,
    }
}

/// Sets the value at a JSON pointer, creating objects on the way; false if a non-object is in
/// the way.
pub fn set_pointer(root: &mut Value, pointer: &str, value: Value) -> bool {
    let Some(rest) = pointer.strip_prefix('/') else {
        return false;
    };
    let tokens: Vec<String> = rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, path)) = tokens.split_last() else {
        return false;
    };
    let mut node = root;
    for t in path {
        let Some(obj) = node.as_object_mut() else {
            return false;
        };
        node = obj
            .entry(t.clone())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    match node.as_object_mut() {
        Some(obj) => {
            obj.insert(last.clone(), value);
            true
        }
        None => false,
    }
}

fn has(headers: &[(HeaderName, HeaderValue)], name: &str) -> bool {
    headers
        .iter()
        .any(|(k, _)| k.as_str().eq_ignore_ascii_case(name))
}

/// Every header of the request: signed now with the source's first secret, plus the id and type
/// headers its configuration reads, plus `content-type`. Values that are not valid header values
/// are left out (the ingest endpoint then says what is missing).
pub fn headers(source: &Source, event: &Event, now_secs: i64) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = source.verifier.sign(&event.body, now_secs, &event.msg_id);
    let mut add = |name: &str, value: &str| {
        if has(&out, name) {
            return;
        }
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            out.push((n, v));
        }
    };
    if let FieldRule::Header(h) = &source.event_id {
        add(h, &event.msg_id);
    }
    if let Some(FieldRule::Header(h)) = &source.event_type {
        add(h, &event.event_type);
    }
    add("content-type", "application/json");
    out
}

/// The event id the ingest endpoint will derive, for display (`None` if it cannot be found).
pub fn event_id(
    source: &Source,
    body: &[u8],
    headers: &[(HeaderName, HeaderValue)],
) -> Option<String> {
    match &source.event_id {
        FieldRule::BodySha256 => Some(BodyDigest::of(body).to_hex()),
        FieldRule::Header(h) => headers
            .iter()
            .find(|(k, _)| k.as_str().eq_ignore_ascii_case(h))
            .and_then(|(_, v)| v.to_str().ok())
            .map(str::to_owned),
        FieldRule::JsonPointer(p) => {
            let v: Value = serde_json::from_slice(body).ok()?;
            match v.pointer(p)? {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        }
    }
}

/// The event type the ingest endpoint will derive, for display.
pub fn event_type(
    source: &Source,
    body: &[u8],
    headers: &[(HeaderName, HeaderValue)],
) -> Option<String> {
    match source.event_type.as_ref()? {
        FieldRule::BodySha256 => None,
        FieldRule::Header(h) => headers
            .iter()
            .find(|(k, _)| k.as_str().eq_ignore_ascii_case(h))
            .and_then(|(_, v)| v.to_str().ok())
            .map(str::to_owned),
        FieldRule::JsonPointer(p) => {
            let v: Value = serde_json::from_slice(body).ok()?;
            v.pointer(p)?.as_str().map(str::to_owned)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::config::{parse_secrets, Sources};

    const SOURCES: &str = r#"{
        "stripe": {"scheme": "stripe"},
        "mailer": {"scheme": "standard-webhooks"},
        "github": {"scheme": "github"},
        "shopify": {"scheme": "shopify"},
        "slack": {"scheme": "slack"},
        "custom": {"scheme": "hmac-sha256", "header": "X-Signature", "encoding": "hex", "prefix": "sha256=",
                   "event_id": {"json_pointer": "/meta/id"}, "event_type": {"header": "X-Event-Type"}}
    }"#;
    const SECRETS: &str = r#"{"stripe": "whsec_test", "mailer": "whsec_bG9jYWwtbWFpbGVyLXNlY3JldC0wMTIzNDU2Nzg5YWI=",
        "github": "g", "shopify": "s", "slack": "sl", "custom": "c"}"#;

    fn sources() -> Sources {
        let secrets = parse_secrets(SECRETS, "WEBHOOK_SECRETS").expect("secrets");
        Sources::from_json(SOURCES, &secrets).expect("sources")
    }

    fn to_map(h: &[(HeaderName, HeaderValue)]) -> http::HeaderMap {
        h.iter().cloned().collect()
    }

    const NOW: i64 = 1_796_032_800;

    #[test]
    fn every_scheme_signs_a_sample_that_verifies_and_identifies() {
        let sources = sources();
        for name in sources.names() {
            let source = sources.get(name).expect("configured");
            let event = sample(source, None, None, NOW);
            let h = headers(source, &event, NOW);
            source
                .verifier
                .verify(&to_map(&h), &event.body, NOW)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let id = event_id(source, &event.body, &h).unwrap_or_else(|| panic!("{name}: id"));
            assert!(!id.is_empty());
            if let Some(rule) = &source.event_type {
                assert!(
                    event_type(source, &event.body, &h).is_some(),
                    "{name}: type from {rule:?}"
                );
            }
            let mut tampered = event.body.clone();
            tampered.push(b' ');
            assert!(
                source.verifier.verify(&to_map(&h), &tampered, NOW).is_err(),
                "{name}: a changed body must not verify"
            );
        }
    }

    #[test]
    fn stripe_sample_is_realistic() {
        let sources = sources();
        let stripe = sources.get("stripe").expect("stripe");
        let e = sample(stripe, None, None, NOW);
        let v: Value = serde_json::from_slice(&e.body).expect("json");
        assert!(
            e.msg_id.starts_with("evt_") && e.msg_id.len() == 28,
            "{}",
            e.msg_id
        );
        assert_eq!(v["id"], json!(e.msg_id));
        assert_eq!(v["object"], "event");
        assert_eq!(v["type"], "checkout.session.completed");
        assert_eq!(v["data"]["object"]["object"], "checkout.session");
        assert_eq!(v["data"]["object"]["metadata"]["tenant"], "acme");
        assert!(v["data"]["object"]["amount_total"].is_number());
        let e2 = sample(
            stripe,
            Some("evt_fixed"),
            Some("payment_intent.succeeded"),
            NOW,
        );
        let v2: Value = serde_json::from_slice(&e2.body).expect("json");
        assert_eq!(v2["id"], "evt_fixed");
        assert_eq!(v2["data"]["object"]["object"], "payment_intent");
        assert_ne!(
            sample(stripe, None, None, NOW).msg_id,
            e.msg_id,
            "ids are random"
        );
    }

    #[test]
    fn headers_the_configuration_reads_are_added() {
        let sources = sources();
        let gh = sources.get("github").expect("github");
        let e = sample(gh, None, None, NOW);
        let h = headers(gh, &e, NOW);
        let m = to_map(&h);
        assert_eq!(m["x-github-event"], "ping");
        assert_eq!(m["x-github-delivery"], e.msg_id.as_str());
        assert_eq!(m["content-type"], "application/json");
        assert_eq!(
            h.iter().filter(|(k, _)| k == "x-github-delivery").count(),
            1
        );

        let shop = sources.get("shopify").expect("shopify");
        let m = to_map(&headers(shop, &sample(shop, None, None, NOW), NOW));
        assert_eq!(m["x-shopify-topic"], "orders/create");
        assert!(m.contains_key("x-shopify-webhook-id"));

        let mailer = sources.get("mailer").expect("mailer");
        let e = sample(mailer, None, None, NOW);
        let m = to_map(&headers(mailer, &e, NOW));
        assert!(e.msg_id.starts_with("msg_"));
        assert_eq!(m["webhook-id"], e.msg_id.as_str());

        let custom = sources.get("custom").expect("custom");
        let e = sample(custom, Some("c-1"), Some("invoice.paid"), NOW);
        let h = headers(custom, &e, NOW);
        assert_eq!(to_map(&h)["x-event-type"], "invoice.paid");
        assert_eq!(
            event_id(custom, &e.body, &h).as_deref(),
            Some("c-1"),
            "pointer /meta/id is filled"
        );
    }

    #[test]
    fn pointers() {
        let mut v = json!({"a": {"b": 1}, "n": 3});
        assert!(set_pointer(&mut v, "/a/c", json!("x")));
        assert!(set_pointer(&mut v, "/new/deep", json!(true)));
        assert!(set_pointer(&mut v, "/we~1ird", json!(0)));
        assert!(!set_pointer(&mut v, "/n/x", json!(0)));
        assert!(!set_pointer(&mut v, "", json!(0)));
        assert_eq!(
            v,
            json!({"a": {"b": 1, "c": "x"}, "n": 3, "new": {"deep": true}, "we/ird": 0})
        );
    }
}
