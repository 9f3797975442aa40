//! Stripe's payment events as Stripe sends them: a Checkout Session's `payment_status` (`paid`,
//! `unpaid` for delayed methods, `no_payment_required`), its async outcomes, payment intents
//! (whose `metadata` is the session's only if `payment_intent_data.metadata` set it), charges with
//! their cumulative `amount_refunded`; autopay's events ([`crate::autopay::parse`]) joined to them
//! as one [`StripeNotice`].

use crate::autopay::parse as autopay;
use crate::balance::rules::PaymentEvent;
use crate::parse::{capped, id_of, stripe_tenant, text, unusable, SavedMethod, Unusable};
use crate::tenant::TenantId;
use serde_json::Value;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
