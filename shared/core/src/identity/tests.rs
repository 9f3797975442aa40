//! Identity extraction: rules, JSON pointers, signed and unsigned ids, and the `unknown` type.

use super::*;
use http::HeaderValue;

#[test]
fn json_pointers() {
    let body = br#"{"a":{"b/c":["x",{"~d":"deep"}]},"n":null,"s":"str"}"#;
    let doc = JsonObject::parse(body, &["*"]).unwrap();
    assert_eq!(doc.lookup("/a/b~1c/1/~0d"), Ok(Some("deep".into())));
    assert_eq!(doc.lookup("/a/b~1c/0"), Ok(Some("x".into())));
    assert_eq!(doc.lookup("/a/b~1c/9"), Ok(None));
    assert_eq!(doc.lookup("/n"), Ok(None));
    assert_eq!(doc.lookup("/missing"), Ok(None));
    assert_eq!(doc.lookup("/s"), Ok(Some("str".into())));
    assert!(doc.lookup("/a").is_err());
    assert!(doc.lookup("no-slash").is_err());
}

#[test]
fn rules_deserialize_and_describe_themselves() {
    let cases: &[(&str, FieldRule, &str)] = &[
        (
            r#"{"json_pointer":"/id"}"#,
            FieldRule::json_pointer("/id"),
            "JSON pointer /id",
        ),
        (
            r#"{"header":"X-Id"}"#,
            FieldRule::header("X-Id"),
            "header X-Id",
        ),
        (r#""body_sha256""#, FieldRule::BodySha256, "the body hash"),
    ];
    for (json, rule, described) in cases {
        assert_eq!(&serde_json::from_str::<FieldRule>(json).unwrap(), rule);
        assert_eq!(rule.describe(), *described);
    }
    assert!(serde_json::from_str::<FieldRule>(r#""header""#).is_err());
}

fn header_map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.append(*k, HeaderValue::from_static(v));
    }
    map
}

#[test]
fn rules_are_checked_at_start_up() {
    assert!(FieldRule::header("X-GitHub-Delivery").check().is_ok());
    assert!(FieldRule::json_pointer("/data/id").check().is_ok());
    assert!(FieldRule::BodySha256.check().is_ok());
    let bad_header = FieldRule::header("X Event").check().unwrap_err();
    assert!(bad_header.contains("\"X Event\""), "{bad_header}");
    assert!(FieldRule::header("").check().is_err());
    let bad_pointer = FieldRule::json_pointer("id").check().unwrap_err();
    assert!(bad_pointer.contains("must start with `/`"), "{bad_pointer}");
    let long = FieldRule::header(&"é".repeat(500)).check().unwrap_err();
    assert!(long.len() < 200, "the input is shortened: {long}");
}

#[test]
fn signed_ids_by_header_pointer_and_hash() {
    let body = br#"{"id":42,"type":"a.b"}"#;
    let digest = BodyDigest::of(body);
    let headers = header_map(&[("x-id", " hdr-1 ")]);
    let got = identify(
        &FieldRule::header("X-Id"),
        true,
        Some(&FieldRule::json_pointer("/type")),
        &headers,
        body,
        &digest,
    );
    assert_eq!(got.event_id.as_str(), "hdr-1");
    assert_eq!(got.event_type.unwrap().as_str(), "a.b");
    assert_eq!((got.provider_id, got.unidentified), (None, None));
    let got = identify(
        &FieldRule::json_pointer("/id"),
        true,
        None,
        &headers,
        body,
        &digest,
    );
    assert_eq!((got.event_id.as_str(), got.event_type), ("42", None));
    // No JSON rule: the body is never parsed (it need not be JSON).
    let got = identify(
        &FieldRule::BodySha256,
        true,
        None,
        &headers,
        b"not json",
        &BodyDigest::of(b"not json"),
    );
    assert_eq!(got.event_id.as_str(), BodyDigest::of(b"not json").to_hex());
    assert_eq!(got.unidentified, None);
}

#[test]
fn an_unsigned_id_is_kept_beside_a_key_made_of_the_body_hash() {
    let body = br#"{"zen":"Keep it logically awesome."}"#;
    let digest = BodyDigest::of(body);
    let rule = FieldRule::header("x-github-delivery");
    let ty = FieldRule::header("x-github-event");
    let first = header_map(&[("x-github-delivery", "d-1"), ("x-github-event", "ping")]);
    let replay = header_map(&[("x-github-delivery", "d-2"), ("x-github-event", "ping")]);
    let a = identify(&rule, false, Some(&ty), &first, body, &digest);
    let b = identify(&rule, false, Some(&ty), &replay, body, &digest);
    assert_eq!(a.event_id.as_str(), digest.to_hex());
    assert_eq!(
        a.event_id, b.event_id,
        "a fresh delivery id is not a new event"
    );
    assert_eq!(a.provider_id.unwrap().as_str(), "d-1");
    assert_eq!(b.provider_id.unwrap().as_str(), "d-2");
    assert_eq!(a.event_type.unwrap().as_str(), "ping");
    // The header id is metadata: absent or invalid, the event is identified all the same.
    let none = identify(
        &rule,
        false,
        Some(&ty),
        &header_map(&[("x-github-event", "ping")]),
        body,
        &digest,
    );
    assert_eq!(
        (none.event_id.as_str(), none.provider_id, none.unidentified),
        (digest.to_hex().as_str(), None, None)
    );
}

/// (body, id rule, type rule, headers, the code of why, whether the id is the body hash)
type Case<'a> = (
    &'a [u8],
    &'a FieldRule,
    Option<&'a FieldRule>,
    &'a HeaderMap,
    &'a str,
    bool,
);

#[test]
fn what_cannot_be_read_makes_the_type_unknown_and_is_said() {
    let id = FieldRule::json_pointer("/id");
    let ty = FieldRule::json_pointer("/type");
    let none = HeaderMap::new();
    let x_id = FieldRule::header("x-id");
    let twice = {
        let mut m = HeaderMap::new();
        m.append("x-id", HeaderValue::from_static("a"));
        m.append("x-id", HeaderValue::from_static("b"));
        m
    };
    let cases: Vec<Case<'_>> = vec![
        (b"[1]", &id, Some(&ty), &none, "invalid_json", true),
        (b"{", &id, Some(&ty), &none, "invalid_json", true),
        (b"", &id, Some(&ty), &none, "invalid_json", true),
        (b"{}", &id, Some(&ty), &none, "missing_event_id", true),
        (
            br#"{"id":true,"type":"a"}"#,
            &id,
            Some(&ty),
            &none,
            "invalid_event_id",
            true,
        ),
        (
            br#"{"id":"a b","type":"a"}"#,
            &id,
            Some(&ty),
            &none,
            "invalid_event_id",
            true,
        ),
        (
            br#"{"id":"e"}"#,
            &id,
            Some(&ty),
            &none,
            "missing_event_type",
            false,
        ),
        (
            br#"{"id":"e","type":""}"#,
            &id,
            Some(&ty),
            &none,
            "invalid_event_type",
            false,
        ),
        (
            br#"{"id":"e","type":7.5}"#,
            &id,
            Some(&ty),
            &none,
            "invalid_event_type",
            false,
        ),
        (b"x", &x_id, None, &twice, "invalid_event_id", true),
        // The type needs JSON, the id does not: the id stands, the type is unknown.
        (
            b"not json",
            &FieldRule::BodySha256,
            Some(&ty),
            &none,
            "invalid_json",
            true,
        ),
    ];
    for (body, id_rule, ty_rule, headers, code, hashed) in cases {
        let digest = BodyDigest::of(body);
        let got = identify(id_rule, true, ty_rule, headers, body, &digest);
        let why = got
            .unidentified
            .clone()
            .unwrap_or_else(|| panic!("{got:?}"));
        assert_eq!(why.code(), code, "{why}");
        assert!(!why.to_string().is_empty());
        assert_eq!(got.event_type, Some(EventType::unknown()), "{why}");
        assert_eq!(got.event_id.as_str() == digest.to_hex(), hashed, "{why}");
    }
    // A readable id with an unreadable type keeps the provider's id.
    let body = br#"{"id":"evt_1"}"#;
    let got = identify(&id, true, Some(&ty), &none, body, &BodyDigest::of(body));
    assert_eq!(got.event_id.as_str(), "evt_1");
}

#[test]
fn pointers_descend_into_json_embedded_in_strings() {
    // An SNS notification: the SES event is a JSON document inside the `Message` string.
    let body = br#"{"Type":"Notification","Message":"{\"eventType\":\"Delivery\",\"mail\":{\"tags\":{\"t\":[\"acme\"]}}}","Text":"plain words","Arr":"[1,\"x\"]"}"#;
    let doc = JsonObject::parse(body, &["*"]).unwrap();
    assert_eq!(
        doc.lookup("/Message/eventType"),
        Ok(Some("Delivery".into()))
    );
    assert_eq!(
        doc.lookup("/Message/mail/tags/t/0"),
        Ok(Some("acme".into()))
    );
    assert_eq!(doc.lookup("/Arr/1"), Ok(Some("x".into())));
    assert_eq!(doc.lookup("/Message/missing"), Ok(None));
    assert_eq!(doc.lookup("/Text/eventType"), Ok(None), "not JSON inside");
    assert!(
        doc.lookup("/Message").unwrap().unwrap().starts_with('{'),
        "the string itself"
    );
    assert!(
        doc.lookup("/Message/mail").is_err(),
        "an object is not a value"
    );
}

#[test]
fn first_of_takes_the_first_rule_that_finds_a_value() {
    let rule: FieldRule = serde_json::from_str(
        r#"{"first_of":[{"json_pointer":"/Message/eventType"},{"json_pointer":"/Message/notificationType"},{"header":"X-Type"},{"json_pointer":"/Type"}]}"#,
    )
    .unwrap();
    assert!(rule.reads_json());
    assert_eq!(rule.headers(), ["X-Type"]);
    assert!(rule
        .describe()
        .starts_with("the first of JSON pointer /Message/eventType, "));
    let kind = |body: &[u8]| {
        let identity = identify(
            &FieldRule::BodySha256,
            true,
            Some(&rule),
            &HeaderMap::new(),
            body,
            &BodyDigest::of(body),
        );
        match identity.unidentified {
            Some(e) => Err(e),
            None => Ok(identity.event_type.map(|t| t.as_str().to_owned())),
        }
    };
    assert_eq!(
        kind(br#"{"Type":"Notification","Message":"{\"eventType\":\"Bounce\"}"}"#)
            .unwrap()
            .unwrap(),
        "Bounce"
    );
    assert_eq!(
        kind(br#"{"Type":"Notification","Message":"{\"notificationType\":\"Delivery\"}"}"#)
            .unwrap()
            .unwrap(),
        "Delivery"
    );
    assert_eq!(
        kind(br#"{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe"}"#)
            .unwrap()
            .unwrap(),
        "SubscriptionConfirmation"
    );
    assert_eq!(
        kind(br#"{"Message":"x"}"#).unwrap_err().code(),
        "missing_event_type"
    );
    assert_eq!(
        kind(br#"{"Type":"N","Message":"{\"eventType\":true}"}"#)
            .unwrap_err()
            .code(),
        "invalid_event_type"
    );
    assert!(!FieldRule::FirstOf(vec![FieldRule::BodySha256]).reads_json());
}

#[test]
fn only_the_members_a_rule_reads_are_kept_but_the_whole_body_is_validated() {
    let body = br#"{"id":"evt_1","data":{"big":[1,2,{"x":"y"}]},"type":"a.b","id":"evt_2"}"#;
    let doc = JsonObject::parse(body, &["id", "type"]).unwrap();
    assert_eq!(doc.0.len(), 3, "data skipped, both ids kept");
    assert_eq!(
        doc.lookup("/id"),
        Ok(Some("evt_2".into())),
        "the last one wins"
    );
    assert_eq!(doc.lookup("/type"), Ok(Some("a.b".into())));
    assert_eq!(doc.lookup("/data/big/0"), Ok(None), "not kept");
    // A syntax error in a skipped member, or after the object, still makes it invalid JSON.
    for bad in [
        &br#"{"id":"evt_1","data":{"big":[1,2,}],"type":"a"}"#[..],
        br#"{"id":"evt_1","type":"a"} trailing"#,
        br#"{"id":"evt_1","data":"\q"}"#,
    ] {
        assert!(
            matches!(
                JsonObject::parse(bad, &["id"]),
                Err(IdentityError::InvalidJson(_))
            ),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    let rule = FieldRule::FirstOf(vec![
        FieldRule::json_pointer("/a/b"),
        FieldRule::header("x"),
        FieldRule::json_pointer("/c~1d"),
    ]);
    let mut keys = Vec::new();
    rule.top_level_keys(&mut keys);
    assert_eq!(keys, vec!["a", "*"]);
}

mod fuzz {
    //! `identify` on any body and headers: never a panic, and always an id (the provider's,
    //! when the rule reads one, else the body's hash).
    use super::*;
    use proptest::prelude::*;

    fn rule() -> impl Strategy<Value = FieldRule> {
        let leaf = prop_oneof![
            "/[a-z~01/]{0,8}".prop_map(|p| FieldRule::json_pointer(&p)),
            "[a-z-]{1,8}".prop_map(|h| FieldRule::header(&h)),
            Just(FieldRule::BodySha256),
        ];
        leaf.prop_recursive(2, 6, 3, |inner| {
            prop::collection::vec(inner, 1..3).prop_map(FieldRule::FirstOf)
        })
    }

    proptest! {
        #![proptest_config(crate::fuzz::config(128))]

        #[test]
        fn fuzz_identify_takes_any_body_and_header(
            id_rule in rule(),
            type_rule in prop::option::of(rule()),
            signed in any::<bool>(),
            body in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..96),
                "\\{\"[a-z~/]{0,4}\":(\"[ -~]{0,12}\"|[0-9]{1,30}|null|\\{\"[a-z]{0,2}\":\"[ -~]{0,4}\"\\}),?\\}"
                    .prop_map(String::into_bytes),
            ],
            header in "[a-z-]{1,8}",
            value in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut headers = HeaderMap::new();
            if let (Ok(name), Ok(value)) =
                (http::HeaderName::from_bytes(header.as_bytes()), HeaderValue::from_bytes(&value))
            {
                headers.insert(name, value);
            }
            let digest = BodyDigest::of(&body);
            let identity = identify(&id_rule, signed, type_rule.as_ref(), &headers, &body, &digest);
            prop_assert!(!identity.event_id.as_str().is_empty());
            if !signed {
                prop_assert_eq!(identity.event_id.as_str(), digest.to_hex());
            }
        }
    }
}
