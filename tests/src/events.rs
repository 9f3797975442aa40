//! Requests as the ingest function receives them: real-shaped API Gateway HTTP API (payload 2.0)
//! events, and realistic Stripe event bodies of a chosen size.

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use serde_json::{json, Value};

/// A real-shaped API Gateway HTTP API (payload 2.0) event for `POST /webhooks/{source}`.
pub fn api_event(
    method: &str,
    source: &str,
    headers: &[(String, String)],
    body: Option<&str>,
    base64: bool,
) -> ApiGatewayV2httpRequest {
    let mut hdrs = serde_json::Map::new();
    hdrs.insert("content-type".into(), json!("application/json"));
    hdrs.insert(
        "host".into(),
        json!("abc123.execute-api.us-east-1.amazonaws.com"),
    );
    hdrs.insert(
        "user-agent".into(),
        json!("Stripe/1.0 (+https://stripe.com/docs/webhooks)"),
    );
    for (k, v) in headers {
        // API Gateway joins repeated headers with a comma, as here.
        let k = k.to_ascii_lowercase();
        let joined = match hdrs.get(&k).and_then(Value::as_str) {
            Some(prev) if k != "content-type" && k != "user-agent" => format!("{prev},{v}"),
            _ => v.clone(),
        };
        hdrs.insert(k, json!(joined));
    }
    let path = format!("/webhooks/{source}");
    let mut event = json!({
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": hdrs,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "192.0.2.10", "userAgent": "Stripe/1.0"},
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": "POST /webhooks/{source}",
            "stage": "$default",
            "time": "30/Nov/2026:10:00:00 +0000",
            "timeEpoch": 1_795_000_000_000_i64
        },
        "pathParameters": {"source": source},
        "isBase64Encoded": base64
    });
    if source.is_empty() {
        event["pathParameters"] = Value::Null;
    }
    if let Some(b) = body {
        event["body"] = json!(b);
    }
    serde_json::from_value(event).expect("a valid API Gateway v2 event")
}

/// A realistic Stripe event of about `size` bytes (padded in `data.object.metadata`).
pub fn stripe_event(id: &str, kind: &str, size: usize) -> String {
    let mut event = json!({
        "id": id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1_795_000_000,
        "data": {"object": {
            "id": "cs_test_a1b2c3", "object": "checkout.session", "amount_total": 2000, "currency": "usd",
            "customer": "cus_123", "mode": "payment", "payment_intent": "pi_123", "payment_status": "paid",
            "metadata": {"tenant": "acme"}
        }},
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": kind
    });
    let base = event.to_string().len();
    if size > base + 16 {
        event["data"]["object"]["metadata"]["padding"] = json!("x".repeat(size - base - 16));
    }
    event.to_string()
}

/// Realistic filler of about `bytes` bytes for an event body: line items with the shape of
/// providers' payloads (random ids, amounts, descriptions from a word list), deterministic for a
/// `seed`. Unlike a run of one repeated character it compresses as real JSON does (about 3x
/// with zstd), so storage figures measured with it mean something.
pub fn realistic_padding(bytes: usize, seed: u64) -> Value {
    const WORDS: [&str; 24] = [
        "monthly",
        "credits",
        "email",
        "plan",
        "starter",
        "growth",
        "volume",
        "tier",
        "sender",
        "domain",
        "overage",
        "annual",
        "seat",
        "bundle",
        "priority",
        "support",
        "dedicated",
        "ip",
        "warmup",
        "inbound",
        "parse",
        "webhook",
        "events",
        "archive",
    ];
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let id = |prefix: &str, len: usize, next: &mut dyn FnMut() -> u64| {
        let tail: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize] as char)
            .collect();
        format!("{prefix}{tail}")
    };
    let mut items = Vec::new();
    let mut size = 2;
    while size < bytes {
        let words: Vec<&str> = (0..3).map(|_| WORDS[(next() % 24) as usize]).collect();
        let item = json!({
            "id": id("li_", 24, &mut next),
            "object": "item",
            "amount_total": next() % 100_000,
            "currency": "usd",
            "description": words.join(" "),
            "quantity": 1 + next() % 5,
            "price": {"id": id("price_", 24, &mut next), "unit_amount": next() % 10_000,
                      "product": id("prod_", 14, &mut next), "recurring": null},
        });
        size += item.to_string().len() + 1;
        items.push(item);
    }
    Value::Array(items)
}

/// An email-delivery event of the `mailer` source (`message.accepted`: the wallet debits it) of
/// about `size` bytes, padded with [`realistic_padding`] in `data.items`.
pub fn mailer_event(message_id: &str, tenant: &str, size: usize) -> String {
    let mut event = json!({"type": "message.accepted",
                           "data": {"message_id": message_id, "tenant": tenant, "items": []}});
    let base = event.to_string().len();
    if size > base {
        event["data"]["items"] = realistic_padding(size - base, size as u64);
    }
    event.to_string()
}
