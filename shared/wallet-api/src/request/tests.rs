use super::*;
use serde_json::json;

fn tenant(t: &str) -> TenantId {
    TenantId::parse(t).unwrap()
}

#[test]
fn paths_route_with_any_prefix_and_methods_are_checked() {
    let ok = [
        ("GET", "/wallets/acme", Route::Wallet(tenant("acme"))),
        ("GET", "/wallets/acme/", Route::Wallet(tenant("acme"))),
        ("get", "/dev/wallets/acme", Route::Wallet(tenant("acme"))),
        (
            "POST",
            "/lambda-url/wallet-api/wallets/acme/holds",
            Route::Holds(tenant("acme")),
        ),
        (
            "POST",
            "/wallets/org%3Aacme.eu/holds/hold_1/release",
            Route::Release(tenant("org:acme.eu"), "hold_1".into()),
        ),
        (
            "POST",
            "/wallets/acme/checkout-sessions",
            Route::CheckoutSessions(tenant("acme")),
        ),
    ];
    for (method, path, route) in ok {
        assert_eq!(Route::of(method, path).unwrap(), route, "{method} {path}");
    }
    let refused = [
        ("GET", "/webhooks/stripe", "not_found", None),
        ("GET", "/wallets/acme/other", "not_found", None),
        ("GET", "/wallets/acme/holds/h/cancel", "not_found", None),
        ("POST", "/wallets/acme", "method_not_allowed", Some("GET")),
        (
            "GET",
            "/wallets/acme/holds",
            "method_not_allowed",
            Some("POST"),
        ),
        (
            "DELETE",
            "/wallets/acme/checkout-sessions",
            "method_not_allowed",
            Some("POST"),
        ),
        ("GET", "/wallets/%20acme", "invalid_request", None),
        ("GET", "/wallets//holds", "invalid_request", None),
    ];
    for (method, path, code, allow) in refused {
        let e = Route::of(method, path).unwrap_err();
        assert_eq!(e.code(), code, "{method} {path}: {e}");
        assert_eq!(e.response().header("allow"), allow, "{method} {path}");
    }
    let bad_tenant = Route::of("GET", "/wallets/%20acme").unwrap_err();
    assert_eq!(bad_tenant.response().body_json()["param"], "tenant");
}

#[test]
fn a_tenant_outside_the_grammar_is_a_400_naming_it_on_every_route() {
    let long = "x".repeat(wallet_ledger::MAX_TENANT_CHARS + 1);
    let bad = [
        ("ac%20me", "' '"),
        ("a%2Fb", "'/'"),
        ("..", "dot segment"),
        (".", "dot segment"),
        ("%2E%2E", "dot segment"),
        ("%C3%A9", "'é'"),
        ("acme%00", "'\\0'"),
        ("%FF", "'\u{fffd}'"),
        (long.as_str(), "the limit is 128"),
    ];
    for (segment, says) in bad {
        for (method, path) in [
            ("GET", format!("/wallets/{segment}")),
            ("POST", format!("/wallets/{segment}/holds")),
            ("POST", format!("/wallets/{segment}/holds/h1/release")),
            ("POST", format!("/wallets/{segment}/checkout-sessions")),
        ] {
            let e = Route::of(method, &path).unwrap_err();
            let r = e.response();
            let body = r.body_json();
            assert_eq!(r.status.as_u16(), 400, "{path}");
            assert_eq!(
                (body["error"].as_str(), body["param"].as_str()),
                (Some("invalid_request"), Some("tenant")),
                "{path}"
            );
            let message = body["message"].as_str().unwrap_or_default();
            assert!(message.contains(says), "{path}: {message}");
            assert!(message.contains("(in the path)"), "{path}: {message}");
        }
    }
    // At the limit, every character of the grammar: routed.
    let longest = format!("{}0.:_-", "A1z".repeat(41));
    assert_eq!(longest.len(), wallet_ledger::MAX_TENANT_CHARS);
    assert_eq!(
        Route::of("GET", &format!("/wallets/{longest}")).unwrap(),
        Route::Wallet(tenant(&longest))
    );
}

#[test]
fn the_canonical_route_is_the_same_whatever_the_prefix_or_encoding() {
    let a = Route::of("POST", "/lambda-url/wallet-api/wallets/ac%3Ame/holds").unwrap();
    let b = Route::of("POST", "/wallets/ac:me/holds/").unwrap();
    assert_eq!(a.canonical(), b.canonical());
    assert_eq!(a.canonical(), "POST /wallets/ac%3Ame/holds");
}

#[test]
fn idempotency_keys_are_bounded_and_printable() {
    let mut headers = http::HeaderMap::new();
    let param = |h: &http::HeaderMap| {
        IdempotencyKey::of(h)
            .map(|k| k.as_str().to_owned())
            .map_err(|e| (e.code(), e.response().body_json()["param"].clone()))
    };
    assert_eq!(
        param(&headers),
        Err(("invalid_request", json!("Idempotency-Key")))
    );
    headers.insert(IDEMPOTENCY_HEADER, " k-1 ".parse().unwrap());
    assert_eq!(param(&headers), Ok("k-1".to_owned()));
    headers.insert(IDEMPOTENCY_HEADER, "x".repeat(255).parse().unwrap());
    assert!(param(&headers).is_ok());
    headers.insert(IDEMPOTENCY_HEADER, "x".repeat(256).parse().unwrap());
    assert!(param(&headers).is_err());
    headers.insert(IDEMPOTENCY_HEADER, "  ".parse().unwrap());
    assert!(param(&headers).is_err());
}

fn map(v: serde_json::Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn hold_bodies_name_the_bad_field() {
    assert_eq!(
        HoldBody::parse(&map(json!({"message_id": "m1"}))).unwrap(),
        HoldBody {
            message_id: "m1".into(),
            amount: None,
            expires_in: None,
        }
    );
    assert_eq!(
        HoldBody::parse(&map(json!({"message_id": "m1", "expires_in": 3600})))
            .unwrap()
            .expires_in,
        Some(std::time::Duration::from_secs(3600))
    );
    for bound in [60, 604_800] {
        let body = json!({"message_id": "m1", "expires_in": bound});
        assert!(HoldBody::parse(&map(body)).is_ok(), "{bound}: within");
    }
    assert_eq!(
        HoldBody::parse(&map(json!({"message_id": "m1", "amount": 25})))
            .unwrap()
            .amount,
        Some(25)
    );
    for (body, param) in [
        (json!({}), "message_id"),
        (json!({"message_id": 5}), "message_id"),
        (json!({"message_id": ""}), "message_id"),
        (json!({"message_id": " m1"}), "message_id"),
        (json!({"message_id": "x".repeat(513)}), "message_id"),
        (json!({"message_id": "m1", "amount": 0}), "amount"),
        (json!({"message_id": "m1", "amount": -5}), "amount"),
        (json!({"message_id": "m1", "expires_in": 59}), "expires_in"),
        (
            json!({"message_id": "m1", "expires_in": 604_801}),
            "expires_in",
        ),
        (json!({"message_id": "m1", "expires_in": -60}), "expires_in"),
        (
            json!({"message_id": "m1", "expires_in": 90.5}),
            "expires_in",
        ),
        (
            json!({"message_id": "m1", "expires_in": "3600"}),
            "expires_in",
        ),
        (json!({"message_id": "m1", "amount": 1.5}), "amount"),
        (json!({"message_id": "m1", "amount": "5"}), "amount"),
        (
            json!({"message_id": "m1", "amount": 1_000_000_000_001_i64}),
            "amount",
        ),
        (json!({"message_id": "m1", "amout": 5}), "amout"),
    ] {
        let e = HoldBody::parse(&map(body.clone())).unwrap_err();
        assert_eq!(
            e.response().body_json()["param"],
            json!(param),
            "{body}: {e}"
        );
        assert_eq!(e.status(), 400);
    }
}

#[test]
fn checkout_bodies_name_the_bad_field() {
    let good = json!({"amount": 5000, "success_url": "https://a.example/ok", "cancel_url": "https://a.example/no"});
    let parsed = CheckoutBody::parse(&map(good.clone())).unwrap();
    assert_eq!((parsed.amount, parsed.save_payment_method), (5000, false));
    let mut saving = good.clone();
    saving["save_payment_method"] = json!(true);
    assert!(
        CheckoutBody::parse(&map(saving))
            .unwrap()
            .save_payment_method
    );
    for (field, value) in [
        ("amount", json!(null)),
        ("amount", json!(0)),
        ("success_url", json!(null)),
        ("success_url", json!("ftp://a.example")),
        ("cancel_url", json!("https://")),
        ("cancel_url", json!("https://a.example/ no")),
        ("save_payment_method", json!("yes")),
        ("customer", json!("cus_1")),
    ] {
        let mut body = good.clone();
        body[field] = value.clone();
        let e = CheckoutBody::parse(&map(body)).unwrap_err();
        assert_eq!(
            e.response().body_json()["param"],
            json!(field),
            "{field}={value}: {e}"
        );
    }
}

#[test]
fn bodies_are_objects_and_bounded() {
    let headers = http::HeaderMap::new();
    let req = |body: Option<&'static str>, b64: bool| ApiRequest {
        method: "POST",
        path: "/wallets/acme/holds",
        headers: Box::leak(Box::new(headers.clone())),
        body,
        body_is_base64: b64,
    };
    assert!(body_object(&req(None, false)).unwrap().is_empty());
    assert!(body_object(&req(Some(" \n"), false)).unwrap().is_empty());
    assert_eq!(
        body_object(&req(Some("eyJhIjoxfQ=="), true)).unwrap()["a"],
        1
    );
    for (body, b64) in [("[1]", false), ("{", false), ("not base64!", true)] {
        let e = body_object(&req(Some(body), b64)).unwrap_err();
        assert_eq!(e.response().body_json()["param"], "body", "{body}");
    }
    let big: &'static str =
        Box::leak(format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_BODY_BYTES)).into_boxed_str());
    assert_eq!(
        body_object(&req(Some(big), false)).unwrap_err().status(),
        413
    );
}

#[test]
fn canonical_json_sorts_keys_at_every_level() {
    let a: Value =
        serde_json::from_str(r#"{"b": {"y": 1, "x": [ {"d":1,"c":2} ]}, "a": "é"}"#).unwrap();
    assert_eq!(
        canonical_json(&a),
        r#"{"a":"é","b":{"x":[{"c":2,"d":1}],"y":1}}"#
    );
}
