//! Tests across every registered scheme, and of the shared helpers.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};

use super::headers::*;
use super::hmac::*;
use super::settings::*;
use super::stamp::*;
use super::tag::*;
use super::test_support::*;
use super::tolerance::*;
use super::*;

mod fuzz;

/// How the cross-scheme tests build a scheme: its settings and one secret. Most schemes need no
/// settings and take any secret; those that do not are listed in [`fixture`].
struct Fixture {
    settings: Value,
    /// A secret the scheme accepts (and signs with).
    secret: String,
    /// Another one (for tests of several secrets).
    other: String,
    /// The scheme signs inside a JSON body (the body sent is not the body given).
    signs_in_body: bool,
    /// The scheme keeps no header to re-verify a stored message (its credential is not kept).
    reverifiable: bool,
    /// Secrets are optional (a scheme whose keys are fetched).
    secrets_optional: bool,
    /// The signature covers the body (Mailgun's covers only a timestamp and a token).
    covers_body: bool,
    /// The body is form-encoded UTF-8 (Twilio signs its parameters).
    form_body: bool,
}

/// The fixture of scheme `name`.
fn fixture(name: &str) -> Fixture {
    let plain = |secret: &str, other: &str| Fixture {
        settings: json!({}),
        secret: secret.to_owned(),
        other: other.to_owned(),
        signs_in_body: false,
        reverifiable: true,
        secrets_optional: false,
        covers_body: true,
        form_body: false,
    };
    // "c2VjcmV0LXRleHQ=" is base64 of "secret-text": valid for every HMAC scheme.
    let default = plain("whsec_c2VjcmV0LXRleHQ=", "whsec_b3RoZXItc2VjcmV0");
    match name {
        "hmac-sha256" => Fixture {
            settings: json!({"header":"X-Sig","encoding":"hex","prefix":"sha256="}),
            ..default
        },
        "square" => Fixture {
            settings: json!({"url": "https://hooks.example.com/webhooks/x?y=1"}),
            ..default
        },
        "twilio" => Fixture {
            settings: json!({"url": "https://hooks.example.com/webhooks/x?y=1"}),
            form_body: true,
            ..default
        },
        // Basic auth: the credential is not kept, and it does not cover the body.
        "postmark" => Fixture {
            reverifiable: false,
            covers_body: false,
            ..plain("user:secret-text", "other:other-secret")
        },
        "discord" => plain(&test_keys::ed25519_hex(), &test_keys::ed25519_hex()),
        "sendgrid" => plain(
            &test_keys::p256_pkcs8_base64(),
            &test_keys::p256_pkcs8_base64(),
        ),
        "mailgun" => Fixture {
            signs_in_body: true,
            covers_body: false,
            ..default
        },
        "sns" => Fixture {
            settings: json!({"topic_arn": "arn:aws:sns:us-east-1:123456789012:ses-events"}),
            secret: super::sns::tests::identity_pem(),
            other: super::sns::tests::identity_pem(),
            signs_in_body: true,
            reverifiable: true,
            secrets_optional: true,
            covers_body: true,
            form_body: false,
        },
        _ => default,
    }
}

/// Keys the asymmetric schemes accept, generated per test run.
mod test_keys {
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{
        EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, ECDSA_P256_SHA256_ASN1_SIGNING,
    };
    use base64::Engine as _;

    /// An Ed25519 private key as seed ‖ public key, hex (Discord's local form).
    pub fn ed25519_hex() -> String {
        let seed: [u8; 32] = std::array::from_fn(|_| fastrand::u8(..));
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
        format!(
            "{}{}",
            hex::encode(seed),
            hex::encode(pair.public_key().as_ref())
        )
    }

    /// A P-256 private key, base64 PKCS#8 (SendGrid's local form).
    pub fn p256_pkcs8_base64() -> String {
        let doc =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new())
                .unwrap();
        base64::engine::general_purpose::STANDARD.encode(doc.as_ref())
    }
}

/// Every registered scheme with its fixture.
fn every_scheme() -> Vec<(&'static str, Fixture)> {
    scheme_names().map(|name| (name, fixture(name))).collect()
}

fn built(name: &str, fixture: &Fixture, secrets: &[&str]) -> std::sync::Arc<dyn Scheme> {
    try_scheme(name, fixture.settings.clone(), secrets, TOLERANCE)
        .unwrap_or_else(|e| panic!("{name}: {e} (does it need a fixture?)"))
}

/// Whether `text` shows any 12-character stretch of `secret`.
fn shows(text: &str, secret: &str) -> bool {
    let bytes = secret.as_bytes();
    bytes.len() >= 12
        && bytes
            .windows(12)
            .filter_map(|w| std::str::from_utf8(w).ok())
            .filter(|w| {
                !w.starts_with("-----") && !w.contains("PRIVATE") && !w.contains("CERTIFICATE")
            })
            .any(|w| text.contains(w))
}

#[test]
fn the_registry_holds_the_six_schemes_once_each() {
    let names: Vec<&str> = scheme_names().collect();
    for name in [
        "stripe",
        "standard-webhooks",
        "github",
        "shopify",
        "slack",
        "hmac-sha256",
    ] {
        assert_eq!(names.iter().filter(|n| **n == name).count(), 1, "{name}");
        assert!(check_registered(name).is_ok());
    }
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a name is registered twice");
    for name in names {
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{name:?}"
        );
    }
}

#[test]
fn unknown_scheme_names_the_known_ones() {
    let secrets = [Secret::from("s")];
    let settings = serde_json::Map::new();
    let e = super::build("Stripe", &Spec::new(&settings, &secrets, TOLERANCE)).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SchemeError::UnknownScheme { .. }), "{e:?}");
    assert!(
        text.contains("\"Stripe\"") && text.contains("stripe, standard-webhooks"),
        "{text}"
    );
    assert!(!e.is_about_secrets());
}

#[test]
fn the_sources_page_documents_every_scheme() {
    let page = include_str!("../../../../docs/sources.md");
    for name in scheme_names() {
        assert!(
            page.contains(&format!("| `{name}` |")),
            "docs/sources.md has no row for scheme {name:?} in its table of schemes"
        );
    }
}

#[test]
fn secret_debug_and_display_are_redacted() {
    let s = Secret::from_bytes(b"hunter2-very-secret".to_vec());
    assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
    assert_eq!(format!("{s}"), "Secret(<redacted>)");
    assert_eq!(format!("{:#?}", s.clone()), "Secret(<redacted>)");
    assert_eq!(s.expose(), b"hunter2-very-secret");
    let parsed: Vec<Secret> = serde_json::from_str(r#"["hunter2"]"#).unwrap();
    assert_eq!(parsed, [Secret::from("hunter2")]);
    assert_eq!(format!("{parsed:?}"), "[Secret(<redacted>)]");
}

#[test]
fn scheme_debug_reveals_no_secret() {
    for (name, f) in every_scheme() {
        let v = built(name, &f, &[&f.secret, &f.other]);
        for text in [format!("{v:?}"), format!("{v:#?}")] {
            assert!(!shows(&text, &f.secret), "{name}: {text}");
            assert!(!shows(&text, &f.other), "{name}: {text}");
            assert!(!text.contains("secret-text"), "{text}");
            assert!(text.contains("2 x <redacted>"), "{name}: {text}");
        }
    }
}

#[test]
fn error_codes() {
    let cases = [
        (SignatureError::Missing { header: "h" }, "signature_missing"),
        (
            SignatureError::Duplicated { header: "h" },
            "signature_header_duplicated",
        ),
        (
            SignatureError::Malformed {
                header: "h",
                reason: "r",
            },
            "signature_malformed",
        ),
        (
            SignatureError::TimestampTooOld {
                age_secs: 301,
                tolerance_secs: 300,
            },
            "timestamp_out_of_tolerance",
        ),
        (
            SignatureError::TimestampInFuture {
                ahead_secs: 301,
                tolerance_secs: 300,
            },
            "timestamp_out_of_tolerance",
        ),
        (SignatureError::Mismatch, "signature_invalid"),
    ];
    for (error, code) in cases {
        assert_eq!(error.code(), code, "{error:?}");
    }
}

#[test]
fn error_messages_name_the_header() {
    let m = SignatureError::Missing {
        header: "Stripe-Signature",
    }
    .to_string();
    assert!(m.contains("Stripe-Signature"), "{m}");
    let m = SignatureError::Duplicated {
        header: "webhook-id",
    }
    .to_string();
    assert!(
        m.contains("webhook-id") && m.contains("more than once"),
        "{m}"
    );
    let m = SignatureError::Malformed {
        header: "X-Slack-Signature",
        reason: "the signature is empty",
    }
    .to_string();
    assert!(
        m.contains("X-Slack-Signature") && m.contains("the signature is empty"),
        "{m}"
    );
    let m = SignatureError::TimestampTooOld {
        age_secs: 301,
        tolerance_secs: 300,
    }
    .to_string();
    assert!(
        m.contains("301") && m.contains("300") && m.contains("old"),
        "{m}"
    );
    let m = SignatureError::TimestampInFuture {
        ahead_secs: 400,
        tolerance_secs: 300,
    }
    .to_string();
    assert!(m.contains("400") && m.contains("future"), "{m}");
}

#[test]
fn secret_errors() {
    for (name, f) in every_scheme() {
        let none = try_scheme(name, f.settings.clone(), &[], TOLERANCE);
        if f.secrets_optional {
            assert!(none.is_ok(), "{name}");
        } else {
            assert!(matches!(none, Err(SchemeError::Empty)), "{name}");
        }
        let e = try_scheme(name, f.settings.clone(), &[&f.secret, ""], TOLERANCE).unwrap_err();
        assert!(
            matches!(e, SchemeError::Invalid { index: 1, .. }),
            "{name}: {e:?}"
        );
        assert!(e.is_about_secrets());
        assert!(!shows(&e.to_string(), &f.secret), "{name}: {e}");
        let secrets = [Secret::from_bytes(Vec::new())];
        let Value::Object(map) = &f.settings else {
            unreachable!()
        };
        assert!(
            matches!(
                super::build(name, &Spec::new(map, &secrets, TOLERANCE)),
                Err(SchemeError::Invalid { index: 0, .. })
            ),
            "{name}"
        );
    }
    assert_eq!(
        SchemeError::Empty.to_string(),
        "no signing secret is configured"
    );
}

#[test]
fn secrets_are_raw_bytes_unless_the_scheme_decodes_them() {
    let secrets = [Secret::from_bytes(vec![0, 1, 2, 255])];
    let settings = serde_json::Map::new();
    let v = super::build("github", &Spec::new(&settings, &secrets, TOLERANCE)).unwrap();
    let expected = hex::encode(reference_mac(&[0, 1, 2, 255], b"body"));
    let h = headers(&[("x-hub-signature-256", &format!("sha256={expected}"))]);
    assert_eq!(v.verify_at(&h, b"body", 0), Ok(()));
    assert!(format!("{v:?}").contains("1 x <redacted>"));
}

#[test]
fn signed_headers_per_scheme() {
    let cases: &[(&str, &[&str])] = &[
        ("stripe", &["stripe-signature"]),
        (
            "standard-webhooks",
            &["webhook-id", "webhook-timestamp", "webhook-signature"],
        ),
        (
            "github",
            &["x-hub-signature-256", "x-github-delivery", "x-github-event"],
        ),
        (
            "shopify",
            &[
                "x-shopify-hmac-sha256",
                "x-shopify-webhook-id",
                "x-shopify-topic",
            ],
        ),
        ("slack", &["x-slack-signature", "x-slack-request-timestamp"]),
    ];
    for (name, expected) in cases {
        let v = verifier(name, &["c2VjcmV0"]);
        assert_eq!(v.signed_headers(), *expected, "{name}");
    }
    let v = try_scheme(
        "hmac-sha256",
        json!({"header": "X-My-Signature", "encoding": "hex"}),
        &["c2VjcmV0"],
        TOLERANCE,
    )
    .unwrap();
    assert_eq!(v.signed_headers(), ["x-my-signature"]);
}

#[test]
fn default_rules_per_scheme() {
    let ptr = FieldRule::json_pointer;
    let hdr = FieldRule::header;
    let cases = [
        ("stripe", ptr("/id"), Some(ptr("/type"))),
        ("standard-webhooks", hdr("webhook-id"), Some(ptr("/type"))),
        (
            "github",
            hdr("x-github-delivery"),
            Some(hdr("x-github-event")),
        ),
        (
            "shopify",
            hdr("x-shopify-webhook-id"),
            Some(hdr("x-shopify-topic")),
        ),
        ("slack", FieldRule::BodySha256, None),
        ("hmac-sha256", FieldRule::BodySha256, None),
    ];
    for (name, id, kind) in cases {
        let f = fixture(name);
        let v = built(name, &f, &["c2VjcmV0"]);
        assert_eq!(v.default_event_id(), id, "{name}");
        assert_eq!(v.default_event_type(), kind, "{name}");
    }
}

/// A body the scheme can sign: any bytes, or a JSON object for the schemes that sign inside one.
fn body_for(f: &Fixture) -> &'static [u8] {
    if f.form_body {
        b"MessageStatus=delivered&To=%2B15558675310&Body=Z%C3%BCrich+%E2%9C%93"
    } else if f.signs_in_body {
        br#"{"event-data":{"event":"delivered"},"note":"Z\u00fcrich \u2713"}"#
    } else {
        BINARY_BODY
    }
}

#[test]
fn every_scheme_round_trips_and_signed_headers_cover_sign() {
    let mut cases = every_scheme();
    cases.push((
        "hmac-sha256",
        Fixture {
            settings: json!({"header": "X-Sig", "encoding": "base64"}),
            ..fixture("hmac-sha256")
        },
    ));
    for (name, f) in cases {
        let v = built(name, &f, &[&f.secret]);
        let (map, body) = v.sign_full(body_for(&f), 1_700_000_000, "msg_1");
        let kept = v.signed_headers();
        for header in map.keys() {
            assert!(kept.contains(header) || !f.reverifiable, "{name}: {header}");
        }
        assert_eq!(v.verify_at(&map, &body, 1_700_000_000), Ok(()), "{name}");
        // Re-verifying from only the kept headers works (what the store keeps).
        let kept_map: HeaderMap = map
            .iter()
            .filter(|(n, _)| kept.contains(n))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        if f.reverifiable {
            assert_eq!(
                v.verify_at(&kept_map, &body, 1_700_000_000),
                Ok(()),
                "{name}"
            );
        }
        let mut tampered = body.clone();
        match tampered.windows(9).position(|w| w == b"delivered") {
            Some(at) => tampered[at] = b'D',
            None => *tampered.last_mut().unwrap() ^= 0x01,
        }
        assert_eq!(
            v.verify_at(&map, &tampered, 1_700_000_000).is_err(),
            f.covers_body,
            "{name}: a changed body must not verify"
        );
        if !f.signs_in_body && f.covers_body {
            assert_eq!(
                v.verify_at(&map, b"other", 1_700_000_000),
                Err(SignatureError::Mismatch),
                "{name}"
            );
        }
        // Through the public path too.
        let signed = v
            .sign(&Unsigned::new(body_for(&f), 1_700_000_000, "msg_1"))
            .unwrap();
        let map = signed.header_map();
        let body = signed.body.clone().unwrap_or_else(|| body_for(&f).to_vec());
        let verdict = v.verify(Request::new(&map, &body, 1_700_000_000));
        assert!(
            matches!(verdict, Verdict::Ready(Ok(()))),
            "{name}: {verdict:?}"
        );
        let debug = format!("{signed:?}");
        for (_, value) in &signed.headers {
            assert!(!debug.contains(value.to_str().unwrap()), "{debug}");
        }
    }
}

#[test]
fn every_scheme_has_a_sample_that_signs_and_verifies() {
    const NOW: i64 = 1_796_032_800;
    for (name, f) in every_scheme() {
        let v = built(name, &f, &[&f.secret]);
        let s = samples_of(name, f.settings.clone());
        let id = s.sample_id();
        assert!(
            !id.is_empty() && id.bytes().all(|b| b.is_ascii_graphic()),
            "{name}: {id}"
        );
        assert_ne!(s.sample_id(), id, "{name}: ids are random");
        let kind = s.sample_type();
        let sample = s.sample(&id, kind, NOW);
        match sample.content_type {
            "application/json" | "text/plain; charset=UTF-8" => {
                let body: Value = serde_json::from_slice(&sample.body).unwrap();
                assert!(body.is_object() || body.is_array(), "{name}");
            }
            "application/x-www-form-urlencoded" => {
                assert!(form_urlencoded::parse(&sample.body).count() > 0, "{name}");
            }
            other => panic!("{name}: content type {other}"),
        }
        let (map, body) = v.sign_full(&sample.body, NOW, &id);
        assert_eq!(v.verify_at(&map, &body, NOW), Ok(()), "{name}");
    }
}

#[test]
fn samples_put_the_id_and_type_where_the_provider_does() {
    let stripe = samples_of("stripe", json!({}));
    let id = stripe.sample_id();
    assert!(id.starts_with("evt_") && id.len() == 28, "{id}");
    let body: Value =
        serde_json::from_slice(&stripe.sample(&id, "payment_intent.succeeded", 0).body).unwrap();
    assert_eq!(body["id"], json!(id));
    assert_eq!(body["type"], "payment_intent.succeeded");
    assert_eq!(body["data"]["object"]["object"], "payment_intent");
    assert_eq!(stripe.sample_type(), "checkout.session.completed");

    let mailer = samples_of("standard-webhooks", json!({}));
    assert!(mailer.sample_id().starts_with("msg_"));
    let body: Value =
        serde_json::from_slice(&mailer.sample("msg_1", "message.sent", 1_796_032_800).body)
            .unwrap();
    assert_eq!(body["type"], "message.sent");
    assert_eq!(body["timestamp"], "2026-11-30T10:00:00Z");
    assert_eq!(body["data"]["tenant"], "acme");

    let slack = samples_of("slack", json!({}));
    assert!(slack.sample_id().starts_with("Ev"));
    let body: Value = serde_json::from_slice(&slack.sample("Ev1", "app_mention", 5).body).unwrap();
    assert_eq!(
        (&body["event_id"], &body["event"]["type"]),
        (&json!("Ev1"), &json!("app_mention"))
    );

    for (name, kind) in [("github", "ping"), ("shopify", "orders/create")] {
        let v = samples_of(name, json!({}));
        assert_eq!(v.sample_type(), kind);
        assert!(uuid::Uuid::parse_str(&v.sample_id()).is_ok(), "{name}");
    }
}

#[test]
fn samples_are_built_per_source_from_the_registry() {
    // SNS's sample shows the source's topic.
    let topic = "arn:aws:sns:eu-west-1:123456789012:other-topic";
    let sns = samples_of("sns", json!({ "topic_arn": topic }));
    let body: Value = serde_json::from_slice(&sns.sample("m-1", "Bounce", 0).body).unwrap();
    assert_eq!(
        (&body["TopicArn"], &body["MessageId"]),
        (&json!(topic), &json!("m-1"))
    );
    let settings = serde_json::Map::new();
    let unknown = super::sampler("nope", &Spec::new(&settings, &[], TOLERANCE)).unwrap_err();
    assert!(
        matches!(&unknown, SchemeError::UnknownScheme { known, .. } if known.contains("sns")),
        "{unknown:?}"
    );
}

#[test]
fn debug_names_the_provider_of_a_preset() {
    for (name, shown) in [
        ("github", "Github"),
        ("shopify", "Shopify"),
        ("hmac-sha256", "HmacSha256"),
        ("slack", "Slack"),
        ("zoom", "Zoom"),
        ("stripe", "Stripe"),
        ("paddle", "Paddle"),
        ("discord", "Discord"),
        ("sendgrid", "Sendgrid"),
    ] {
        let f = fixture(name);
        let text = format!("{:?}", built(name, &f, &[&f.secret]));
        assert!(text.starts_with(&format!("{shown} {{")), "{name}: {text}");
    }
}

#[test]
fn rfc3339_dates() {
    for (secs, text) in [
        (0, "1970-01-01T00:00:00Z"),
        (1_796_032_800, "2026-11-30T10:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (1_709_251_199, "2024-02-29T23:59:59Z"),
        (-1, "1969-12-31T23:59:59Z"),
    ] {
        assert_eq!(rfc3339(secs), text, "{secs}");
    }
}

#[test]
fn request_and_unsigned_debug_show_no_values() {
    let h = headers(&[("stripe-signature", "t=1,v1=deadbeef")]);
    let r = Request::new(&h, b"payload", 7)
        .with_source_ip([127, 0, 0, 1].into())
        .with_url("https://example.com/x");
    let text = format!("{r:?}");
    assert!(
        text.contains("stripe-signature") && text.contains("body_len: 7"),
        "{text}"
    );
    assert!(
        !text.contains("deadbeef") && !text.contains("payload"),
        "{text}"
    );
    assert_eq!(r.url, Some("https://example.com/x"));
    let u = Unsigned::new(b"payload", 1, "id").with_url("https://example.com/x");
    assert!(!format!("{u:?}").contains("payload"));
}

#[tokio::test]
async fn pending_verdicts_are_awaited() {
    let ready: Verdict<'_> = Err(SignatureError::Mismatch).into();
    assert_eq!(ready.resolve().await, Err(SignatureError::Mismatch));
    let pending = Verdict::Pending(Box::pin(async { Ok(()) }));
    assert_eq!(format!("{pending:?}"), "Pending");
    assert_eq!(pending.resolve().await, Ok(()));
    assert!(Verdict::Pending(Box::pin(async { Ok(()) }))
        .ready()
        .is_none());
}

#[test]
fn single_header_rules() {
    let name = HeaderName::from_static("x-h");
    let table: &[(Pairs, Result<&str, SignatureError>)] = &[
        (&[], Err(SignatureError::Missing { header: "X-H" })),
        (
            &[("x-h", "a"), ("X-H", "b")],
            Err(SignatureError::Duplicated { header: "X-H" }),
        ),
        (&[("x-h", "")], Err(malformed("X-H", "the value is empty"))),
        (
            &[("x-h", " \t ")],
            Err(malformed("X-H", "the value is empty")),
        ),
        (&[("x-h", "  abc\t")], Ok("abc")),
        (&[("X-H", "abc")], Ok("abc")),
    ];
    for (pairs, expected) in table {
        let map = headers(pairs);
        assert_eq!(single_header(&map, &name, "X-H"), *expected, "{pairs:?}");
    }
    let mut map = HeaderMap::new();
    map.insert(
        name.clone(),
        HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
    );
    assert_eq!(
        single_header(&map, &name, "X-H"),
        Err(malformed("X-H", "the value is not visible ASCII"))
    );
}

#[test]
fn timestamp_parsing() {
    type Parsed<'a> = Result<(i64, &'a str), ()>;
    let table: &[(&str, Parsed)] = &[
        ("1614265330", Ok((1_614_265_330, "1614265330"))),
        ("0", Ok((0, "0"))),
        ("000", Ok((0, "0"))),
        ("007", Ok((7, "7"))),
        (
            "999999999999999999",
            Ok((999_999_999_999_999_999, "999999999999999999")),
        ),
        ("", Err(())),
        ("-5", Err(())),
        ("+5", Err(())),
        ("1.5", Err(())),
        ("12a", Err(())),
        (" 12", Err(())),
        ("1000000000000000000", Err(())),
        ("99999999999999999999999", Err(())),
    ];
    for (text, expected) in table {
        assert_eq!(parse_timestamp(text).map_err(|_| ()), *expected, "{text:?}");
    }
}

#[test]
fn tolerance_is_inclusive_and_symmetric() {
    let table = [
        (1000, 1000, Ok(())),
        (700, 1000, Ok(())),
        (1300, 1000, Ok(())),
        (
            699,
            1000,
            Err(SignatureError::TimestampTooOld {
                age_secs: 301,
                tolerance_secs: 300,
            }),
        ),
        (
            1301,
            1000,
            Err(SignatureError::TimestampInFuture {
                ahead_secs: 301,
                tolerance_secs: 300,
            }),
        ),
        (
            0,
            i64::MAX,
            Err(SignatureError::TimestampTooOld {
                age_secs: i64::MAX,
                tolerance_secs: 300,
            }),
        ),
        (
            i64::MAX,
            i64::MIN,
            Err(SignatureError::TimestampInFuture {
                ahead_secs: i64::MAX,
                tolerance_secs: 300,
            }),
        ),
    ];
    for (t, now, expected) in table {
        assert_eq!(check_tolerance(t, now, 300), expected, "t={t} now={now}");
    }
    assert_eq!(check_tolerance(5, 5, 0), Ok(()));
    assert!(check_tolerance(5, 6, 0).is_err());
    assert_eq!(check_tolerance(0, i64::MAX, i64::MAX), Ok(()));
    let huge = Tolerance::new(Duration::from_secs(u64::MAX));
    assert_eq!(huge.check(0, i64::MAX), Ok(()));
    assert_eq!(format!("{:?}", Tolerance::new(TOLERANCE)), "300s");
}

#[test]
fn hex_decoding() {
    let good = "ab".repeat(32);
    let upper = "AB".repeat(32);
    assert_eq!(decode_hex_tag(&good), Ok([0xab; 32]));
    assert_eq!(decode_hex_tag(&upper), Ok([0xab; 32]));
    let table: &[(String, &str)] = &[
        (String::new(), "the signature is empty"),
        ("ab".repeat(31), "the signature is not 32 bytes long"),
        ("ab".repeat(33), "the signature is not 32 bytes long"),
        (
            good[..63].to_owned(),
            "the signature has an odd number of hex digits",
        ),
        (
            format!("{}zz", "ab".repeat(31)),
            "the signature is not hexadecimal",
        ),
        (
            format!("0x{}", "ab".repeat(31)),
            "the signature is not hexadecimal",
        ),
        (
            format!("{} ", "ab".repeat(32)),
            "the signature is not hexadecimal",
        ),
    ];
    for (text, reason) in table {
        assert_eq!(decode_hex_tag(text), Err(*reason), "{text:?}");
    }
}

/// The table-driven decoder agrees with the `hex` crate on every byte value, in both places of
/// a digit pair.
#[test]
fn hex_decoding_agrees_with_the_hex_crate_on_every_byte() {
    for b in 0..=255u8 {
        for at in [0, 1, 63] {
            let mut text = "0f".repeat(32).into_bytes();
            text[at] = b;
            let Ok(text) = String::from_utf8(text) else {
                continue; // not a &str: the decoder never sees it
            };
            let mut expected = [0u8; 32];
            match hex::decode_to_slice(&text, &mut expected) {
                Ok(()) => assert_eq!(decode_hex_tag(&text), Ok(expected), "{text:?}"),
                Err(_) => assert_eq!(
                    decode_hex_tag(&text),
                    Err("the signature is not hexadecimal"),
                    "{text:?}"
                ),
            }
        }
    }
    let mixed = "0123456789abcdefABCDEF".repeat(3);
    let mut expected = [0u8; 32];
    hex::decode_to_slice(&mixed[..64], &mut expected).unwrap();
    assert_eq!(decode_hex_tag(&mixed[..64]), Ok(expected));
}

#[test]
fn base64_decoding() {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
    use base64::Engine as _;
    let tag = [0xfb; 32];
    assert_eq!(decode_base64_tag(&STANDARD.encode(tag)), Ok(tag));
    assert_eq!(base64_tag(&tag), STANDARD.encode(tag));
    let table: &[(String, &str)] = &[
        (String::new(), "the signature is empty"),
        (
            STANDARD.encode([1u8; 31]),
            "the signature is not 32 bytes long",
        ),
        (
            STANDARD.encode([1u8; 33]),
            "the signature is not 32 bytes long",
        ),
        (
            STANDARD.encode([1u8; 64]),
            "the signature is not 32 bytes long",
        ),
        (
            STANDARD.encode([1u8; 200]),
            "the signature is not 32 bytes long",
        ),
        (
            STANDARD.encode(tag)[..43].to_owned(),
            "the signature is not valid base64",
        ),
        (
            STANDARD_NO_PAD.encode(tag),
            "the signature is not valid base64",
        ),
        (URL_SAFE.encode(tag), "the signature is not valid base64"),
        (
            "not base64 at all!!".to_owned(),
            "the signature is not valid base64",
        ),
        ("====".to_owned(), "the signature is not valid base64"),
    ];
    for (text, reason) in table {
        assert_eq!(decode_base64_tag(text), Err(*reason), "{text:?}");
    }
}

#[test]
fn matches_checks_every_secret_against_every_candidate() {
    let secrets: Vec<Secret> = ["one", "two", "three"].map(Secret::from).to_vec();
    let keys = HmacKeys::raw(&secrets).unwrap();
    let parts: &[&[u8]] = &[b"ab", b"", b"cd"];
    let tag_of = |k: &str| -> Tag { reference_mac(k.as_bytes(), b"abcd").try_into().unwrap() };
    assert!(keys.matches(parts, [tag_of("one")].into_iter()));
    assert!(keys.matches(parts, [[0; 32], tag_of("three")].into_iter()));
    assert!(!keys.matches(parts, [[0; 32], tag_of("four")].into_iter()));
    assert!(!keys.matches(parts, std::iter::empty()));
    assert_eq!(
        keys.check(parts, std::iter::once(tag_of("four"))),
        Err(SignatureError::Mismatch)
    );
    assert_eq!(keys.sign(parts), tag_of("one"));
    assert_eq!(keys.count(), 3);
    assert_eq!(format!("{keys:?}"), "3 x <redacted>");
}

#[test]
fn interning_returns_the_same_str() {
    let a = intern("X-Interned-Test");
    let b = intern(&String::from("X-Interned-Test"));
    assert_eq!(a, "X-Interned-Test");
    assert!(std::ptr::eq(a, b));
}

#[test]
fn every_scheme_says_truly_which_values_its_signature_covers() {
    // Changing a header the scheme says it signs must fail verification, and one it says it does
    // not sign must not; where the scheme signs the whole body, a rule reading the body must be
    // declared signed. Checked on each scheme's default id and type rules, so a new scheme's
    // declaration is tested without being listed here (schemes that sign inside the body or
    // only some of it declare their pointers precisely, tested in their own files).
    const T: i64 = 1_700_000_000;
    for (name, f) in every_scheme() {
        let v = built(name, &f, &[&f.secret]);
        let (map, body) = v.sign_full(body_for(&f), T, "msg_1");
        assert_eq!(v.verify_at(&map, &body, T), Ok(()), "{name}");
        let rules = [Some(v.default_event_id()), v.default_event_type()];
        for rule in rules.into_iter().flatten() {
            match &rule {
                FieldRule::Header(h) => {
                    let mut changed = map.clone();
                    let header = HeaderName::from_bytes(h.as_bytes()).unwrap();
                    changed.insert(header, HeaderValue::from_static("another-value-0"));
                    let changed_fails = v.verify_at(&changed, &body, T).is_err();
                    assert_eq!(v.signs(&rule), changed_fails, "{name}: {rule:?}");
                }
                _ if f.covers_body && !f.signs_in_body && !f.form_body && f.reverifiable => {
                    let mut tampered = body.clone();
                    tampered.push(b' ');
                    assert!(v.verify_at(&map, &tampered, T).is_err(), "{name}");
                    assert!(v.signs(&rule), "{name}: {rule:?}");
                }
                _ => {}
            }
        }
    }
    // The declarations themselves, as the table of schemes (docs/sources.md) states them.
    let signed_id: Vec<(&str, bool)> = every_scheme()
        .iter()
        .map(|(name, f)| {
            let v = built(name, f, &[&f.secret]);
            (*name, v.signs(&v.default_event_id()))
        })
        .collect();
    for (name, expected) in [
        ("stripe", true),
        ("standard-webhooks", true),
        ("github", false),
        ("shopify", false),
        ("slack", true),
        ("hmac-sha256", true),
        ("sns", true),
        ("mailgun", true),
        ("paddle", true),
        ("square", true),
        ("sendgrid", true),
        ("discord", true),
        ("zoom", true),
        // Twilio's id is the hash of exactly the parameters its signature covers.
        ("twilio", true),
        ("postmark", false),
    ] {
        assert!(
            signed_id.contains(&(name, expected)),
            "{name}: {signed_id:?}"
        );
    }
}
