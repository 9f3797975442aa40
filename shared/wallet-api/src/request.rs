//! A request as the API reads it ([`ApiRequest`], transport-neutral), its [`Route`] (from the
//! path: API Gateway's `rawPath`, or `cargo lambda watch`'s `/lambda-url/wallet-api/…`), and its
//! inputs parsed once: the tenant, the `Idempotency-Key`, and each route's JSON body (unknown
//! fields refused, each bad field named in the 400).

use crate::error::ApiError;
use base64::Engine;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};
use std::time::Duration;
use wallet_ledger::config::DEFAULT_MAX_AMOUNT;
use wallet_ledger::TenantId;

/// The largest body accepted, in bytes (the bodies are a few fields).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest `Idempotency-Key`, in characters (Stripe's limit).
pub const MAX_KEY_CHARS: usize = 255;
/// The longest message id, in bytes (it is part of the email row's key).
pub const MAX_MESSAGE_ID_BYTES: usize = 512;
/// The longest redirect URL of a checkout, in characters.
pub const MAX_URL_CHARS: usize = 2048;
/// The header that names a POST's idempotency key.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// A request as the API reads it.
#[derive(Debug, Clone, Copy)]
pub struct ApiRequest<'a> {
    pub method: &'a str,
    /// The raw path (percent-encoded as sent).
    pub path: &'a str,
    pub headers: &'a http::HeaderMap,
    pub body: Option<&'a str>,
    /// The body is base64 (API Gateway's `isBase64Encoded`).
    pub body_is_base64: bool,
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/wallets/{tenant}`
    Wallet(TenantId),
    /// `/wallets/{tenant}/holds`
    Holds(TenantId),
    /// `/wallets/{tenant}/holds/{hold_id}/release`
    Release(TenantId, String),
    /// `/wallets/{tenant}/checkout-sessions`
    CheckoutSessions(TenantId),
}

impl Route {
    /// The route of `path` (anything before `/wallets/` is a prefix: a stage, `cargo lambda
    /// watch`'s `/lambda-url/wallet-api`), `None` if it names none. Segments are percent-decoded.
    pub fn of(method: &str, path: &str) -> Result<Self, ApiError> {
        let not_found = || ApiError::NotFound {
            method: method.to_owned(),
            path: path.to_owned(),
        };
        let rest = match path.find("/wallets/") {
            Some(i) => &path[i + "/wallets/".len()..],
            None => return Err(not_found()),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let segments: Vec<String> = rest
            .split('/')
            .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
            .collect();
        let tenant = |s: &str| {
            TenantId::parse(s)
                .map_err(|e| ApiError::invalid("tenant", format!("{e} (in the path)")))
        };
        let (route, allow) = match segments.as_slice() {
            [t] => (Self::Wallet(tenant(t)?), "GET"),
            [t, h] if h == "holds" => (Self::Holds(tenant(t)?), "POST"),
            [t, c] if c == "checkout-sessions" => (Self::CheckoutSessions(tenant(t)?), "POST"),
            [t, h, id, r] if h == "holds" && r == "release" => {
                (Self::Release(tenant(t)?, hold_id(id)?), "POST")
            }
            _ => return Err(not_found()),
        };
        if !method.eq_ignore_ascii_case(allow) {
            return Err(ApiError::MethodNotAllowed {
                method: method.to_owned(),
                allow,
            });
        }
        Ok(route)
    }

    pub fn tenant(&self) -> &TenantId {
        match self {
            Self::Wallet(t) | Self::Holds(t) | Self::Release(t, _) | Self::CheckoutSessions(t) => t,
        }
    }

    /// The route's name for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Wallet(_) => "get_wallet",
            Self::Holds(_) => "place_hold",
            Self::Release(..) => "release_hold",
            Self::CheckoutSessions(_) => "create_checkout_session",
        }
    }

    /// The method and path in canonical form (what a key's fingerprint covers: the same whatever
    /// prefix or encoding the path arrived with).
    pub fn canonical(&self) -> String {
        let e = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        match self {
            Self::Wallet(t) => format!("GET /wallets/{}", e(t)),
            Self::Holds(t) => format!("POST /wallets/{}/holds", e(t)),
            Self::Release(t, h) => format!("POST /wallets/{}/holds/{}/release", e(t), e(h)),
            Self::CheckoutSessions(t) => format!("POST /wallets/{}/checkout-sessions", e(t)),
        }
    }
}

fn hold_id(s: &str) -> Result<String, ApiError> {
    if s.is_empty() || s.len() > 128 || s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ApiError::invalid(
            "hold_id",
            "hold_id (in the path) must be the hold's id as the hold's 201 gave it",
        ));
    }
    Ok(s.to_owned())
}

/// An `Idempotency-Key`: 1 to [`MAX_KEY_CHARS`] characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key of `headers` (required).
    pub fn of(headers: &http::HeaderMap) -> Result<Self, ApiError> {
        let invalid = |m: &str| ApiError::invalid("Idempotency-Key", m);
        let value = headers
            .get(IDEMPOTENCY_HEADER)
            .ok_or_else(|| invalid("the Idempotency-Key header is required on POST: a unique key per request (a UUID), the same on its retries"))?;
        let text = value
            .to_str()
            .map_err(|_| invalid("the Idempotency-Key header must be printable ASCII"))?;
        Self::parse(text).map_err(|m| invalid(&m))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("the Idempotency-Key header is empty".into());
        }
        if text.chars().count() > MAX_KEY_CHARS {
            return Err(format!(
                "the Idempotency-Key header is longer than {MAX_KEY_CHARS} characters"
            ));
        }
        if text.chars().any(char::is_control) {
            return Err("the Idempotency-Key header contains control characters".into());
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The body as a JSON object (absent or empty: `{}`), base64 undone, size bounded.
pub fn body_object(req: &ApiRequest<'_>) -> Result<Map<String, Value>, ApiError> {
    let raw = req.body.unwrap_or_default();
    let bytes = if req.body_is_base64 {
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .map_err(|_| {
                ApiError::invalid(
                    "body",
                    "the body is flagged as base64 but is not valid base64",
                )
            })?
    } else {
        raw.as_bytes().to_vec()
    };
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ApiError::TooLarge {
            len: bytes.len(),
            limit: MAX_BODY_BYTES,
        });
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::invalid("body", "the body must be a JSON object")),
        Err(e) => Err(ApiError::invalid(
            "body",
            format!("the body is not valid JSON: {e}"),
        )),
    }
}

/// `value` with every object's keys sorted, compact: the same text for the same request
/// whatever order or spacing its fields came in.
pub fn canonical_json(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Refuses fields other than `known`.
fn only(body: &Map<String, Value>, known: &[&str]) -> Result<(), ApiError> {
    match body.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(ApiError::invalid(
            k.clone(),
            format!("unknown field {k:?} (known: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

/// A positive amount in minor units, at most the ledger's largest.
fn amount(body: &Map<String, Value>, field: &str) -> Result<Option<i64>, ApiError> {
    let Some(v) = body.get(field).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    match v.as_i64() {
        Some(a) if (1..=DEFAULT_MAX_AMOUNT).contains(&a) => Ok(Some(a)),
        _ => Err(ApiError::invalid(
            field,
            format!("{field} must be a whole number of minor units from 1 to {DEFAULT_MAX_AMOUNT} (e.g. 2000 for USD 20.00)"),
        )),
    }
}

fn string<'b>(body: &'b Map<String, Value>, field: &str) -> Result<Option<&'b str>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(ApiError::invalid(
            field,
            format!("{field} must be a string"),
        )),
    }
}

/// `POST …/holds`: `{"message_id", "amount"?, "expires_in"?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldBody {
    pub message_id: String,
    pub amount: Option<i64>,
    /// Whole seconds, within the ledger's bounds (`None`: the stage's default).
    pub expires_in: Option<Duration>,
}

/// A hold's validity in whole seconds, within the ledger's bounds.
fn expires_in(body: &Map<String, Value>) -> Result<Option<Duration>, ApiError> {
    use wallet_ledger::email::holds::expiry::{bounded, MAX_EXPIRES_IN, MIN_EXPIRES_IN};
    let Some(v) = body.get("expires_in").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::invalid(
            "expires_in",
            format!(
                "expires_in must be a whole number of seconds from {} to {} (7 days)",
                MIN_EXPIRES_IN.as_secs(),
                MAX_EXPIRES_IN.as_secs()
            ),
        )
    };
    let secs = v.as_u64().ok_or_else(invalid)?;
    bounded(Duration::from_secs(secs))
        .map(Some)
        .map_err(|_| invalid())
}

impl HoldBody {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, ApiError> {
        only(body, &["message_id", "amount", "expires_in"])?;
        let message_id = string(body, "message_id")?
            .ok_or_else(|| ApiError::invalid("message_id", "message_id is required: the send's message id, as the email provider will report it"))?;
        if message_id.trim().is_empty()
            || message_id.trim() != message_id
            || message_id.chars().any(char::is_control)
            || message_id.len() > MAX_MESSAGE_ID_BYTES
        {
            return Err(ApiError::invalid(
                "message_id",
                format!("message_id must be 1 to {MAX_MESSAGE_ID_BYTES} bytes, trimmed, without control characters"),
            ));
        }
        Ok(Self {
            message_id: message_id.to_owned(),
            amount: amount(body, "amount")?,
            expires_in: expires_in(body)?,
        })
    }
}

/// `POST …/holds/{hold_id}/release`: no fields (an empty body or `{}`).
pub fn release_body(body: &Map<String, Value>) -> Result<(), ApiError> {
    only(body, &[])
}

/// `POST …/checkout-sessions`: `{"amount", "success_url", "cancel_url", "save_payment_method"?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutBody {
    pub amount: i64,
    pub success_url: String,
    pub cancel_url: String,
    pub save_payment_method: bool,
}

impl CheckoutBody {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, ApiError> {
        only(
            body,
            &["amount", "success_url", "cancel_url", "save_payment_method"],
        )?;
        let amount = amount(body, "amount")?.ok_or_else(|| {
            ApiError::invalid("amount", "amount is required: the top-up in minor units")
        })?;
        let url = |field: &str| -> Result<String, ApiError> {
            let u = string(body, field)?
                .ok_or_else(|| ApiError::invalid(field, format!("{field} is required")))?;
            let scheme_ok = u.starts_with("https://") || u.starts_with("http://");
            if !scheme_ok
                || u.len() <= "https://".len()
                || u.chars().count() > MAX_URL_CHARS
                || u.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(ApiError::invalid(
                    field,
                    format!("{field} must be an http:// or https:// URL of at most {MAX_URL_CHARS} characters"),
                ));
            }
            Ok(u.to_owned())
        };
        let save_payment_method = match body.get("save_payment_method") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(ApiError::invalid(
                    "save_payment_method",
                    "save_payment_method must be true or false",
                ))
            }
        };
        Ok(Self {
            amount,
            success_url: url("success_url")?,
            cancel_url: url("cancel_url")?,
            save_payment_method,
        })
    }
}

#[cfg(test)]
mod tests;
