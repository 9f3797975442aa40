//! Tolerant parsing of the events that move money: amounts as numbers or numeric strings (never
//! above the configured cap), unknown fields ignored (the raw body stays in the table), and errors
//! that say what is wrong. Stripe's events as Stripe sends them: a Checkout Session's
//! `payment_status` (`paid`, `unpaid` for delayed methods, `no_payment_required`), its async
//! outcomes, payment intents (whose `metadata` is the session's only if
//! `payment_intent_data.metadata` set it), charges with their cumulative `amount_refunded`, and
//! every event's `livemode`. Autopay's (saved methods, detached methods, attempts): [`crate::autopay::parse`].

use crate::autopay::parse as autopay;
use crate::balance::rules::{Bounce, EmailEvent, PaymentEvent};
use crate::tenant::TenantId;
use serde_json::Value;

/// The provider's customer and saved payment method (from its setup events or the operator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedMethod {
    pub customer: String,
    pub payment_method: String,
}

/// Why an event cannot move money (a permanent failure: the message is quarantined with this reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

fn unusable(s: impl Into<String>) -> Unusable {
    Unusable(s.into())
}

/// Which Stripe mode a source moves money for: an event's `livemode` must match it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StripeMode {
    Live,
    #[default]
    Test,
}

impl StripeMode {
    /// `live` or `test` (any case, surrounding spaces ignored).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "live" => Some(Self::Live),
            "test" => Some(Self::Test),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Test => "test",
        }
    }

    /// The mode an event's `livemode` names.
    pub fn of(livemode: bool) -> Self {
        if livemode {
            Self::Live
        } else {
            Self::Test
        }
    }
}

impl std::str::FromStr for StripeMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| format!("{s:?} is neither live nor test"))
    }
}

/// The `livemode` of a Stripe event (the event's own, else its object's); `None` when absent.
pub fn livemode(body: &Value) -> Option<bool> {
    body["livemode"]
        .as_bool()
        .or_else(|| body["data"]["object"]["livemode"].as_bool())
}

/// A Stripe event that concerns a wallet's payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentNotice {
    /// `metadata.tenant` of a checkout session or payment intent. Never read from a charge:
    /// refunds find their tenant through the payment they refund.
    pub tenant: Option<TenantId>,
    /// The payment intent's id (or the checkout session's id when it has none).
    pub payment_key: String,
    /// Lower-case ISO currency.
    pub currency: Option<String>,
    pub event: PaymentEvent,
    /// The autopay attempt the payment intent's `metadata.attempt` names.
    pub attempt: Option<String>,
    /// The method the payment saved for later (`setup_future_usage`), if it did.
    pub method: Option<SavedMethod>,
}

/// What a Stripe event the wallet handles means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StripeNotice {
    /// It concerns a payment.
    Payment(PaymentNotice),
    /// It moves no money, for this reason (e.g. a checkout that needed no payment).
    NoMoney(String),
    /// A payment method saved for autopay.
    Method(autopay::MethodNotice),
    /// This payment method was detached.
    Detached(String),
    /// A charge of an autopay attempt failed or was canceled.
    Unsettled(autopay::Unsettled),
}

impl From<autopay::AutopayNotice> for StripeNotice {
    fn from(n: autopay::AutopayNotice) -> Self {
        match n {
            autopay::AutopayNotice::Method(n) => Self::Method(n),
            autopay::AutopayNotice::NoMoney(reason) => Self::NoMoney(reason),
            autopay::AutopayNotice::Detached(pm) => Self::Detached(pm),
            autopay::AutopayNotice::Unsettled(n) => Self::Unsettled(n),
        }
    }
}

/// An amount in minor units no larger than `max` (`WALLET_MAX_AMOUNT`).
pub fn capped(v: &Value, field: &str, max: i64) -> Result<i64, Unusable> {
    let a = amount(v, field)?;
    if a > max {
        return Err(unusable(format!(
            "{field} {a} is above the largest accepted amount, {max} minor units \
             (WALLET_MAX_AMOUNT); refused"
        )));
    }
    Ok(a)
}

/// An id field: a string, or an expanded object's `id`.
pub(crate) fn id_of(v: &Value) -> Option<String> {
    text(v).or_else(|| text(&v["id"]))
}

/// The payment a session or charge belongs to: its payment intent, else its own id.
fn payment_key_of(obj: &Value) -> Result<String, Unusable> {
    id_of(&obj["payment_intent"])
        .or_else(|| text(&obj["id"]))
        .ok_or_else(|| unusable("data.object has neither payment_intent nor id"))
}

/// Parses the Stripe events the wallet handles; `Ok(None)` for other types. Amounts above `max`
/// (minor units) are refused.
pub fn stripe(event_type: &str, body: &Value, max: i64) -> Result<Option<StripeNotice>, Unusable> {
    let obj = &body["data"]["object"];
    if !obj.is_object() {
        return Err(unusable("data.object is missing"));
    }
    if let Some(notice) = autopay::stripe(event_type, obj)? {
        return Ok(Some(notice.into()));
    }
    let currency = text(&obj["currency"]).map(|c| c.to_ascii_lowercase());
    let total = || capped(&obj["amount_total"], "data.object.amount_total", max);
    let (event, tenant) = match event_type {
        "checkout.session.completed" => {
            let event = match text(&obj["payment_status"]).as_deref() {
                Some("paid") => PaymentEvent::Paid { amount: total()? },
                // A delayed method (ACH, SEPA, …): `checkout.session.async_payment_succeeded` or
                // `…_failed` follows.
                Some("unpaid") => PaymentEvent::AwaitingFunds { amount: total()? },
                Some("no_payment_required") => {
                    return Ok(Some(StripeNotice::NoMoney(format!(
                        "checkout session {} needed no payment (payment_status no_payment_required): nothing to credit",
                        text(&obj["id"]).unwrap_or_default()
                    ))))
                }
                Some(other) => {
                    return Err(unusable(format!(
                        "data.object.payment_status {other:?} is none of paid, unpaid, no_payment_required"
                    )))
                }
                None => return Err(unusable("data.object.payment_status is missing")),
            };
            (event, stripe_tenant(obj)?)
        }
        "checkout.session.async_payment_succeeded" => {
            (PaymentEvent::Paid { amount: total()? }, stripe_tenant(obj)?)
        }
        "checkout.session.async_payment_failed" => {
            (PaymentEvent::PaymentFailed, stripe_tenant(obj)?)
        }
        "payment_intent.succeeded" => {
            let received = if obj["amount_received"].is_null() {
                &obj["amount"]
            } else {
                &obj["amount_received"]
            };
            let amount = capped(received, "data.object.amount_received", max)?;
            (PaymentEvent::Paid { amount }, stripe_tenant(obj)?)
        }
        "charge.refunded" => {
            let total = capped(&obj["amount_refunded"], "data.object.amount_refunded", max)?;
            (PaymentEvent::Refunded { total }, None)
        }
        _ => return Ok(None),
    };
    let payment_key = if event_type == "payment_intent.succeeded" {
        text(&obj["id"]).ok_or_else(|| unusable("data.object.id is missing"))?
    } else {
        payment_key_of(obj)?
    };
    let (attempt, method) = match event_type {
        "payment_intent.succeeded" => (autopay::attempt_of(obj), autopay::method_of(obj, None)),
        "checkout.session.completed" => (None, autopay::session_method(obj)),
        _ => (None, None),
    };
    Ok(Some(StripeNotice::Payment(PaymentNotice {
        tenant,
        payment_key,
        currency,
        event,
        attempt,
        method,
    })))
}

/// An email delivery event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailNotice {
    pub tenant: TenantId,
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

/// A tenant read at `field` (already trimmed), parsed once here.
pub(crate) fn tenant_of(tenant: &str, field: &str) -> Result<TenantId, Unusable> {
    TenantId::parse(tenant).map_err(|e| unusable(format!("{field}: {e}")))
}

/// A Stripe object's `metadata.tenant`, if it names one.
pub(crate) fn stripe_tenant(obj: &Value) -> Result<Option<TenantId>, Unusable> {
    text(&obj["metadata"]["tenant"])
        .map(|t| tenant_of(&t, "data.object.metadata.tenant"))
        .transpose()
}

/// A string's trimmed value, unless it is blank or not a string.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
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
                Some("hard" | "permanent") => EmailEvent::Bounced(Bounce::Hard),
                Some("soft" | "transient") => EmailEvent::Bounced(Bounce::Soft),
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
    let tenant = tenant_of(&tenant, "data.tenant")?;
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

    const MAX: i64 = 1_000_000_000_000;

    fn payment(t: &str, body: &Value) -> PaymentNotice {
        match stripe(t, body, MAX) {
            Ok(Some(StripeNotice::Payment(n))) => n,
            other => panic!("{t}: {other:?}"),
        }
    }

    fn object(o: Value) -> Value {
        json!({"id": "evt_1", "object": "event", "livemode": false, "data": {"object": o}})
    }

    #[test]
    fn stripe_events() {
        let session = |status: &str| {
            object(
                json!({"id": "cs_1", "object": "checkout.session", "payment_intent": "pi_1",
                "amount_total": "2500", "currency": "USD", "payment_status": status, "mode": "payment",
                "metadata": {"tenant": "acme"}, "brand_new_field": {"x": 1}}),
            )
        };
        assert_eq!(
            payment("checkout.session.completed", &session("paid")),
            PaymentNotice {
                tenant: Some(TenantId::parse("acme").unwrap()),
                payment_key: "pi_1".into(),
                currency: Some("usd".into()),
                event: PaymentEvent::Paid { amount: 2500 },
                attempt: None,
                method: None,
            }
        );
        assert_eq!(
            payment("checkout.session.completed", &session("unpaid")).event,
            PaymentEvent::AwaitingFunds { amount: 2500 }
        );
        assert_eq!(
            payment("checkout.session.async_payment_succeeded", &session("paid")).event,
            PaymentEvent::Paid { amount: 2500 }
        );
        let failed = payment("checkout.session.async_payment_failed", &session("unpaid"));
        assert_eq!(
            (failed.event, failed.payment_key.as_str()),
            (PaymentEvent::PaymentFailed, "pi_1")
        );
        assert!(matches!(
            stripe("checkout.session.completed", &session("no_payment_required"), MAX),
            Ok(Some(StripeNotice::NoMoney(why))) if why.contains("cs_1")
        ));
        assert!(stripe("checkout.session.completed", &session("maybe"), MAX)
            .unwrap_err()
            .0
            .contains("payment_status"));
        let intent = object(
            json!({"id": "pi_1", "object": "payment_intent", "amount": 2500,
            "amount_received": 2500, "currency": "usd", "metadata": {}}),
        );
        let n = payment("payment_intent.succeeded", &intent);
        assert_eq!(
            (n.payment_key.as_str(), n.tenant, n.event),
            ("pi_1", None, PaymentEvent::Paid { amount: 2500 }),
            "same key as the session: credited once; no tenant unless payment_intent_data.metadata set it"
        );
        let refund = object(
            json!({"id": "ch_1", "object": "charge", "payment_intent": "pi_1",
            "amount": 2500, "amount_refunded": 700, "currency": "usd", "metadata": {"tenant": "evil"}}),
        );
        let r = payment("charge.refunded", &refund);
        assert_eq!(
            (r.tenant, r.payment_key.as_str(), r.event),
            (None, "pi_1", PaymentEvent::Refunded { total: 700 }),
            "a refund's own metadata is never read"
        );
        let expanded =
            object(json!({"id": "ch_2", "payment_intent": {"id": "pi_2"}, "amount_refunded": 1}));
        assert_eq!(payment("charge.refunded", &expanded).payment_key, "pi_2");
        assert_eq!(stripe("customer.created", &session("paid"), MAX), Ok(None));
        assert!(stripe("payment_intent.succeeded", &json!({"data": {}}), MAX).is_err());
        let bad = object(json!({"id": "pi_1", "amount_received": "lots"}));
        assert!(stripe("payment_intent.succeeded", &bad, MAX)
            .unwrap_err()
            .0
            .contains("amount_received"));
    }

    #[test]
    fn amounts_above_the_cap_are_refused_with_the_reason() {
        let big = object(
            json!({"id": "cs_1", "payment_intent": "pi_1", "amount_total": MAX + 1,
            "currency": "usd", "payment_status": "paid", "metadata": {"tenant": "acme"}}),
        );
        assert_eq!(
            stripe("checkout.session.completed", &big, MAX)
                .unwrap_err()
                .0,
            "data.object.amount_total 1000000000001 is above the largest accepted amount, \
             1000000000000 minor units (WALLET_MAX_AMOUNT); refused"
        );
        let at_cap = object(json!({"id": "pi_1", "amount_received": MAX, "currency": "usd"}));
        assert!(stripe("payment_intent.succeeded", &at_cap, MAX).is_ok());
        let refund = object(
            json!({"id": "ch_1", "payment_intent": "pi_1", "amount_refunded": "1000000000001"}),
        );
        assert!(stripe("charge.refunded", &refund, MAX).is_err());
        assert!(stripe("charge.refunded", &refund, MAX + 1).is_ok());
    }

    #[test]
    fn modes_and_livemode() {
        assert_eq!(StripeMode::parse(" LIVE "), Some(StripeMode::Live));
        assert_eq!(StripeMode::parse("test"), Some(StripeMode::Test));
        assert_eq!(StripeMode::parse("prod"), None);
        assert_eq!(StripeMode::of(true).as_str(), "live");
        assert_eq!(
            livemode(&json!({"livemode": true, "data": {"object": {"livemode": false}}})),
            Some(true)
        );
        assert_eq!(
            livemode(&json!({"data": {"object": {"livemode": false}}})),
            Some(false)
        );
        assert_eq!(livemode(&json!({"data": {"object": {}}})), None);
        assert_eq!(livemode(&json!({"livemode": "yes"})), None);
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
                tenant: TenantId::parse("acme").unwrap(),
                message_id: "m1".into(),
                event: EmailEvent::Bounced(Bounce::Hard)
            }
        );
        let soft = json!({"message_id": "m1", "tenant": "acme", "bounce_type": "soft"});
        assert_eq!(
            e("message.bounced", soft).unwrap().unwrap().event,
            EmailEvent::Bounced(Bounce::Soft)
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
