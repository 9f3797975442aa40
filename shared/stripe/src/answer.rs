//! Stripe's answers, read: a PaymentIntent (`status`) or an error (`error.type`, `code`,
//! `decline_code`), mapped onto the wallet's neutral [`ChargeOutcome`]; a Checkout Session or
//! its refusal, mapped onto the wallet's [`CheckoutSession`] / [`CheckoutError`]
//! ([`session`]). Pure.
//!
//! A final answer to a charge (after [`crate::retry`]) means:
//!
//! | answer | outcome |
//! |---|---|
//! | 200, a PaymentIntent | its `status`, by [`STATUSES`] (below); the intent exists, so its id is kept and the try is never sent again |
//! | 402 `card_error` | the decline code (`decline_code`, else `code`) by the table below |
//! | 400/404 `invalid_request_error` (a customer or payment method missing or unusable) | `DeclinedHard { code }`: the same request cannot succeed |
//! | 400 `idempotency_error`, 401, 403 | `Indeterminate`: a fault of ours (the key, the configuration), never a new key |
//! | 5xx, 409, 429 (retries spent), a broken connection | `Indeterminate` |
//!
//! An error that names an intent (`error.payment_intent.id`) keeps its id too: the intent exists,
//! and the charging pass looks it up instead of sending the try again.
//!
//! Every status a PaymentIntent can have, as Stripe's own libraries type it (the `stripe` package
//! types `PaymentIntent.status` as a closed `Literal`; a test reads that set from the installed
//! library and fails if a status is not in this table):
//!
//! | `status` | outcome | why |
//! |---|---|---|
//! | `succeeded` | `Succeeded` | money taken; the credit still comes from `payment_intent.succeeded` |
//! | `processing` | `Pending` | a delayed-notification method (SEPA Direct Debit, ACH, Bacs, BECS) takes days; it ends with `payment_intent.succeeded` or `payment_intent.payment_failed` |
//! | `requires_capture` | `Pending` | funds authorized, not captured (autopay never asks for manual capture): it is captured or canceled later (an uncaptured authorization is canceled after 7 days: `payment_intent.canceled`) |
//! | `requires_action` | `NeedsCustomer { "requires_action" }` | 3-D Secure or another customer step; an off-session charge cannot complete it |
//! | `requires_payment_method` | its `last_payment_error` read as a decline below (`DeclinedSoft { "requires_payment_method" }` without one) | the attempt failed; nothing was charged |
//! | `requires_confirmation` | `DeclinedSoft { "requires_confirmation" }` | not confirmed: nothing was charged and nothing will be without a confirm, which autopay never sends twice |
//! | `canceled` | `DeclinedSoft { "canceled" }` | canceled: nothing was or will be charged |
//! | another (a status Stripe adds) | `Pending` | the intent exists: never sent again; looked up until it settles |
//!
//! A 200 that is no PaymentIntent (no `id`) names nothing: `Indeterminate`.
//!
//! Decline codes ([Stripe's decline codes](https://docs.stripe.com/declines/codes); its "next
//! steps" say which can succeed on a later try):
//!
//! | decline code | outcome |
//! |---|---|
//! | `authentication_required`, `offline_pin_required`, `online_or_offline_pin_required` | `NeedsCustomer`: the customer must come back on-session ([`NEEDS_CUSTOMER`]) |
//! | `expired_card`, `lost_card`, `stolen_card`, `pickup_card`, `restricted_card`, `incorrect_number`, `invalid_number`, `incorrect_cvc`, `invalid_cvc`, `invalid_expiry_month`, `invalid_expiry_year`, `fraudulent`, `merchant_blacklist`, `security_violation`, `stop_payment_order`, `revocation_of_authorization`, `revocation_of_all_authorizations`, `do_not_try_again`, `card_not_supported`, `currency_not_supported`, `invalid_account`, `new_account_information_available`, `transaction_not_allowed`, `not_permitted`, `service_not_allowed`, `testmode_decline` | `DeclinedHard`: Stripe's next step is another card, or never to retry ([`HARD`]) |
//! | anything else: `insufficient_funds`, `processing_error`, `generic_decline`, `do_not_honor`, `try_again_later`, `card_velocity_exceeded`, `issuer_not_available`, `reenter_transaction`, … | `DeclinedSoft`: worth the dunning ladder's next rung |

//!
//! A final answer to `POST /v1/checkout/sessions` ([`session`]) means:
//!
//! | answer | result |
//! |---|---|
//! | 200 with the session's `id` and `url` | the session |
//! | 200 without them (not a session) | `Unavailable`: nothing the caller can change |
//! | 400/404 `invalid_request_error` (a parameter Stripe refuses: an amount below the currency's minimum, a URL, a customer that does not exist) | `Refused("<message> (parameter <param>)")`: the caller's request cannot succeed as it is |
//! | 400 `idempotency_error` (the key was used with other parameters) | `Refused(message)`: decisive, the key can never create another session |
//! | 401, 403 (the secret key), another 4xx, 5xx, 409, 429 (retries spent), a broken connection | `Unavailable`: a fault of ours or of Stripe's, not of the request |

use serde_json::Value;
use wallet_ledger::autopay::ChargeOutcome;
use wallet_ledger::payments::checkout::{CheckoutError, CheckoutSession};

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

/// How a PaymentIntent's `status` reads (the module's status table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Succeeded,
    /// The charge exists and settles later.
    Pending,
    NeedsCustomer,
    /// Failed: read its `last_payment_error`.
    Failed,
    /// Nothing charged, nothing will be: a soft decline named by the status.
    NotCharged,
}

/// Every PaymentIntent status Stripe documents, with how it reads.
pub const STATUSES: [(&str, Status); 7] = [
    ("canceled", Status::NotCharged),
    ("processing", Status::Pending),
    ("requires_action", Status::NeedsCustomer),
    ("requires_capture", Status::Pending),
    ("requires_confirmation", Status::NotCharged),
    ("requires_payment_method", Status::Failed),
    ("succeeded", Status::Succeeded),
];

/// How `status` reads; `None`: not a status this table knows (read as pending: the intent
/// exists).
pub fn status(status: &str) -> Option<Status> {
    STATUSES
        .iter()
        .find(|(name, _)| *name == status)
        .map(|(_, s)| *s)
}

/// A PaymentIntent's outcome by its `status` (the module's status table).
pub fn intent(json: &Value) -> Read {
    let id = json["id"]
        .as_str()
        .filter(|i| !i.is_empty())
        .map(str::to_owned);
    let name = json["status"].as_str().unwrap_or_default();
    let outcome = match (&id, status(name)) {
        (None, _) => ChargeOutcome::Indeterminate,
        (Some(_), Some(Status::Succeeded)) => ChargeOutcome::Succeeded,
        (Some(_), Some(Status::Pending) | None) => ChargeOutcome::Pending,
        (Some(_), Some(Status::NeedsCustomer)) => ChargeOutcome::NeedsCustomer {
            code: name.to_owned(),
        },
        (Some(_), Some(Status::Failed)) => match code_of(&json["last_payment_error"]) {
            Some(code) => decline(&code),
            None => ChargeOutcome::DeclinedSoft {
                code: name.to_owned(),
            },
        },
        (Some(_), Some(Status::NotCharged)) => ChargeOutcome::DeclinedSoft {
            code: name.to_owned(),
        },
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

/// Reads a final answer of `POST /v1/checkout/sessions` (the second table above).
pub fn session(status: u16, body: &[u8]) -> Result<CheckoutSession, CheckoutError> {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error = &json["error"];
    let kind = error["type"].as_str().unwrap_or_default();
    match status {
        200..=299 => match (json["id"].as_str(), json["url"].as_str()) {
            (Some(id), Some(url)) if !id.is_empty() && !url.is_empty() => Ok(CheckoutSession {
                id: id.to_owned(),
                url: url.to_owned(),
            }),
            _ => Err(CheckoutError::Unavailable(format!(
                "HTTP {status} without a session's id and url"
            ))),
        },
        400 | 404 if matches!(kind, "invalid_request_error" | "idempotency_error") => {
            let message = error["message"].as_str().unwrap_or_default();
            Err(CheckoutError::Refused(match error["param"].as_str() {
                Some(param) => format!("{message} (parameter {param})"),
                None => message.to_owned(),
            }))
        }
        _ => Err(CheckoutError::Unavailable(format!(
            "HTTP {status} {}",
            error["code"].as_str().unwrap_or(kind)
        ))),
    }
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
                ChargeOutcome::Pending,
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "requires_capture"})),
                ChargeOutcome::Pending,
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "requires_confirmation"})),
                soft("requires_confirmation"),
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "canceled"})),
                soft("canceled"),
            ),
            (
                200,
                body(json!({"id": "pi_1", "status": "a_status_stripe_adds_later"})),
                ChargeOutcome::Pending,
            ),
            (
                200,
                body(json!({"status": "succeeded"})),
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

    #[test]
    fn session_answers() {
        let refused = |m: &str| Err(CheckoutError::Refused(m.into()));
        let unavailable = |m: &str| Err(CheckoutError::Unavailable(m.into()));
        let table: Vec<(u16, Value, Result<CheckoutSession, CheckoutError>)> = vec![
            (
                200,
                json!({"id": "cs_test_1", "object": "checkout.session",
                    "url": "https://checkout.stripe.com/c/pay/cs_test_1"}),
                Ok(CheckoutSession {
                    id: "cs_test_1".into(),
                    url: "https://checkout.stripe.com/c/pay/cs_test_1".into(),
                }),
            ),
            (
                200,
                json!({"id": "cs_test_1", "url": null}),
                unavailable("HTTP 200 without a session's id and url"),
            ),
            (
                400,
                json!({"error": {"type": "invalid_request_error", "code": "amount_too_small",
                    "param": "line_items[0][price_data][unit_amount]",
                    "message": "The Checkout Session's total amount due must add up to at least $0.50 usd"}}),
                refused(
                    "The Checkout Session's total amount due must add up to at least $0.50 usd \
                     (parameter line_items[0][price_data][unit_amount])",
                ),
            ),
            (
                400,
                json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
                    "param": "customer", "message": "No such customer: 'cus_x'"}}),
                refused("No such customer: 'cus_x' (parameter customer)"),
            ),
            (
                404,
                json!({"error": {"type": "invalid_request_error",
                    "message": "Not a valid URL", "param": "success_url"}}),
                refused("Not a valid URL (parameter success_url)"),
            ),
            (
                400,
                json!({"error": {"type": "idempotency_error", "message": "Keys for idempotent requests can only be used with the same parameters"}}),
                refused("Keys for idempotent requests can only be used with the same parameters"),
            ),
            (
                401,
                json!({"error": {"type": "invalid_request_error", "message": "Invalid API Key provided: sk_test_****"}}),
                unavailable("HTTP 401 invalid_request_error"),
            ),
            (
                500,
                json!({"error": {"type": "api_error"}}),
                unavailable("HTTP 500 api_error"),
            ),
            (
                429,
                json!({"error": {"type": "invalid_request_error", "code": "rate_limit"}}),
                unavailable("HTTP 429 rate_limit"),
            ),
            (
                402,
                json!({"error": {"type": "card_error", "code": "card_declined"}}),
                unavailable("HTTP 402 card_declined"),
            ),
        ];
        for (status, answer, want) in table {
            assert_eq!(
                session(status, &body(answer.clone())),
                want,
                "{status} {answer}"
            );
        }
        assert_eq!(
            session(200, b"<html>"),
            unavailable("HTTP 200 without a session's id and url")
        );
    }
}
