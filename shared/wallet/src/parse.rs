//! Tolerant parsing of the events that move money: amounts as numbers or numeric strings,
//! unknown fields ignored (the raw body stays in the table), and errors that say what is wrong.

use super::rules::{EmailEvent, PaymentEvent};
use serde_json::Value;

/// Why an event cannot move money (a permanent failure: the message is quarantined with this reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

fn unusable(s: impl Into<String>) -> Unusable {
    Unusable(s.into())
}

/// A Stripe event that concerns a wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentNotice {
    /// `metadata.tenant` of the object, when present (refunds may find it through the payment).
    pub tenant: Option<String>,
    /// The payment intent's id (or the checkout session's id when it has none).
    pub payment_key: String,
    /// Lower-case ISO currency.
    pub currency: Option<String>,
    pub event: PaymentEvent,
}

/// An email delivery event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailNotice {
    pub tenant: String,
    pub message_id: String,
    pub event: EmailEvent,
}

/// An amount in minor units: a JSON integer or a string of digits.
pub fn amount(v: &Value, field: &str) -> Result<i64, Unusable> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| unusable(format!("{field} is not an integer amount: {n}"))),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| unusable(format!("{field} is not an integer amount: {s:?}"))),
        Value::Null => Err(unusable(format!("{field} is missing"))),
        other => Err(unusable(format!("{field} is not an amount: {other}"))),
    }
    .and_then(|a| {
        if a < 0 {
            Err(unusable(format!("{field} is negative: {a}")))
        } else {
            Ok(a)
        }
    })
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

/// Parses the Stripe events the wallet handles; `Ok(None)` for other types.
pub fn stripe(event_type: &str, body: &Value) -> Result<Option<PaymentNotice>, Unusable> {
    let obj = &body["data"]["object"];
    if !obj.is_object() {
        return Err(unusable("data.object is missing"));
    }
    let tenant = text(&obj["metadata"]["tenant"]);
    let currency = text(&obj["currency"]).map(|c| c.to_ascii_lowercase());
    let notice = match event_type {
        "checkout.session.completed" => {
            if obj["payment_status"].as_str() == Some("unpaid") {
                // Paid later (async methods): `checkout.session.async_payment_succeeded` or the
                // payment intent's own event credits it.
                return Ok(None);
            }
            let payment_key = text(&obj["payment_intent"])
                .or_else(|| text(&obj["id"]))
                .ok_or_else(|| unusable("data.object has neither payment_intent nor id"))?;
            PaymentNotice {
                tenant,
                payment_key,
                currency,
                event: PaymentEvent::Paid {
                    amount: amount(&obj["amount_total"], "data.object.amount_total")?,
                },
            }
        }
        "payment_intent.succeeded" => {
            let payment_key =
                text(&obj["id"]).ok_or_else(|| unusable("data.object.id is missing"))?;
            let received = if obj["amount_received"].is_null() {
                &obj["amount"]
            } else {
                &obj["amount_received"]
            };
            PaymentNotice {
                tenant,
                payment_key,
                currency,
                event: PaymentEvent::Paid {
                    amount: amount(received, "data.object.amount_received")?,
                },
            }
        }
        "charge.refunded" => {
            let payment_key = text(&obj["payment_intent"])
                .or_else(|| text(&obj["id"]))
                .ok_or_else(|| unusable("data.object has neither payment_intent nor id"))?;
            PaymentNotice {
                tenant,
                payment_key,
                currency,
                event: PaymentEvent::Refunded {
                    total: amount(&obj["amount_refunded"], "data.object.amount_refunded")?,
                },
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(notice))
}

/// Parses an email delivery event (`message.sent`, `message.accepted`, `message.bounced`,
/// `message.deferred`, `message.complained`); `Ok(None)` for other types.
pub fn email(event_type: &str, body: &Value) -> Result<Option<EmailNotice>, Unusable> {
    let event = match event_type {
        "message.sent" => EmailEvent::Sent,
        "message.accepted" => EmailEvent::Accepted,
        "message.deferred" => EmailEvent::Deferred,
        "message.complained" => EmailEvent::Complained,
        "message.bounced" => {
            let kind = text(&body["data"]["bounce_type"]).map(|k| k.to_ascii_lowercase());
            match kind.as_deref() {
                Some("hard" | "permanent") => EmailEvent::Bounced { hard: true },
                Some("soft" | "transient") => EmailEvent::Bounced { hard: false },
                Some(other) => {
                    return Err(unusable(format!(
                        "data.bounce_type {other:?} is neither hard nor soft"
                    )))
                }
                None => return Err(unusable("data.bounce_type is missing")),
            }
        }
        _ => return Ok(None),
    };
    let data = &body["data"];
    let message_id =
        text(&data["message_id"]).ok_or_else(|| unusable("data.message_id is missing"))?;
    let tenant = text(&data["tenant"])
        .or_else(|| text(&data["metadata"]["tenant"]))
        .ok_or_else(|| unusable("data.tenant is missing"))?;
    Ok(Some(EmailNotice {
        tenant,
        message_id,
        event,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn amounts_are_numbers_or_numeric_strings() {
        assert_eq!(amount(&json!(2000), "a"), Ok(2000));
        assert_eq!(amount(&json!("2000"), "a"), Ok(2000));
        assert_eq!(amount(&json!(" 7 "), "a"), Ok(7));
        for bad in [
            json!(12.5),
            json!("12.5"),
            json!("x"),
            json!(null),
            json!([1]),
            json!(-1),
            json!("-3"),
        ] {
            assert!(amount(&bad, "a").is_err(), "{bad}");
        }
        assert_eq!(
            amount(&json!(null), "data.object.amount_total")
                .unwrap_err()
                .0,
            "data.object.amount_total is missing"
        );
    }

    #[test]
    fn stripe_events() {
        let session = json!({"data": {"object": {"id": "cs_1", "payment_intent": "pi_1", "amount_total": "2500",
            "currency": "USD", "payment_status": "paid", "metadata": {"tenant": "acme"}, "brand_new_field": {"x": 1}}}});
        let n = stripe("checkout.session.completed", &session)
            .unwrap()
            .unwrap();
        assert_eq!(
            n,
            PaymentNotice {
                tenant: Some("acme".into()),
                payment_key: "pi_1".into(),
                currency: Some("usd".into()),
                event: PaymentEvent::Paid { amount: 2500 }
            }
        );
        let intent = json!({"data": {"object": {"id": "pi_1", "amount": 2500, "amount_received": 2500, "currency": "usd", "metadata": {"tenant": "acme"}}}});
        assert_eq!(
            stripe("payment_intent.succeeded", &intent)
                .unwrap()
                .unwrap()
                .payment_key,
            "pi_1",
            "same key: credited once"
        );
        let refund = json!({"data": {"object": {"id": "ch_1", "payment_intent": "pi_1", "amount_refunded": 700, "currency": "usd", "metadata": {}}}});
        let r = stripe("charge.refunded", &refund).unwrap().unwrap();
        assert_eq!(
            (r.tenant, r.event),
            (None, PaymentEvent::Refunded { total: 700 })
        );
        let unpaid = json!({"data": {"object": {"id": "cs_2", "payment_status": "unpaid", "amount_total": 1}}});
        assert_eq!(stripe("checkout.session.completed", &unpaid), Ok(None));
        assert_eq!(stripe("customer.created", &session), Ok(None));
        assert!(stripe("payment_intent.succeeded", &json!({"data": {}})).is_err());
        let bad = json!({"data": {"object": {"id": "pi_1", "amount_received": "lots"}}});
        assert!(stripe("payment_intent.succeeded", &bad)
            .unwrap_err()
            .0
            .contains("amount_received"));
    }

    #[test]
    fn email_events() {
        let e = |t, data| email(t, &json!({"type": t, "data": data}));
        let base = json!({"message_id": "m1", "tenant": "acme"});
        assert_eq!(
            e("message.sent", base.clone()).unwrap().unwrap().event,
            EmailEvent::Sent
        );
        assert_eq!(
            e("message.accepted", base.clone()).unwrap().unwrap().event,
            EmailEvent::Accepted
        );
        assert_eq!(
            e("message.deferred", base.clone()).unwrap().unwrap().event,
            EmailEvent::Deferred
        );
        assert_eq!(
            e("message.complained", base.clone())
                .unwrap()
                .unwrap()
                .event,
            EmailEvent::Complained
        );
        let hard =
            json!({"message_id": "m1", "metadata": {"tenant": "acme"}, "bounce_type": "Hard"});
        assert_eq!(
            e("message.bounced", hard).unwrap().unwrap(),
            EmailNotice {
                tenant: "acme".into(),
                message_id: "m1".into(),
                event: EmailEvent::Bounced { hard: true }
            }
        );
        let soft = json!({"message_id": "m1", "tenant": "acme", "bounce_type": "soft"});
        assert_eq!(
            e("message.bounced", soft).unwrap().unwrap().event,
            EmailEvent::Bounced { hard: false }
        );
        assert!(
            e("message.bounced", base.clone()).is_err(),
            "a bounce must say which kind"
        );
        assert!(e("message.sent", json!({"tenant": "acme"}))
            .unwrap_err()
            .0
            .contains("message_id"));
        assert!(e("message.sent", json!({"message_id": "m1"}))
            .unwrap_err()
            .0
            .contains("tenant"));
        assert_eq!(e("message.opened", base), Ok(None));
    }
}
