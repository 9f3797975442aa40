//! The reference MAC of every HMAC scheme, computed here from the providers' documented signed
//! content with `hmac`/`sha2` (and aws-lc's HMAC-SHA1 for Twilio), without the schemes' code; and
//! the target `fuzz_a_signature_passes_only_if_it_is_the_reference_mac`: a random key, body,
//! timestamp and id, the reference signature damaged at random (cut short, prefixed, suffixed,
//! emptied, a character replaced, its case changed, replaced by another MAC, beside a decoy),
//! must pass exactly when what is sent decodes to the reference MAC and the timestamp is within
//! the tolerance. Also: no empty secret makes a MAC anyone can compute.

use base64::Engine as _;
use proptest::prelude::*;
use proptest::sample::Index;

use super::super::*;
use super::outcome;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const URL: &str = "https://hooks.example.com/webhooks/x?y=1";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Enc {
    Hex,
    Base64,
}

/// What one request signs: a timestamp, an id (Standard Webhooks' `webhook-id`, Mailgun's token),
/// the body, and for Twilio the form parameters the body encodes.
#[derive(Debug, Clone)]
struct Msg {
    ts: i64,
    id: String,
    body: Vec<u8>,
    params: Vec<(String, String)>,
}

/// A scheme as its provider documents it.
struct Model {
    name: &'static str,
    settings: fn() -> Value,
    /// The configured secret for these key bytes (raw: the bytes are visible ASCII, used as-is).
    secret: fn(&[u8]) -> String,
    sha1: bool,
    enc: Enc,
    /// The signed content.
    content: fn(&Msg) -> Vec<u8>,
    /// The request carrying these signature texts (schemes with one signature use the last).
    request: fn(&Msg, &[String]) -> (HeaderMap, Vec<u8>),
    timestamped: bool,
    /// Several signatures allowed; `true` in `strict`: every one must be usable (Paddle).
    multi: bool,
    strict: bool,
}

fn raw(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

fn joined(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn one(name: &'static str, value: String) -> HeaderMap {
    headers(&[(name, &value)])
}

fn last(sigs: &[String]) -> &str {
    sigs.last().map_or("", String::as_str)
}

const MODELS: &[Model] = &[
    Model {
        name: "stripe",
        settings: || json!({}),
        secret: raw,
        sha1: false,
        enc: Enc::Hex,
        content: |m| joined(&[format!("{}.", m.ts).as_bytes(), &m.body]),
        request: |m, sigs| {
            let items: Vec<String> = sigs.iter().map(|s| format!("v1={s}")).collect();
            let value = format!("t={},{}", m.ts, items.join(","));
            (one("Stripe-Signature", value), m.body.clone())
        },
        timestamped: true,
        multi: true,
        strict: false,
    },
    Model {
        name: "paddle",
        settings: || json!({}),
        secret: raw,
        sha1: false,
        enc: Enc::Hex,
        content: |m| joined(&[format!("{}:", m.ts).as_bytes(), &m.body]),
        request: |m, sigs| {
            let items: Vec<String> = sigs.iter().map(|s| format!("h1={s}")).collect();
            let value = format!("ts={};{}", m.ts, items.join(";"));
            (one("Paddle-Signature", value), m.body.clone())
        },
        timestamped: true,
        multi: true,
        strict: true,
    },
    Model {
        name: "standard-webhooks",
        settings: || json!({}),
        secret: |key| format!("whsec_{}", B64.encode(key)),
        sha1: false,
        enc: Enc::Base64,
        content: |m| joined(&[format!("{}.{}.", m.id, m.ts).as_bytes(), &m.body]),
        request: |m, sigs| {
            let entries: Vec<String> = sigs.iter().map(|s| format!("v1,{s}")).collect();
            let map = headers(&[
                ("webhook-id", &m.id),
                ("webhook-timestamp", &m.ts.to_string()),
                ("webhook-signature", &entries.join(" ")),
            ]);
            (map, m.body.clone())
        },
        timestamped: true,
        multi: true,
        strict: false,
    },
    Model {
        name: "github",
        settings: || json!({}),
        secret: raw,
        sha1: false,
        enc: Enc::Hex,
        content: |m| m.body.clone(),
        request: |m, sigs| {
            let value = format!("sha256={}", last(sigs));
            (one("X-Hub-Signature-256", value), m.body.clone())
        },
        timestamped: false,
        multi: false,
        strict: false,
    },
    Model {
        name: "shopify",
        settings: || json!({}),
        secret: raw,
        sha1: false,
        enc: Enc::Base64,
        content: |m| m.body.clone(),
        request: |m, sigs| {
            let value = last(sigs).to_owned();
            (one("X-Shopify-Hmac-Sha256", value), m.body.clone())
        },
        timestamped: false,
        multi: false,
        strict: false,
    },
    Model {
        name: "hmac-sha256",
        settings: || json!({"header": "X-Sig", "encoding": "hex", "prefix": "sha256="}),
        secret: raw,
        sha1: false,
        enc: Enc::Hex,
        content: |m| m.body.clone(),
        request: |m, sigs| {
            (
                one("X-Sig", format!("sha256={}", last(sigs))),
                m.body.clone(),
            )
        },
        timestamped: false,
        multi: false,
        strict: false,
    },
    Model {
        name: "hmac-sha256",
        settings: || json!({"header": "X-Sig", "encoding": "base64"}),
        secret: raw,
        sha1: false,
        enc: Enc::Base64,
        content: |m| m.body.clone(),
        request: |m, sigs| (one("X-Sig", last(sigs).to_owned()), m.body.clone()),
        timestamped: false,
        multi: false,
        strict: false,
    },
    Model {
        name: "slack",
        settings: || json!({}),
        secret: raw,
        sha1: false,
        enc: Enc::Hex,
        content: |m| joined(&[format!("v0:{}:", m.ts).as_bytes(), &m.body]),
        request: |m, sigs| {
            let map = headers(&[
                ("X-Slack-Request-Timestamp", &m.ts.to_string()),
                ("X-Slack-Signature", &format!("v0={}", last(sigs))),
            ]);
            (map, m.body.clone())
        },
        timestamped: true,
        multi: false,
        strict: false,
    },
    Model {
        name: "zoom",
        settings: || json!({}),
        secret: raw,
        sha1: false,
        enc: Enc::Hex,
        content: |m| joined(&[format!("v0:{}:", m.ts).as_bytes(), &m.body]),
        request: |m, sigs| {
            let map = headers(&[
                ("x-zm-request-timestamp", &m.ts.to_string()),
                ("x-zm-signature", &format!("v0={}", last(sigs))),
            ]);
            (map, m.body.clone())
        },
        timestamped: true,
        multi: false,
        strict: false,
    },
    Model {
        name: "square",
        settings: || json!({ "url": URL }),
        secret: raw,
        sha1: false,
        enc: Enc::Base64,
        content: |m| joined(&[URL.as_bytes(), &m.body]),
        request: |m, sigs| {
            let value = last(sigs).to_owned();
            (one("x-square-hmacsha256-signature", value), m.body.clone())
        },
        timestamped: false,
        multi: false,
        strict: false,
    },
    Model {
        name: "mailgun",
        settings: || json!({}),
        secret: raw,
        sha1: false,
        enc: Enc::Hex,
        content: |m| joined(&[m.ts.to_string().as_bytes(), m.id.as_bytes()]),
        request: |m, sigs| {
            let body = json!({
                "signature": {"timestamp": m.ts.to_string(), "token": m.id, "signature": last(sigs)},
                "event-data": {"event": "delivered", "id": "e"},
            });
            (HeaderMap::new(), body.to_string().into_bytes())
        },
        timestamped: true,
        multi: false,
        strict: false,
    },
    Model {
        name: "twilio",
        settings: || json!({ "url": URL }),
        secret: raw,
        sha1: true,
        enc: Enc::Base64,
        content: twilio_content,
        request: |m, sigs| {
            (
                one("X-Twilio-Signature", last(sigs).to_owned()),
                m.body.clone(),
            )
        },
        timestamped: false,
        multi: false,
        strict: false,
    },
    Model {
        name: "twilio",
        settings: || json!({ "url": URL }),
        secret: raw,
        sha1: false,
        enc: Enc::Base64,
        content: twilio_content,
        request: |m, sigs| {
            let map = headers(&[
                ("X-Twilio-Signature", last(sigs)),
                (
                    "X-Twilio-Webhooks-Signature-Settings",
                    "algorithm=HMAC_SHA256",
                ),
            ]);
            (map, m.body.clone())
        },
        timestamped: false,
        multi: false,
        strict: false,
    },
];

/// Twilio's documented content: the URL, then each parameter's name and value, sorted, without
/// repeats (computed from the parameters, not by parsing the body).
fn twilio_content(m: &Msg) -> Vec<u8> {
    let mut params = m.params.clone();
    params.sort();
    params.dedup();
    let mut out = URL.as_bytes().to_vec();
    for (name, value) in params {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// The reference MAC.
fn mac(model: &Model, key: &[u8], content: &[u8]) -> Vec<u8> {
    if model.sha1 {
        let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, key);
        aws_lc_rs::hmac::sign(&key, content).as_ref().to_vec()
    } else {
        reference_mac(key, content)
    }
}

fn encode(enc: Enc, bytes: &[u8]) -> String {
    match enc {
        Enc::Hex => hex::encode(bytes),
        Enc::Base64 => B64.encode(bytes),
    }
}

/// Whether a signature text decodes to `expected` (hex in either case; canonical padded base64).
fn decodes_to(enc: Enc, text: &str, expected: &[u8]) -> bool {
    decoded_len(enc, text) == Some(expected.len())
        && decoded(enc, text).as_deref() == Some(expected)
}

fn decoded(enc: Enc, text: &str) -> Option<Vec<u8>> {
    match enc {
        Enc::Hex => hex::decode(text).ok(),
        Enc::Base64 => B64.decode(text).ok(),
    }
}

fn decoded_len(enc: Enc, text: &str) -> Option<usize> {
    decoded(enc, text).map(|d| d.len())
}

/// What is done to the reference signature text.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Cut(Index),
    Prefix(String),
    Suffix(String),
    Replace(Index, char),
    Case(Index),
    Empty,
    Another([u8; 32]),
    Random(String),
}

/// Signature characters (no separator or whitespace of any header format, so that a damaged
/// signature stays one signature).
const SHORT: &str = "[0-9a-zA-Z+/=_-]{1,4}";
const ANY_LENGTH: &str = "[0-9a-zA-Z+/=_-]{0,90}";

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => Just(Damage::None),
        2 => any::<Index>().prop_map(Damage::Cut),
        1 => SHORT.prop_map(Damage::Prefix),
        1 => SHORT.prop_map(Damage::Suffix),
        1 => (any::<Index>(), prop::sample::select(b"0aF+/=A".to_vec()))
            .prop_map(|(i, c)| Damage::Replace(i, char::from(c))),
        1 => any::<Index>().prop_map(Damage::Case),
        1 => Just(Damage::Empty),
        1 => any::<[u8; 32]>().prop_map(Damage::Another),
        1 => ANY_LENGTH.prop_map(Damage::Random),
    ]
}

fn damaged(model: &Model, reference: &str, damage: &Damage) -> String {
    let mut text = reference.to_owned();
    match damage {
        Damage::None => {}
        Damage::Cut(i) => text.truncate(i.index(text.len())),
        Damage::Prefix(p) => text.insert_str(0, p),
        Damage::Suffix(s) => text.push_str(s),
        Damage::Replace(i, c) => {
            let at = i.index(text.len());
            text.replace_range(at..=at, &c.to_string());
        }
        Damage::Case(i) => {
            let at = i.index(text.len());
            let c = text.as_bytes()[at];
            let swapped = if c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            text.replace_range(at..=at, &char::from(swapped).to_string());
        }
        Damage::Empty => text.clear(),
        Damage::Another(bytes) => text = encode(model.enc, &bytes[..reference_len(model)]),
        Damage::Random(r) => text = r.clone(),
    }
    text
}

fn reference_len(model: &Model) -> usize {
    if model.sha1 {
        20
    } else {
        32
    }
}

fn message() -> impl Strategy<Value = Msg> {
    (
        1_600_000_000i64..1_900_000_000,
        "[a-zA-Z0-9_.-]{1,24}",
        prop::collection::vec(any::<u8>(), 0..200),
        prop::collection::vec(("[a-zA-Z0-9]{1,6}", "[ -~]{0,8}"), 0..5),
    )
        .prop_map(|(ts, id, body, params)| Msg {
            ts,
            id,
            body,
            params,
        })
}

/// The message's body as the model sends it (Twilio: its parameters, form-encoded; Mailgun: an
/// event, which its signature does not cover).
fn with_body(model: &Model, mut m: Msg) -> Msg {
    if model.name == "mailgun" {
        m.body = br#"{"event-data":{"event":"delivered","id":"e"}}"#.to_vec();
    }
    if model.name == "twilio" {
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (name, value) in &m.params {
            form.append_pair(name, value);
        }
        m.body = form.finish().into_bytes();
    }
    m
}

proptest! {
    #![proptest_config(crate::fuzz::config(96))]

    #[test]
    fn fuzz_a_signature_passes_only_if_it_is_the_reference_mac(
        which in any::<Index>(),
        key in "[!-~]{1,40}",
        msg in message(),
        damage in damage(),
        decoy in prop::option::of(damage()),
        skew in -310i64..310,
    ) {
        let model = &MODELS[which.index(MODELS.len())];
        let msg = with_body(model, msg);
        let secret = (model.secret)(key.as_bytes());
        let scheme = try_scheme(model.name, (model.settings)(), &[&secret], TOLERANCE).unwrap();
        let expected = mac(model, key.as_bytes(), &(model.content)(&msg));
        let reference = encode(model.enc, &expected);
        let candidate = damaged(model, &reference, &damage);
        let mut sigs = Vec::new();
        if let (true, Some(decoy)) = (model.multi, &decoy) {
            sigs.push(damaged(model, &reference, decoy));
        }
        sigs.push(candidate);
        let (headers, body) = (model.request)(&msg, &sigs);
        let result = outcome(&*scheme, &headers, &body, msg.ts + skew);
        let usable = |s: &String| decoded_len(model.enc, s) == Some(expected.len());
        let matched = sigs.iter().any(|s| decodes_to(model.enc, s, &expected))
            && (!model.strict || sigs.iter().all(usable));
        let in_time = !model.timestamped || skew.abs() <= 300;
        prop_assert_eq!(
            result.is_ok(),
            matched && in_time,
            "{} {:?}: {:?} for {:?}", model.name, (model.settings)(), result, sigs
        );
        if matched && !in_time {
            prop_assert!(
                matches!(result, Err(SignatureError::TimestampTooOld { .. } | SignatureError::TimestampInFuture { .. })),
                "{}: {:?}", model.name, result
            );
        }
        // What the scheme signs is the reference signature (Twilio signs with SHA-1 only).
        if matches!(damage, Damage::None) && (model.name != "twilio" || model.sha1) {
            let signed = scheme.sign(&Unsigned::new(&msg.body, msg.ts, &msg.id)).unwrap();
            if model.name == "mailgun" {
                let body: Value = serde_json::from_slice(&signed.body.unwrap()).unwrap();
                prop_assert_eq!(&body["signature"]["signature"], &json!(reference));
            } else {
                let map = signed.header_map();
                let (wanted, _) = (model.request)(&msg, std::slice::from_ref(&reference));
                for (name, value) in &wanted {
                    prop_assert_eq!(map.get(name), Some(value), "{}: {}", model.name, name);
                }
            }
        }
    }
}

#[test]
fn no_empty_secret_makes_a_mac_anyone_can_compute() {
    // Refused at configuration for every scheme; and where a scheme accepts a secret that is
    // empty only after its prefix (none should), a request signed with the empty key fails.
    for name in scheme_names() {
        let f = fixture(name);
        assert!(
            try_scheme(name, f.settings.clone(), &[""], TOLERANCE).is_err(),
            "{name}: an empty secret was accepted"
        );
    }
    let msg = Msg {
        ts: 1_700_000_000,
        id: "msg_1".into(),
        body: b"{}".to_vec(),
        params: vec![("a".into(), "b".into())],
    };
    for model in MODELS {
        for secret in ["", "whsec_", "whsec_=", "whsec_====", " ", "\t"] {
            let Ok(scheme) = try_scheme(model.name, (model.settings)(), &[secret], TOLERANCE)
            else {
                continue;
            };
            let msg = with_body(model, msg.clone());
            let empty = encode(model.enc, &mac(model, b"", &(model.content)(&msg)));
            let (headers, body) = (model.request)(&msg, &[empty]);
            assert!(
                outcome(&*scheme, &headers, &body, msg.ts).is_err(),
                "{}: the secret {secret:?} verifies the empty key's MAC",
                model.name
            );
        }
    }
    // Postmark's credential is `user:password`: an empty password is no secret.
    for secret in [":", "user:", ":password"] {
        assert!(
            try_scheme("postmark", json!({}), &[secret], TOLERANCE).is_err(),
            "postmark: {secret:?} was accepted"
        );
    }
}
