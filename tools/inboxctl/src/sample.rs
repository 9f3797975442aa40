//! Sample events for `inboxctl send` and the requests that carry them. The body, its id and its
//! type come from the source's sampler (`Source::sampler`, `Sampler::sample`, shaped like the
//! provider's: the core's `samples` feature, which only this crate turns on); here they
//! are fitted to the source's configuration (its id and type are put wherever it reads them) and
//! signed with the source's first secret (`Scheme::sign`).

use http::{HeaderName, HeaderValue};
use inbox_core::domain::BodyDigest;
use inbox_core::identity::{self, FieldRule};
use inbox_core::signature::{SchemeError, SignError, Unsigned};
use inbox_core::sources::Source;
use serde_json::{json, Value};

/// An event ready to be signed and sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub body: Vec<u8>,
    /// The body's media type.
    pub content_type: &'static str,
    /// Signed where the scheme signs an id (Standard Webhooks) and sent as the id header where
    /// the source reads the id from a header (GitHub, Shopify, …).
    pub msg_id: String,
    /// Sent as the type header where the source reads the type from a header.
    pub event_type: String,
}

/// Builds a sample event for `source`, `now_secs` being the creation time: the scheme's id and
/// type unless given ([`SchemeError`]: the source's samples cannot be built from its settings).
pub fn sample(
    source: &Source,
    event_id: Option<&str>,
    event_type: Option<&str>,
    now_secs: i64,
) -> Result<Event, SchemeError> {
    let sampler = source.sampler()?;
    let msg_id = event_id.map_or_else(|| sampler.sample_id(), str::to_owned);
    let kind = event_type.unwrap_or(sampler.sample_type()).to_owned();
    let sample = sampler.sample(&msg_id, &kind, now_secs);
    let mut body = sample.body;
    // Wherever this source's configuration reads the id and type from the body, put them there.
    let pointers = [
        (Some(&source.event_id), &msg_id),
        (source.event_type.as_ref(), &kind),
    ];
    if pointers
        .iter()
        .any(|(rule, _)| matches!(rule, Some(FieldRule::JsonPointer(_))))
    {
        if let Ok(mut doc) = serde_json::from_slice::<Value>(&body) {
            for (rule, value) in pointers {
                if let Some(FieldRule::JsonPointer(p)) = rule {
                    set_pointer(&mut doc, p, json!(value));
                }
            }
            body = doc.to_string().into_bytes();
        }
    }
    Ok(Event {
        body,
        content_type: sample.content_type,
        msg_id,
        event_type: kind,
    })
}

/// An event read from a file: the scheme's id and type unless given ([`SchemeError`]: the
/// source's samples, which give them, cannot be built from its settings).
pub fn from_file(
    source: &Source,
    body: Vec<u8>,
    event_id: Option<&str>,
    event_type: Option<&str>,
) -> Result<Event, SchemeError> {
    let sampler = source.sampler()?;
    Ok(Event {
        body,
        content_type: "application/json",
        msg_id: event_id.map_or_else(|| sampler.sample_id(), str::to_owned),
        event_type: event_type.map_or_else(|| sampler.sample_type().to_owned(), str::to_owned),
    })
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

/// A request ready to send: its headers and body.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The event's body, or the one the scheme signed instead (a scheme that signs inside it).
    pub body: Vec<u8>,
}

/// Every header of the request: signed now with the source's first secret, plus the id and type
/// headers its configuration reads, plus `content-type`. Values that are not valid header values
/// are left out (the ingest endpoint then says what is missing).
pub fn sign(source: &Source, event: &Event, now_secs: i64) -> Result<Outgoing, SignError> {
    let signed = source
        .scheme
        .sign(&Unsigned::new(&event.body, now_secs, &event.msg_id))?;
    let mut out = signed.headers;
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
    add("content-type", event.content_type);
    Ok(Outgoing {
        headers: out,
        body: signed.body.unwrap_or_else(|| event.body.clone()),
    })
}

/// The event id the ingest endpoint will derive (its dedupe key), for display (`None` if it
/// cannot be found): the body's hash when the source's id is not signed (GitHub, Shopify).
pub fn event_id(
    source: &Source,
    body: &[u8],
    headers: &[(HeaderName, HeaderValue)],
) -> Option<String> {
    // The same rules as the ingest endpoint (`identity::identify`): the dedupe key.
    let map: http::HeaderMap = headers.iter().cloned().collect();
    let body = first_event(source, body);
    let identity = identity::identify(
        &source.event_id,
        source.id_signed,
        None,
        &map,
        body,
        &BodyDigest::of(body),
    );
    Some(identity.event_id.as_str().to_owned())
}

/// The body the source's rules read: for a source that splits batches, the first event of a
/// batch (a sample is a batch of one), as the ingest endpoint stores it.
fn first_event<'a>(source: &Source, body: &'a [u8]) -> &'a [u8] {
    if !source.batches {
        return body;
    }
    match inbox_core::batch::split(body) {
        Some(events) => events.first().map_or(body, |e| e.bytes),
        None => body,
    }
}

/// The event type the ingest endpoint will derive, for display.
pub fn event_type(
    source: &Source,
    body: &[u8],
    headers: &[(HeaderName, HeaderValue)],
) -> Option<String> {
    let map: http::HeaderMap = headers.iter().cloned().collect();
    let rule = source.event_type.as_ref()?;
    let body = first_event(source, body);
    identity::identify(
        &FieldRule::BodySha256,
        true,
        Some(rule),
        &map,
        body,
        &BodyDigest::of(body),
    )
    .event_type
    .map(|t| t.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::signature::Request;
    use inbox_core::sources::{parse_secrets, Sources};

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

    fn headers(source: &Source, event: &Event, now: i64) -> Vec<(HeaderName, HeaderValue)> {
        sign(source, event, now).expect("signs").headers
    }

    fn verify(
        source: &Source,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<(), inbox_core::signature::SignatureError> {
        source
            .scheme
            .verify(Request::new(headers, body, NOW))
            .ready()
            .expect("decided without I/O")
    }

    const NOW: i64 = 1_796_032_800;

    #[test]
    fn every_scheme_signs_a_sample_that_verifies_and_identifies() {
        let sources = sources();
        for name in sources.names() {
            let source = sources.get(name).expect("configured");
            let event = sample(source, None, None, NOW).expect("sample");
            let out = sign(source, &event, NOW).expect("signs");
            assert_eq!(out.body, event.body);
            let h = out.headers;
            let map = to_map(&h);
            verify(source, &map, &event.body).unwrap_or_else(|e| panic!("{name}: {e}"));
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
                verify(source, &map, &tampered).is_err(),
                "{name}: a changed body must not verify"
            );
        }
    }

    /// What `inboxctl send <source>` sends for every source `make dev` serves (local/*.json): a
    /// sample the source verifies (the body is the one the scheme signed, for schemes that sign
    /// inside it) and identifies, with its id and type where the source reads them.
    #[test]
    fn every_local_source_sends_a_valid_signed_sample() {
        let secrets = parse_secrets(
            include_str!("../../../local/secrets.json"),
            "WEBHOOK_SECRETS",
        )
        .expect("local secrets");
        let sources = Sources::from_json(include_str!("../../../local/sources.json"), &secrets)
            .expect("local sources");
        assert!(sources.names().len() >= 17, "{:?}", sources.names());
        for name in sources.names() {
            let source = sources.get(name).expect("configured");
            let event = sample(source, None, None, NOW).expect("sample");
            let out = sign(source, &event, NOW).unwrap_or_else(|e| panic!("{name}: {e}"));
            let map = to_map(&out.headers);
            // From one of Postmark's addresses (`postmark-allowlist` allows only those).
            let from = std::net::IpAddr::from([50, 31, 156, 6]);
            source
                .scheme
                .verify(Request::new(&map, &out.body, NOW).with_source_ip(from))
                .ready()
                .expect("decided without I/O")
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                map["content-type"].to_str().unwrap(),
                event.content_type,
                "{name}"
            );
            let id = event_id(source, &out.body, &out.headers)
                .unwrap_or_else(|| panic!("{name}: no id"));
            assert!(!id.is_empty(), "{name}");
            if source.event_type.is_some() {
                assert_eq!(
                    event_type(source, &out.body, &out.headers).as_deref(),
                    Some(event.event_type.as_str()),
                    "{name}: the type is where the source reads it"
                );
            }
        }
    }

    #[test]
    fn stripe_sample_is_realistic() {
        let sources = sources();
        let stripe = sources.get("stripe").expect("stripe");
        let e = sample(stripe, None, None, NOW).expect("sample");
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
        )
        .expect("sample");
        let v2: Value = serde_json::from_slice(&e2.body).expect("json");
        assert_eq!(v2["id"], "evt_fixed");
        assert_eq!(v2["data"]["object"]["object"], "payment_intent");
        assert_ne!(
            sample(stripe, None, None, NOW).expect("sample").msg_id,
            e.msg_id,
            "ids are random"
        );
    }

    #[test]
    fn headers_the_configuration_reads_are_added() {
        let sources = sources();
        let gh = sources.get("github").expect("github");
        let e = sample(gh, None, None, NOW).expect("sample");
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
        let m = to_map(&headers(
            shop,
            &sample(shop, None, None, NOW).expect("sample"),
            NOW,
        ));
        assert_eq!(m["x-shopify-topic"], "orders/create");
        assert!(m.contains_key("x-shopify-webhook-id"));

        let mailer = sources.get("mailer").expect("mailer");
        let e = sample(mailer, None, None, NOW).expect("sample");
        let m = to_map(&headers(mailer, &e, NOW));
        assert!(e.msg_id.starts_with("msg_"));
        assert_eq!(m["webhook-id"], e.msg_id.as_str());

        let custom = sources.get("custom").expect("custom");
        let e = sample(custom, Some("c-1"), Some("invoice.paid"), NOW).expect("sample");
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
