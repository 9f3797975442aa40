//! Zoom (webhook events of Zoom apps): `x-zm-signature: v0=<hex>` with
//! `x-zm-request-timestamp: <unix seconds>`: a preset of the `v0` scheme (`v0.rs`).
//!
//! The MAC is HMAC-SHA256, keyed with the app's Secret Token (its UTF-8 bytes), over
//! `"v0:{timestamp}:{raw body}"`, the timestamp header's text as sent (Zoom's webhook sample
//! signs it so), hex. A matching signature must then be within the tolerance on both sides.
//!
//! **Handshake**: Zoom validates an endpoint (when it is set, and every 72 hours) with a signed
//! `{"event": "endpoint.url_validation", "payload": {"plainToken": "…"}}`; the answer is
//! `{"plainToken": "…", "encryptedToken": hex(HMAC-SHA256(secret token, plainToken))}`, keyed with
//! the secret that signed the request (during a rotation, the one Zoom uses). Nothing is stored.
//!
//! Event id: the SHA-256 of the body (Zoom's events carry no id; a retry resends the same body);
//! type: `/event`. Sample: a `meeting.started` event.

use std::sync::Arc;

use http::HeaderName;
use serde_json::json;

use super::handshake::{object_containing, Handshake, HandshakeReply};
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
#[cfg(any(test, feature = "samples"))]
use super::stamp::rfc3339;
use super::v0::{self, signed_parts, V0Headers, V0Preset, V0};
use super::{Request, Scheme, SchemeError, Spec};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};

const VALIDATION: &str = "endpoint.url_validation";
static ZOOM: V0Preset = V0Preset {
    name: "Zoom",
    headers: V0Headers {
        signature: HeaderName::from_static("x-zm-signature"),
        signature_label: "x-zm-signature",
        timestamp: HeaderName::from_static("x-zm-request-timestamp"),
        timestamp_label: "x-zm-request-timestamp",
    },
    signed_headers: [
        HeaderName::from_static("x-zm-request-timestamp"),
        HeaderName::from_static("x-zm-signature"),
    ],
    event_type: Some("/event"),
    handshake,
};

/// The Zoom scheme of one source: secrets are Secret Tokens, used as-is; no settings.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    v0::preset(&ZOOM, spec)
}

/// `endpoint.url_validation`: the plain token and its HMAC with the secret that signed the
/// request.
fn handshake<'a>(scheme: &'a V0, request: Request<'a>) -> Option<Handshake<'a>> {
    let body = object_containing(request.body, VALIDATION.as_bytes())?;
    if body.get("event")?.as_str()? != VALIDATION {
        return None;
    }
    let plain = body.get("payload")?.get("plainToken")?.as_str()?;
    let parsed = ZOOM.headers.parse(request.headers).ok()?;
    let encrypted = scheme.keys.sign_with_matching(
        &signed_parts(parsed.timestamp_text, request.body),
        &parsed.tag,
        plain.as_bytes(),
    )?;
    let answer = json!({"plainToken": plain, "encryptedToken": hex::encode(encrypted)});
    Some(HandshakeReply::json("zoom endpoint.url_validation", &answer).into())
}

/// Zoom's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        random_alnum(22)
    }

    fn sample_type(&self) -> &'static str {
        "meeting.started"
    }

    fn sample(&self, _event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "event": event_type,
            "event_ts": now_secs * 1000,
            "payload": {
                "account_id": random_alnum(22),
                "object": {
                    "id": fastrand::u64(10_000_000_000..99_999_999_999).to_string(),
                    "uuid": format!("{}==", random_alnum(22)),
                    "host_id": random_alnum(22),
                    "topic": "Weekly sync",
                    "type": 2,
                    "start_time": rfc3339(now_secs),
                    "timezone": "UTC"
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests;
