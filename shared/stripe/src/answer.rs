//! Stripe's answers, read: a PaymentIntent (`status`) or an error (`error.type`, `code`,
//! `decline_code`), mapped onto the wallet's neutral [`ChargeOutcome`]. Pure.
//!
//! A final answer (after [`crate::retry`]) means:
//!
//! | answer | outcome |
//! |---|---|
//! | 200, intent `succeeded` | `Succeeded` (the credit still comes from `payment_intent.succeeded`) |
//! | 200, intent `requires_action` (3-D Secure asked) | `NeedsCustomer { code: "requires_action" }` |
//! | 200, intent `requires_payment_method` | its `last_payment_error` read as a decline below (`DeclinedSoft { "requires_payment_method" }` without one) |
//! | 200, intent `processing` (or another status) | `Indeterminate`: the result comes by webhook or [`crate::StripeCharger`]'s `find` |
//! | 402 `card_error` | the decline code (`decline_code`, else `code`) by the table below |
//! | 400/404 `invalid_request_error` (a customer or payment method missing or unusable) | `DeclinedHard { code }`: the same request cannot succeed |
//! | 400 `idempotency_error`, 401, 403 | `Indeterminate`: a fault of ours (the key, the configuration), never a new key |
//! | 5xx, 409, 429 (retries spent), a broken connection | `Indeterminate` |
//!
//! Decline codes ([Stripe's decline codes](https://docs.stripe.com/declines/codes); its "next
//! steps" say which can succeed on a later try):
//!
//! | decline code | outcome |
//! |---|---|
//! | `authentication_required`, `offline_pin_required`, `online_or_offline_pin_required` | `NeedsCustomer`: the customer must come back on-session ([`NEEDS_CUSTOMER`]) |
//! | `expired_card`, `lost_card`, `stolen_card`, `pickup_card`, `restricted_card`, `incorrect_number`, `invalid_number`, `incorrect_cvc`, `invalid_cvc`, `invalid_expiry_month`, `invalid_expiry_year`, `fraudulent`, `merchant_blacklist`, `security_violation`, `stop_payment_order`, `revocation_of_authorization`, `revocation_of_all_authorizations`, `do_not_try_again`, `card_not_supported`, `currency_not_supported`, `invalid_account`, `new_account_information_available`, `transaction_not_allowed`, `not_permitted`, `service_not_allowed`, `testmode_decline` | `DeclinedHard`: Stripe's next step is another card, or never to retry ([`HARD`]) |
//! | anything else: `insufficient_funds`, `processing_error`, `generic_decline`, `do_not_honor`, `try_again_later`, `card_velocity_exceeded`, `issuer_not_available`, `reenter_transaction`, … | `DeclinedSoft`: worth the dunning ladder's next rung |

use serde_json::Value;
use wallet_ledger::autopay::ChargeOutcome;

/// Declines that need the customer present.
pub const NEEDS_CUSTOMER: [&str; 3] = [
    "authentication_required",
    "offline_pin_required",
    "online_or_offline_pin_required",
];

/// Declines that no later try of the same payment method can turn into a charge.
pub const HARD: [&str; 26] = [
    "expired_card",
    "lost_card",
    "stolen_card",
    "pickup_card",
    "restricted_card",
    "incorrect_number",
    "invalid_number",
    "incorrect_cvc",
    "invalid_cvc",
    "invalid_expiry_month",
    "invalid_expiry_year",
    "fraudulent",
    "merchant_blacklist",
    "security_violation",
    "stop_payment_order",
    "revocation_of_authorization",
    "revocation_of_all_authorizations",
    "do_not_try_again",
    "card_not_supported",
    "currency_not_supported",
    "invalid_account",
    "new_account_information_available",
    "transaction_not_allowed",
    "not_permitted",
    "service_not_allowed",
    "testmode_decline",
];

/// A decline code's outcome (the table above).
pub fn decline(code: &str) -> ChargeOutcome {
    let code = code.to_owned();
    if NEEDS_CUSTOMER.contains(&code.as_str()) {
        ChargeOutcome::NeedsCustomer { code }
    } else if HARD.contains(&code.as_str()) {
        ChargeOutcome::DeclinedHard { code }
    } else {
        ChargeOutcome::DeclinedSoft { code }
    }
}

/// A final answer read: the outcome and the PaymentIntent's id, when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub outcome: ChargeOutcome,
    pub intent: Option<String>,
}

/// Reads a final answer of `POST /v1/payment_intents` (status and body).
pub fn read(status: u16, body: &[u8]) -> Read {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match status {
        200..=299 => intent(&json),
        400..=499 if json.get("error").is_some() => error(status, &json["error"]),
        _ => Read {
            outcome: ChargeOutcome::Indeterminate,
            intent: None,
        },
    }
}

/// A PaymentIntent's outcome by its `status`.
pub fn intent(json: &Value) -> Read {
    let id = json["id"].as_str().map(str::to_owned);
    let outcome = match json["status"].as_str() {
        Some("succeeded") => ChargeOutcome::Succeeded,
        Some("requires_action") => ChargeOutcome::NeedsCustomer {
            code: "requires_action".into(),
        },
        Some("requires_payment_method") => match code_of(&json["last_payment_error"]) {
            Some(code) => decline(&code),
            None => ChargeOutcome::DeclinedSoft {
                code: "requires_payment_method".into(),
            },
        },
        _ => ChargeOutcome::Indeterminate,
    };
    Read {
        outcome,
        intent: id,
    }
}

/// An error object's outcome.
fn error(status: u16, error: &Value) -> Read {
    let intent = error["payment_intent"]["id"].as_str().map(str::to_owned);
    let kind = error["type"].as_str().unwrap_or_default();
    let outcome = match (status, kind) {
        (402, _) | (_, "card_error") => {
            decline(&code_of(error).unwrap_or_else(|| "card_declined".into()))
        }
        (401 | 403, _) | (_, "idempotency_error") => ChargeOutcome::Indeterminate,
        (400 | 404, "invalid_request_error") => ChargeOutcome::DeclinedHard {
            code: code_of(error).unwrap_or_else(|| "invalid_request".into()),
        },
        _ => ChargeOutcome::Indeterminate,
    };
    Read { outcome, intent }
}

/// An error's decline code, else its code.
fn code_of(error: &Value) -> Option<String> {
    ["decline_code", "code"]
        .iter()
        .find_map(|k| error[*k].as_str().filter(|c| !c.is_empty()))
        .map(str::to_owned)
}

/// An error answer's `error.code` (for logs and metrics; never the message, which may quote input).
pub fn error_code(body: &[u8]) -> Option<String> {
    let json: Value = serde_json::from_slice(body).ok()?;
    json["error"]["code"].as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn soft(c: &str) -> ChargeOutcome {
        ChargeOutcome::DeclinedSoft { code: c.into() }
    }
    fn hard(c: &str) -> ChargeOutcome {
        ChargeOutcome::DeclinedHard { code: c.into() }
    }
    fn customer(c: &str) -> ChargeOutcome {
        ChargeOutcome::NeedsCustomer { code: c.into() }
    }

    #[test]
    fn decline_codes() {
        let table = [
            ("insufficient_funds", soft("insufficient_funds")),
            ("processing_error", soft("processing_error")),
            ("generic_decline", soft("generic_decline")),
            ("do_not_honor", soft("do_not_honor")),
            ("try_again_later", soft("try_again_later")),
            ("some_new_code", soft("some_new_code")),
            ("expired_card", hard("expired_card")),
            ("lost_card", hard("lost_card")),
            ("stolen_card", hard("stolen_card")),
            ("incorrect_number", hard("incorrect_number")),
            ("incorrect_cvc", hard("incorrect_cvc")),
            ("fraudulent", hard("fraudulent")),
            (
                "authentication_required",
                customer("authentication_required"),
            ),
        ];
        for (code, want) in table {
            assert_eq!(decline(code), want, "{code}");
        }
    }

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn answers() {
        let card = |code: &str, decline: Option<&str>| {
            body(
                json!({"error": {"type": "card_error", "code": code, "decline_code": decline,
                "payment_intent": {"id": "pi_1", "status": "requires_payment_method"}}}),
            )
        };
        let invalid =
            |code: &str| body(json!({"error": {"type": "invalid_request_error", "code": code}}));
        let table: Vec<(u16, Vec<u8>, ChargeOutcome)> = vec![
            (
                200,
                body(json!({"id": "pi_1", "status": "succeeded"})),
                ChargeOutcome::Succeeded,
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "requires_action"})),
                customer("requires_action"),
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "processing"})),
                ChargeOutcome::Indeterminate,
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "requires_payment_method",
                "last_payment_error": {"code": "card_declined", "decline_code": "lost_card"}})),
                hard("lost_card"),
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "requires_payment_method"})),
                soft("requires_payment_method"),
            ),
            (
                402,
                card("card_declined", Some("insufficient_funds")),
                soft("insufficient_funds"),
            ),
            (
                402,
                card("card_declined", Some("stolen_card")),
                hard("stolen_card"),
            ),
            (
                402,
                card("expired_card", Some("expired_card")),
                hard("expired_card"),
            ),
            (
                402,
                card("processing_error", None),
                soft("processing_error"),
            ),
            (
                402,
                card("authentication_required", Some("authentication_required")),
                customer("authentication_required"),
            ),
            (400, invalid("resource_missing"), hard("resource_missing")),
            (404, invalid("resource_missing"), hard("resource_missing")),
            (
                400,
                body(json!({"error": {"type": "idempotency_error"}})),
                ChargeOutcome::Indeterminate,
            ),
            (
                401,
                body(json!({"error": {"type": "invalid_request_error"}})),
                ChargeOutcome::Indeterminate,
            ),
            (
                500,
                body(json!({"error": {"type": "api_error"}})),
                ChargeOutcome::Indeterminate,
            ),
            (
                429,
                body(json!({"error": {"type": "invalid_request_error", "code": "lock_timeout"}})),
                ChargeOutcome::Indeterminate,
            ),
            (200, b"not json".to_vec(), ChargeOutcome::Indeterminate),
        ];
        for (status, body, want) in table {
            assert_eq!(
                read(status, &body).outcome,
                want,
                "{status} {}",
                String::from_utf8_lossy(&body)
            );
        }
        assert_eq!(
            read(402, &card("card_declined", Some("lost_card")))
                .intent
                .as_deref(),
            Some("pi_1")
        );
        assert_eq!(
            error_code(&invalid("lock_timeout")).as_deref(),
            Some("lock_timeout")
        );
    }
}
