//! Stripe's autopay events, read tolerantly like the rest of [`super`]: the saved payment method
//! (`setup_intent.succeeded`; `checkout.session.completed` in `setup` mode, or with the payment
//! intent expanded and `setup_future_usage` set; a `payment_intent.succeeded` with
//! `setup_future_usage`), `payment_method.detached`, an attempt named in a payment intent's
//! `metadata.attempt`, and `payment_intent.payment_failed` / `payment_intent.canceled` of an
//! attempt's charge ([`Unsettled`]: a pending charge's failure is looked up by the charging pass at
//! once; a card's decline is recorded from the API's answer).

use crate::autopay::SavedMethod;
use crate::parse::{id_of, stripe_tenant, text, Unusable};
use crate::tenant::TenantId;
use serde_json::Value;

/// A charge of an autopay attempt that failed or was canceled (`payment_intent.payment_failed`,
/// `payment_intent.canceled` with `metadata.attempt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsettled {
    pub tenant: Option<TenantId>,
    pub attempt: String,
    /// The payment intent.
    pub intent: String,
}

/// A saved payment method the provider reported, for the tenant its metadata names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodNotice {
    pub tenant: Option<TenantId>,
    pub method: SavedMethod,
}

/// What an autopay-only Stripe event means (the payments' parse makes it one of its notices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutopayNotice {
    /// A payment method saved for autopay.
    Method(MethodNotice),
    /// It moves no money and saves nothing, for this reason.
    NoMoney(String),
    /// This payment method was detached.
    Detached(String),
    /// A charge of an autopay attempt failed or was canceled.
    Unsettled(Unsettled),
}

/// The autopay attempt a payment intent's metadata names (`metadata.attempt`), if any.
pub fn attempt_of(obj: &Value) -> Option<String> {
    text(&obj["metadata"]["attempt"])
}

/// The customer and payment method of an intent set up for later use (`setup_future_usage`), or
/// of a succeeded SetupIntent; `customer` when the object does not name one itself.
pub fn method_of(obj: &Value, customer: Option<String>) -> Option<SavedMethod> {
    let is_intent = text(&obj["object"]).as_deref() == Some("payment_intent");
    if is_intent && text(&obj["setup_future_usage"]).is_none() {
        return None;
    }
    Some(SavedMethod {
        customer: id_of(&obj["customer"]).or(customer)?,
        payment_method: id_of(&obj["payment_method"])?,
    })
}

/// The method a completed Checkout Session saved: its expanded SetupIntent (setup mode) or
/// payment intent (with `setup_future_usage`), with the session's customer.
pub fn session_method(obj: &Value) -> Option<SavedMethod> {
    let customer = id_of(&obj["customer"]);
    [&obj["setup_intent"], &obj["payment_intent"]]
        .into_iter()
        .filter(|o| o.is_object())
        .find_map(|o| method_of(o, customer.clone()))
}

/// Parses the autopay-only events (and a Checkout Session in setup mode); `Ok(None)`: not one
/// of them (the payment events are parsed by [`crate::payments::parse::stripe`]).
pub fn stripe(event_type: &str, obj: &Value) -> Result<Option<AutopayNotice>, Unusable> {
    let id = || text(&obj["id"]).unwrap_or_default();
    let notice = match event_type {
        "setup_intent.succeeded" => match method_of(obj, None) {
            Some(method) => AutopayNotice::Method(MethodNotice {
                tenant: stripe_tenant(obj)?,
                method,
            }),
            None => AutopayNotice::NoMoney(format!(
                "setup intent {} names no customer or payment method: nothing to save",
                id()
            )),
        },
        "checkout.session.completed" if text(&obj["mode"]).as_deref() == Some("setup") => {
            match session_method(obj) {
                Some(method) => AutopayNotice::Method(MethodNotice {
                    tenant: stripe_tenant(obj)?,
                    method,
                }),
                None => AutopayNotice::NoMoney(format!(
                    "checkout session {} (setup mode) does not carry its SetupIntent expanded: \
                     the method is saved from the SetupIntent's own setup_intent.succeeded \
                     (setup_intent_data.metadata.tenant names the tenant)",
                    id()
                )),
            }
        }
        "payment_method.detached" => AutopayNotice::Detached(
            text(&obj["id"]).ok_or_else(|| Unusable("data.object.id is missing".into()))?,
        ),
        "payment_intent.payment_failed" | "payment_intent.canceled" => match attempt_of(obj) {
            // A charge of an attempt that did not go through: a pending one's settlement (SEPA
            // Direct Debit failing days later) is the charging pass's to record.
            Some(attempt) => AutopayNotice::Unsettled(Unsettled {
                tenant: stripe_tenant(obj)?,
                attempt,
                intent: id(),
            }),
            None => AutopayNotice::NoMoney(format!(
                "payment intent {} did not go through: no money moved",
                id()
            )),
        },
        _ => return Ok(None),
    };
    Ok(Some(notice))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn method(c: &str, pm: &str) -> SavedMethod {
        SavedMethod {
            customer: c.into(),
            payment_method: pm.into(),
        }
    }

    #[test]
    fn setups_name_their_method_and_tenant() {
        let seti = json!({"id": "seti_1", "object": "setup_intent", "customer": {"id": "cus_1"},
            "payment_method": "pm_1", "metadata": {"tenant": "acme"}});
        assert_eq!(
            stripe("setup_intent.succeeded", &seti),
            Ok(Some(AutopayNotice::Method(MethodNotice {
                tenant: Some(TenantId::parse("acme").unwrap()),
                method: method("cus_1", "pm_1"),
            })))
        );
        let bare = json!({"id": "seti_2", "object": "setup_intent", "payment_method": "pm_1"});
        assert!(matches!(
            stripe("setup_intent.succeeded", &bare),
            Ok(Some(AutopayNotice::NoMoney(why))) if why.contains("seti_2")
        ));
        let session = |si: serde_json::Value| {
            json!({"id": "cs_1", "object": "checkout.session", "mode": "setup",
                "customer": "cus_2", "setup_intent": si, "metadata": {"tenant": "acme"}})
        };
        let expanded =
            session(json!({"id": "seti_3", "object": "setup_intent", "payment_method": "pm_3"}));
        assert!(matches!(
            stripe("checkout.session.completed", &expanded),
            Ok(Some(AutopayNotice::Method(MethodNotice { method: m, .. }))) if m == method("cus_2", "pm_3")
        ));
        assert!(matches!(
            stripe("checkout.session.completed", &session(json!("seti_3"))),
            Ok(Some(AutopayNotice::NoMoney(_)))
        ));
        let payment_mode = json!({"mode": "payment", "payment_status": "paid"});
        assert_eq!(
            stripe("checkout.session.completed", &payment_mode),
            Ok(None),
            "a payment: the payment parser's"
        );
    }

    #[test]
    fn an_intent_saves_its_method_only_when_set_up_for_later() {
        let pi = json!({"id": "pi_1", "object": "payment_intent", "customer": "cus_1",
            "payment_method": "pm_1", "metadata": {"attempt": " thr_1 "}});
        assert_eq!(method_of(&pi, None), None);
        assert_eq!(attempt_of(&pi).as_deref(), Some("thr_1"));
        let mut later = pi.clone();
        later["setup_future_usage"] = json!("off_session");
        assert_eq!(method_of(&later, None), Some(method("cus_1", "pm_1")));
        let session = json!({"customer": "cus_9", "payment_intent": {"object": "payment_intent",
            "payment_method": {"id": "pm_9"}, "setup_future_usage": "on_session"}});
        assert_eq!(session_method(&session), Some(method("cus_9", "pm_9")));
    }

    #[test]
    fn detaches_and_failures() {
        assert_eq!(
            stripe(
                "payment_method.detached",
                &json!({"id": "pm_1", "customer": null})
            ),
            Ok(Some(AutopayNotice::Detached("pm_1".into())))
        );
        assert!(stripe("payment_method.detached", &json!({"customer": null})).is_err());
        let failed = json!({"id": "pi_1", "metadata": {"attempt": "thr_1", "tenant": "acme"}});
        for event in ["payment_intent.payment_failed", "payment_intent.canceled"] {
            assert_eq!(
                stripe(event, &failed),
                Ok(Some(AutopayNotice::Unsettled(Unsettled {
                    tenant: Some(TenantId::parse("acme").unwrap()),
                    attempt: "thr_1".into(),
                    intent: "pi_1".into(),
                }))),
                "{event}"
            );
        }
        assert!(matches!(
            stripe("payment_intent.payment_failed", &json!({"id": "pi_2"})),
            Ok(Some(AutopayNotice::NoMoney(why))) if why.contains("pi_2")
        ));
        assert_eq!(stripe("customer.created", &failed), Ok(None));
    }
}
