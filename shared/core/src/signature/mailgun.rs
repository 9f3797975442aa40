//! Mailgun (webhooks with a JSON body): the signature is inside the body,
//! `{"signature": {"timestamp": "…", "token": "…", "signature": "<hex>"}, "event-data": {…}}`.
//!
//! The MAC is HMAC-SHA256, keyed with the HTTP webhook signing key as-is, over the timestamp
//! followed by the token (as sent, no separator), hex-encoded. A subaccount's events also carry a
//! `parent-signature` (the same MAC with the primary account's key): either may match any
//! configured key. Then the timestamp must be within the tolerance on both sides.
//!
//! **Replays.** Mailgun's signature covers the timestamp and the token only, not the event: a
//! captured `signature` object could be replayed, within the tolerance, with another event. So the
//! event id is the **token** (`/signature/token`): a token seen before is a duplicate (answered
//! 200 `duplicate`, journaled, the original untouched), and an old token is out of tolerance.
//! This keeps the one-write ingest path: no separate "seen tokens" item. (Overriding `event_id`,
//! e.g. with `/event-data/id`, gives up this protection.)
//!
//! **Retries and the tolerance.** Mailgun retries a webhook it could not deliver for about 8 hours
//! (its "Automatic Retries" page; 406 stops it). Its documentation does not say whether a retry
//! is signed again, and the libraries that verify Mailgun's webhooks (django-anymail, the most
//! used) key events on the token and check no timestamp: they rely on a retry carrying the
//! signature first sent. So the default tolerance of a Mailgun source is [`RETRY_WINDOW`], not
//! the 300 s of the other schemes: a retry of a request that was refused (a 503 while the store
//! was down) or whose 200 was lost is still accepted, as a new event or as a `duplicate` of its
//! token. A source's own `tolerance_secs` overrides it. Were a retry ever signed again (a new
//! token), the lost-200 case would store a second message; a handler that settles an email by
//! its `Message-Id` (as the application's does) does not act on the email twice.
//!
//! Event type: `/event-data/event`. Sample: a `delivered` event; `msg_id` is the token.

use http::HeaderName;
use serde_json::{json, Map, Value};

use super::fields::Fields;
use super::headers::parse_timestamp;
use super::hmac::HmacKeys;
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
#[cfg(any(test, feature = "samples"))]
use super::stamp::rfc3339;
use super::tag::decode_hex_tag;
use super::tolerance::Tolerance;
use super::{
    FromSpec, Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use crate::identity::FieldRule;

const SIGNATURE_OBJECT: &str = "signature";
const TIMESTAMP: &str = "signature.timestamp";
const TOKEN: &str = "signature.token";
const SIGNATURE: &str = "signature.signature";
const PARENT: &str = "signature.parent-signature";

/// The default tolerance of a Mailgun source: Mailgun's retries of one webhook span about 8
/// hours (5 min, 10 min, 15 min, 1 h, 2 h, 4 h after the first attempt); 9 hours leaves room for
/// its queueing.
pub const RETRY_WINDOW: std::time::Duration = std::time::Duration::from_secs(9 * 3600);

/// The Mailgun scheme of one source.
#[derive(Debug, Clone)]
pub(super) struct Mailgun {
    keys: HmacKeys,
    tolerance: Tolerance,
}

fn malformed(field: &'static str, reason: &'static str) -> SignatureError {
    SignatureError::MalformedField { field, reason }
}

/// The `signature` object's timestamp as sent (a string or an integer) and its value.
fn timestamp(fields: &Fields<'_>) -> Result<(String, i64), SignatureError> {
    let raw = fields
        .raw("timestamp")
        .map_err(|_| malformed(TIMESTAMP, "it appears more than once"))?
        .ok_or(SignatureError::MissingField { field: TIMESTAMP })?;
    let text = match raw.get().as_bytes().first() {
        Some(b'"') => serde_json::from_str::<String>(raw.get())
            .map_err(|_| malformed(TIMESTAMP, "it is not a string"))?,
        _ => raw.get().to_owned(),
    };
    let (value, _) = parse_timestamp(&text).map_err(|reason| malformed(TIMESTAMP, reason))?;
    Ok((text, value))
}

fn renamed(
    result: Result<Option<String>, SignatureError>,
    field: &'static str,
) -> Result<Option<String>, SignatureError> {
    result.map_err(|e| match e {
        SignatureError::MalformedField { reason, .. } => malformed(field, reason),
        other => other,
    })
}

impl Mailgun {
    fn check(&self, body: &[u8], now_unix: i64) -> Result<(), SignatureError> {
        let top = Fields::parse(body).ok_or(malformed(
            SIGNATURE_OBJECT,
            "the body is not a JSON object, so it carries no signature",
        ))?;
        let object = top
            .raw(SIGNATURE_OBJECT)?
            .ok_or(SignatureError::MissingField {
                field: SIGNATURE_OBJECT,
            })?;
        let fields =
            Fields::nested(object).ok_or(malformed(SIGNATURE_OBJECT, "it is not an object"))?;
        let signature = renamed(fields.string("signature"), SIGNATURE)?
            .ok_or(SignatureError::MissingField { field: SIGNATURE })?;
        let token = renamed(fields.string("token"), TOKEN)?
            .ok_or(SignatureError::MissingField { field: TOKEN })?;
        let (ts_text, ts) = timestamp(&fields)?;
        if token.is_empty() || token.len() > 255 || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(malformed(TOKEN, "it is not 1-255 visible ASCII characters"));
        }
        let mut candidates = vec![decode_hex_tag(&signature).map_err(|r| malformed(SIGNATURE, r))?];
        if let Some(parent) = renamed(fields.string("parent-signature"), PARENT)? {
            candidates.push(decode_hex_tag(&parent).map_err(|r| malformed(PARENT, r))?);
        }
        self.keys.check(
            &[ts_text.as_bytes(), token.as_bytes()],
            candidates.into_iter(),
        )?;
        self.tolerance.check(ts, now_unix)
    }
}

impl FromSpec for Mailgun {
    /// Secrets are HTTP webhook signing keys, used as-is; no settings. The default tolerance is
    /// [`RETRY_WINDOW`].
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        Ok(Self {
            keys: HmacKeys::raw(spec.secrets)?,
            tolerance: Tolerance::new(if spec.tolerance_is_default {
                RETRY_WINDOW
            } else {
                spec.tolerance
            }),
        })
    }
}

impl Scheme for Mailgun {
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.body, request.now_unix).into()
    }

    /// Puts a `signature` object (token = `msg_id`) into the JSON object body.
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(message.body) else {
            return Err(SignError::Unsupported {
                reason: "Mailgun signs inside a JSON object body",
            });
        };
        let ts = message.timestamp.to_string();
        let tag = self.keys.sign(&[ts.as_bytes(), message.msg_id.as_bytes()]);
        let mut signature = Map::new();
        signature.insert("timestamp".into(), json!(ts));
        signature.insert("token".into(), json!(message.msg_id));
        signature.insert("signature".into(), json!(hex::encode(tag)));
        body.insert(SIGNATURE_OBJECT.into(), Value::Object(signature));
        Ok(Signed {
            headers: Vec::new(),
            body: Some(Value::Object(body).to_string().into_bytes()),
        })
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &[]
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::json_pointer("/signature/token")
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer("/event-data/event"))
    }

    /// Signed: only the timestamp and token inside the body's `signature` object (a replayed
    /// token is a duplicate); the rest of the body is not covered.
    fn signs(&self, rule: &FieldRule) -> bool {
        match rule {
            FieldRule::JsonPointer(p) => p.starts_with("/signature/"),
            FieldRule::FirstOf(rules) => rules.iter().all(|r| self.signs(r)),
            FieldRule::Header(_) | FieldRule::BodySha256 | FieldRule::FormSha256 => false,
        }
    }
}

/// The samples of the scheme (its provider's events, for `inboxctl send`).
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    /// A token: 50 random lowercase hex-like characters, as Mailgun's.
    fn sample_id(&self) -> String {
        random_alnum(50).to_ascii_lowercase()
    }

    fn sample_type(&self) -> &'static str {
        "delivered"
    }

    fn sample(&self, _event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "event-data": {
                "id": random_alnum(22),
                "event": event_type,
                "timestamp": now_secs,
                "log-level": "info",
                "recipient": "customer@example.com",
                "message": {"headers": {
                    "message-id": format!("{}@mg.example.com", random_alnum(16)),
                    "to": "customer@example.com",
                    "subject": "Your receipt"
                }},
                "delivery-status": {"code": 250, "message": "OK"},
                "user-variables": {"tenant": "acme"},
                "created": rfc3339(now_secs)
            }
        }))
    }
}

#[cfg(test)]
mod tests;
