//! Sources from `WEBHOOK_SOURCES` and secrets: defaults, every form, errors, redaction.

use super::*;

const SECRETS: &str = r#"{"stripe": "whsec_abc", "mailer": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    "custom": ["k1", "k2"], "x": "whsec_c2VjcmV0"}"#;

fn secrets() -> HashMap<String, Vec<Secret>> {
    parse_secrets(SECRETS, vars::WEBHOOK_SECRETS).unwrap()
}

fn one(source_json: &str) -> Result<Source, ConfigError> {
    let sources = Sources::from_json(&format!(r#"{{"x": {source_json}}}"#), &secrets())?;
    Ok(sources.get("x").unwrap().clone())
}

#[test]
fn defaults_and_overrides() {
    let sources = Sources::from_json(
        r#"{
            "stripe": {"scheme": "stripe"},
            "mailer": {"scheme": "standard-webhooks", "tolerance_secs": 60},
            "custom": {"scheme": "hmac-sha256", "header": "X-Sig", "encoding": "base64",
                       "event_id": {"header": "X-Id"}, "event_type": {"json_pointer": "/kind"}}
        }"#,
        &secrets(),
    )
    .unwrap();
    assert_eq!(sources.names(), vec!["custom", "mailer", "stripe"]);
    let stripe = sources.get("stripe").unwrap();
    assert_eq!(stripe.scheme_name, "stripe");
    assert_eq!(stripe.event_id, FieldRule::json_pointer("/id"));
    assert_eq!(stripe.event_type, Some(FieldRule::json_pointer("/type")));
    assert!(stripe.needs_json());
    assert_eq!(stripe.kept_headers(), ["content-type", "stripe-signature"]);
    let mailer = sources.get("mailer").unwrap();
    assert_eq!(mailer.event_id, FieldRule::header("webhook-id"));
    assert!(format!("{:?}", mailer.scheme).contains("60s"));
    let custom = sources.get("custom").unwrap();
    assert_eq!(custom.event_id, FieldRule::header("X-Id"));
    assert_eq!(custom.event_type, Some(FieldRule::json_pointer("/kind")));
    assert_eq!(custom.kept_headers(), ["content-type", "x-id", "x-sig"]);
    assert!(sources.get("nope").is_none());
}

#[test]
fn a_mailgun_source_defaults_to_its_retry_window_unless_it_sets_a_tolerance() {
    let sources = Sources::from_json(
        r#"{"x": {"scheme": "mailgun"}, "custom": {"scheme": "mailgun", "tolerance_secs": 300},
            "stripe": {"scheme": "stripe"}}"#,
        &secrets(),
    )
    .unwrap();
    let debug = |name: &str| format!("{:?}", sources.get(name).unwrap().scheme);
    assert!(debug("x").contains("32400s"), "{}", debug("x"));
    assert!(debug("custom").contains("300s"), "{}", debug("custom"));
    assert!(debug("stripe").contains("300s"), "{}", debug("stripe"));
}

#[test]
fn every_form_of_a_source() {
    let ok = [
        (r#"{"scheme":"stripe"}"#, "stripe"),
        (r#"{"scheme":"standard-webhooks"}"#, "standard-webhooks"),
        (r#"{"scheme":"github"}"#, "github"),
        (r#"{"scheme":"shopify"}"#, "shopify"),
        (r#"{"scheme":"slack"}"#, "slack"),
        (
            r#"{"scheme":"hmac-sha256","header":"X-Signature","encoding":"hex","prefix":"sha256="}"#,
            "hmac-sha256",
        ),
        (
            r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"base64"}"#,
            "hmac-sha256",
        ),
        // Unknown members are ignored.
        (
            r#"{"scheme":"stripe","tolerance_secs":60,"other":1}"#,
            "stripe",
        ),
        (
            r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"base64","tolerance_secs":5,"event_id":"body_sha256","other":1}"#,
            "hmac-sha256",
        ),
    ];
    for (json, scheme) in ok {
        let source = one(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(source.scheme_name, scheme);
    }
    // Everything wrong with a source's settings names WEBHOOK_SOURCES.
    for json in [
        r#"{"scheme":"nope"}"#,
        r#"{}"#,
        r#"{"scheme":"Stripe"}"#,
        r#"{"scheme":"hmac-sha256","encoding":"hex"}"#,
        r#"{"scheme":"hmac-sha256","header":"X-Sig"}"#,
        r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"HEX"}"#,
        r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"base32"}"#,
        r#"{"scheme":"hmac-sha256","header":"X Sig","encoding":"hex"}"#,
        r#"{"scheme":"stripe","event_id":{"nope":"/id"}}"#,
    ] {
        let e = one(json).unwrap_err().to_string();
        assert!(e.contains("WEBHOOK_SOURCES"), "{json}: {e}");
    }
    let e = one(r#"{"scheme":"nope"}"#).unwrap_err().to_string();
    assert!(e.contains("\"nope\"") && e.contains("hmac-sha256"), "{e}");
}

#[test]
fn secret_problems_name_webhook_secrets_and_never_the_secret() {
    let secrets = parse_secrets(
        r#"{"stripe": [], "mailer": ["whsec_not base64 sup3r"], "gh": "ok"}"#,
        vars::WEBHOOK_SECRETS,
    )
    .unwrap();
    for (sources, source) in [
        (r#"{"stripe":{"scheme":"stripe"}}"#, "stripe"),
        (r#"{"mailer":{"scheme":"standard-webhooks"}}"#, "mailer"),
        (r#"{"nosecret":{"scheme":"github"}}"#, "nosecret"),
    ] {
        let e = Sources::from_json(sources, &secrets)
            .unwrap_err()
            .to_string();
        assert!(e.contains("WEBHOOK_SECRETS") && e.contains(source), "{e}");
        assert!(!e.contains("sup3r"), "{e}");
    }
    let e = Sources::from_json(r#"{"Bad Name":{"scheme":"github"}}"#, &secrets).unwrap_err();
    assert!(e.to_string().contains("WEBHOOK_SOURCES"));
}

#[test]
fn secret_parse_errors_do_not_echo_secrets() {
    let e = parse_secrets(
        r#"{"stripe": ["whsec_supersecret", 5]}"#,
        vars::WEBHOOK_SECRETS,
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("WEBHOOK_SECRETS"));
    assert!(!text.contains("supersecret"), "{text}");
    let e = parse_secrets(r#"{"stripe": "whsec_supersecret"#, vars::WEBHOOK_SECRETS).unwrap_err();
    assert!(!e.to_string().contains("supersecret"));
    let ok = parse_secrets(r#"{"a": "one", "b": ["x", "y"]}"#, vars::WEBHOOK_SECRETS).unwrap();
    assert_eq!(ok["a"], [Secret::from("one")]);
    assert_eq!(ok["b"], [Secret::from("x"), Secret::from("y")]);
}

#[test]
fn debug_of_secrets_schemes_and_sources_never_shows_a_secret() {
    let secrets = parse_secrets(
        r#"{"stripe": "whsec_hunter2", "mailer": "whsec_aHVudGVyMg==", "gh": ["hunter2", "hunter3"],
            "shop": "hunter2", "slack": "hunter2", "custom": "hunter2"}"#,
        vars::WEBHOOK_SECRETS,
    )
    .unwrap();
    let sources = Sources::from_json(
        r#"{"stripe": {"scheme": "stripe"}, "mailer": {"scheme": "standard-webhooks"},
            "gh": {"scheme": "github"}, "shop": {"scheme": "shopify"}, "slack": {"scheme": "slack"},
            "custom": {"scheme": "hmac-sha256", "header": "X-Sig", "encoding": "hex"}}"#,
        &secrets,
    )
    .unwrap();
    let texts = [
        format!("{secrets:?}"),
        format!("{sources:?}"),
        format!("{sources:#?}"),
    ];
    for text in &texts {
        assert!(
            !text.contains("hunter") && !text.contains("aHVudGVy"),
            "{text}"
        );
    }
    assert!(texts[1].contains("<redacted>"), "{}", texts[1]);
    for name in sources.names() {
        let scheme = &sources.get(name).unwrap().scheme;
        assert!(!format!("{scheme:?}").contains("hunter"));
    }
}

#[test]
fn field_rules_are_checked_at_start_up() {
    for (json, field) in [
        (
            r#"{"scheme":"github","event_type":{"header":"X GitHub Event"}}"#,
            "event_type",
        ),
        (
            r#"{"scheme":"stripe","event_id":{"header":"x:id"}}"#,
            "event_id",
        ),
        (
            r#"{"scheme":"stripe","event_id":{"json_pointer":"id"}}"#,
            "event_id",
        ),
    ] {
        let e = one(json).unwrap_err().to_string();
        assert!(
            e.contains("WEBHOOK_SOURCES") && e.contains(field) && e.contains("\"x\""),
            "{json}: {e}"
        );
    }
    // Checked before any secret is looked at: no secret for "y", yet the rule is what is reported.
    let e = Sources::from_json(
        r#"{"y":{"scheme":"github","event_id":{"header":"bad header"}}}"#,
        &secrets(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("WEBHOOK_SOURCES") && e.contains("event_id"),
        "{e}"
    );
}

#[test]
fn whether_a_source_id_is_signed() {
    let cases = [
        (r#"{"scheme":"stripe"}"#, true),
        (r#"{"scheme":"standard-webhooks"}"#, true),
        (r#"{"scheme":"github"}"#, false),
        (r#"{"scheme":"shopify"}"#, false),
        (r#"{"scheme":"slack"}"#, true),
        (
            r#"{"scheme":"github","event_id":{"json_pointer":"/hook_id"}}"#,
            true,
        ),
        (
            r#"{"scheme":"stripe","event_id":{"header":"Idempotency-Key"}}"#,
            false,
        ),
        (
            r#"{"scheme":"standard-webhooks","event_id":{"header":"Webhook-Id"}}"#,
            true,
        ),
        (
            r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"hex","event_id":{"header":"X-Id"}}"#,
            false,
        ),
        (
            r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"hex"}"#,
            true,
        ),
    ];
    for (json, signed) in cases {
        let source = one(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(source.id_signed, signed, "{json}");
    }
}

mod fuzz {
    //! `WEBHOOK_SOURCES` and `WEBHOOK_SECRETS` as anyone could write them: parsed or refused with
    //! an error, never a panic, and no error quotes a secret.
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const MARK: &str = "S3CRETmark";

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            prop::sample::select(vec![
                "stripe",
                "standard-webhooks",
                "hmac-sha256",
                "sns",
                "twilio",
                "postmark",
                "sendgrid",
                "discord",
                "hex",
                "base64",
                "sha256=",
                "X-Sig",
                "svix-",
                "/id",
                "",
                "https://hooks.example.com/x",
                "http://",
                "arn:aws:sns:us-east-1:1:t",
                "10.0.0.0/8",
                "::1/200",
                "*",
                "webhook-",
                "Ä",
            ])
            .prop_map(|s| json!(s)),
            "[ -~]{0,10}".prop_map(Value::String),
            prop_oneof![
                Just(json!(0)),
                Just(json!(-1)),
                Just(json!(u64::MAX)),
                Just(json!(1e300)),
                Just(json!(0.5)),
                Just(json!(true)),
                Just(Value::Null)
            ],
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..3)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "scheme",
                "tolerance_secs",
                "event_id",
                "event_type",
                "handshake",
                "batch",
                "header",
                "encoding",
                "prefix",
                "header_prefix",
                "url",
                "topic_arn",
                "allowed_ips",
                "json_pointer",
                "first_of",
                "body_sha256",
            ])
            .prop_map(str::to_owned),
            "[a-z_]{0,6}",
        ]
    }

    fn source() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(signature::scheme_names().collect::<Vec<_>>()),
            prop::collection::vec((key(), value()), 0..4),
        )
            .prop_map(|(scheme, members)| {
                let mut object: Map<String, Value> = members.into_iter().collect();
                object.entry("scheme").or_insert(json!(scheme));
                Value::Object(object)
            })
    }

    proptest! {
        #![proptest_config(crate::fuzz::config(128))]

        #[test]
        fn fuzz_webhook_sources_and_secrets_are_parsed_or_refused_without_quoting_a_secret(
            sources in prop::collection::vec(("[a-z0-9_.-]{0,8}", source()), 0..3),
            secret in "[ -~]{0,12}",
            cut in prop::option::of(any::<prop::sample::Index>()),
            raw in "[ -~]{0,40}",
        ) {
            let names: Vec<&String> = sources.iter().map(|(n, _)| n).collect();
            let object: Map<String, Value> = sources.iter().cloned().collect();
            let mut text = Value::Object(object).to_string();
            if let Some(cut) = cut {
                let mut at = cut.index(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.truncate(at);
            }
            let secret = format!("{MARK}{secret}");
            let secrets_json = json!(names.iter().map(|n| (n.to_string(), json!([secret.clone()]))).collect::<Map<_, _>>()).to_string();
            let secrets = parse_secrets(&secrets_json, vars::WEBHOOK_SECRETS).unwrap();
            if let Err(e) = Sources::from_json(&text, &secrets) {
                prop_assert!(!e.to_string().contains(MARK), "{}", e);
            }
            let _ = Sources::from_json(&raw, &secrets);
            // The secrets' own JSON, damaged: its errors never quote it.
            for damaged in [&secrets_json[..secrets_json.len() / 2], &format!("{secrets_json}{raw}")] {
                if let Err(e) = parse_secrets(damaged, vars::WEBHOOK_SECRETS) {
                    prop_assert!(!e.to_string().contains(MARK), "{}", e);
                }
            }
        }
    }
}
