//! The ingest command: verify the signature on the raw bytes, identify the event, store it once.
//!
//! [`Ingestor::ingest`] takes a transport-neutral request (what API Gateway's HTTP API, a Lambda
//! Function URL or an ALB all deliver) and returns either an [`Acknowledgement`] or an
//! [`IngestError`] that knows its HTTP status and its JSON body. The order of checks is part of
//! the contract: method, source, body encoding and size, signature, then identity (so a 400 about
//! the payload is only ever answered to a correctly signed request), then the one durable write.

use crate::clock::Clock;
use crate::config::{FieldRule, Source, Sources};
use crate::domain::{BodyDigest, EventId, EventType, InvalidValue, MessageKey};
use crate::signature::SignatureError;
use crate::store::{Delivery, Inbox, NewMessage, PutOutcome, StoreError};
use base64::Engine;
use http::HeaderMap;
use serde::Serialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;

/// Seconds a client is asked to wait after a 503.
pub const RETRY_AFTER_SECS: u32 = 5;

/// A webhook delivery as the transport hands it over.
#[derive(Debug, Clone, Copy)]
pub struct IngestRequest<'a> {
    pub method: &'a str,
    /// The `{source}` path segment.
    pub source: &'a str,
    pub headers: &'a HeaderMap,
    /// The body as the transport carries it (API Gateway: text, or base64 when `body_is_base64`).
    pub body: Option<&'a str>,
    pub body_is_base64: bool,
}

/// What happened to an accepted delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// New event, durably stored.
    Accepted,
    /// Already stored earlier; this delivery was journaled, the original left untouched.
    Duplicate,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Duplicate => "duplicate",
        }
    }
}

/// A 200 answer: the event is durably stored (now or before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acknowledgement {
    pub outcome: Outcome,
    pub key: MessageKey,
    pub event_type: Option<EventType>,
    /// Only for duplicates: whether the body differs from the stored original.
    pub body_differs: bool,
}

impl Acknowledgement {
    /// The JSON body: `{"status":"accepted"|"duplicate","id":"…"}`.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Body<'a> {
            status: Outcome,
            id: &'a str,
        }
        serde_json::to_string(&Body {
            status: self.outcome,
            id: self.key.event_id.as_str(),
        })
        .unwrap_or_else(|_| format!("{{\"status\":\"{}\"}}", self.outcome.as_str()))
    }
}

/// Why a delivery was not accepted. Each variant maps to one status and one JSON error code.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("method {0} is not allowed; use POST")]
    MethodNotAllowed(String),
    #[error("no webhook source named {0:?} is configured")]
    UnknownSource(String),
    #[error("no webhook source is named in the path; POST to /webhooks/{{source}}")]
    NoSource,
    #[error("the request body is flagged as base64 but is not valid base64")]
    BadBodyEncoding,
    #[error("the body is {len} bytes; the limit is {limit} bytes")]
    TooLarge { len: usize, limit: usize },
    #[error("{0}")]
    Signature(#[from] SignatureError),
    #[error("the body is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("the body must be a JSON object")]
    NotAnObject,
    #[error("the event id is missing (expected at {0})")]
    MissingEventId(String),
    #[error("the event id at {at} {reason}")]
    InvalidEventId { at: String, reason: InvalidValue },
    #[error("the event type is missing (expected at {0})")]
    MissingEventType(String),
    #[error("the event type at {at} {reason}")]
    InvalidEventType { at: String, reason: InvalidValue },
    #[error("the event could not be stored; retry later")]
    Store(#[from] StoreError),
}

/// The JSON body of every error answer.
#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    pub error: &'a str,
    pub message: Cow<'a, str>,
}

impl ErrorBody<'static> {
    /// The opaque answer to an internal error: the cause goes to the log, not to the client.
    pub fn internal() -> Self {
        Self {
            error: "internal_error",
            message: Cow::Borrowed("internal error"),
        }
    }
}

impl ErrorBody<'_> {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|_| r#"{"error":"internal_error","message":"internal error"}"#.into())
    }
}

impl IngestError {
    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            Self::MethodNotAllowed(_) => 405,
            Self::UnknownSource(_) | Self::NoSource => 404,
            Self::TooLarge { .. } => 413,
            Self::Signature(_) => 401,
            Self::Store(_) => 503,
            Self::BadBodyEncoding
            | Self::InvalidJson(_)
            | Self::NotAnObject
            | Self::MissingEventId(_)
            | Self::InvalidEventId { .. }
            | Self::MissingEventType(_)
            | Self::InvalidEventType { .. } => 400,
        }
    }

    /// The machine-readable error code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::UnknownSource(_) | Self::NoSource => "unknown_source",
            Self::BadBodyEncoding => "invalid_body_encoding",
            Self::TooLarge { .. } => "payload_too_large",
            Self::Signature(e) => e.code(),
            Self::InvalidJson(_) => "invalid_json",
            Self::NotAnObject => "invalid_json",
            Self::MissingEventId(_) => "missing_event_id",
            Self::InvalidEventId { .. } => "invalid_event_id",
            Self::MissingEventType(_) => "missing_event_type",
            Self::InvalidEventType { .. } => "invalid_event_type",
            Self::Store(_) => "store_unavailable",
        }
    }

    /// Extra response headers (`Allow` on 405, `Retry-After` on 503).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::MethodNotAllowed(_) => vec![("allow", "POST".into())],
            Self::Store(_) => vec![("retry-after", RETRY_AFTER_SECS.to_string())],
            _ => Vec::new(),
        }
    }

    /// The JSON error body. Messages never contain secrets, signatures or the payload.
    pub fn body(&self) -> ErrorBody<'_> {
        ErrorBody {
            error: self.code(),
            message: Cow::Owned(self.to_string()),
        }
    }
}

/// Undoes API Gateway's base64 and enforces the size limit, without decoding an oversized body.
pub fn decode_body(
    body: Option<&str>,
    is_base64: bool,
    limit: usize,
) -> Result<Cow<'_, [u8]>, IngestError> {
    let Some(body) = body else {
        return Ok(Cow::Borrowed(&[]));
    };
    if !is_base64 {
        if body.len() > limit {
            return Err(IngestError::TooLarge {
                len: body.len(),
                limit,
            });
        }
        return Ok(Cow::Borrowed(body.as_bytes()));
    }
    let engine = &base64::engine::general_purpose::STANDARD;
    let decoded_len = base64::decoded_len_estimate(body.len());
    // The estimate may exceed the real length by up to 2 bytes of padding.
    if decoded_len > limit.saturating_add(2) {
        return Err(IngestError::TooLarge {
            len: decoded_len,
            limit,
        });
    }
    let bytes = engine
        .decode(body)
        .map_err(|_| IngestError::BadBodyEncoding)?;
    if bytes.len() > limit {
        return Err(IngestError::TooLarge {
            len: bytes.len(),
            limit,
        });
    }
    Ok(Cow::Owned(bytes))
}

/// The top level of a JSON object body, parsed once (values left raw, validated but not built).
struct JsonObject<'a>(HashMap<Cow<'a, str>, &'a RawValue>);

impl<'a> JsonObject<'a> {
    /// One pass over the body: the top-level members are validated and kept raw.
    fn parse(body: &'a [u8]) -> Result<Self, IngestError> {
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some() && first != Some(&b'{') {
            // A scalar or an array (valid JSON or not): either way not an event object.
            return Err(IngestError::NotAnObject);
        }
        serde_json::from_slice(body)
            .map(Self)
            .map_err(|e| IngestError::InvalidJson(json_error(&e)))
    }

    /// Resolves an RFC 6901 JSON pointer to a string (or an integer, as its digits).
    /// `Ok(None)`: absent or null. `Err(reason)`: present but not a string or integer.
    fn lookup(&self, pointer: &str) -> Result<Option<String>, &'static str> {
        let mut tokens = pointer
            .strip_prefix('/')
            .map(|p| p.split('/'))
            .ok_or("is not a valid JSON pointer")?;
        let first = unescape(tokens.next().unwrap_or_default());
        let Some(mut current) = self.0.get(first.as_ref()).copied() else {
            return Ok(None);
        };
        for token in tokens {
            let token = unescape(token);
            let next = if current.get().starts_with('{') {
                serde_json::from_str::<HashMap<Cow<str>, &RawValue>>(current.get())
                    .ok()
                    .and_then(|m| m.get(token.as_ref()).copied())
            } else if current.get().starts_with('[') {
                let items: Vec<&RawValue> = serde_json::from_str(current.get()).unwrap_or_default();
                token
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i).copied())
            } else {
                None
            };
            match next {
                Some(v) => current = v,
                None => return Ok(None),
            }
        }
        let text = current.get();
        match text.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(text)
                .map(Some)
                .map_err(|_| "is not a valid string"),
            Some(b'n') => Ok(None),
            Some(b'-' | b'0'..=b'9') if text.bytes().all(|b| b == b'-' || b.is_ascii_digit()) => {
                Ok(Some(text.into()))
            }
            _ => Err("must be a string or an integer"),
        }
    }
}

fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

/// A JSON syntax error's position and category, never the input itself.
fn json_error(e: &serde_json::Error) -> String {
    let what = match e.classify() {
        serde_json::error::Category::Eof => "unexpected end of input",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Io => "read error",
    };
    format!("{what} at line {}, column {}", e.line(), e.column())
}

/// Where a field rule points, for error messages.
fn describe(rule: &FieldRule) -> String {
    match rule {
        FieldRule::JsonPointer(p) => format!("JSON pointer {p}"),
        FieldRule::Header(h) => format!("header {h}"),
        FieldRule::BodySha256 => "the body hash".into(),
    }
}

enum Lookup {
    Found(String),
    Absent,
    Invalid(&'static str),
}

fn extract(
    rule: &FieldRule,
    headers: &HeaderMap,
    json: Option<&JsonObject<'_>>,
    digest: &BodyDigest,
) -> Lookup {
    match rule {
        FieldRule::BodySha256 => Lookup::Found(digest.to_hex()),
        FieldRule::Header(name) => {
            let mut values = headers.get_all(name.as_str()).iter();
            match (values.next(), values.next()) {
                (None, _) => Lookup::Absent,
                (Some(_), Some(_)) => Lookup::Invalid("is given more than once"),
                (Some(v), None) => match v.to_str() {
                    Ok(s) => Lookup::Found(s.trim().to_owned()),
                    Err(_) => Lookup::Invalid("is not visible ASCII"),
                },
            }
        }
        FieldRule::JsonPointer(p) => match json.map(|j| j.lookup(p)) {
            Some(Ok(Some(v))) => Lookup::Found(v),
            Some(Ok(None)) | None => Lookup::Absent,
            Some(Err(reason)) => Lookup::Invalid(reason),
        },
    }
}

/// The identity of a verified delivery.
fn identify(
    source: &Source,
    headers: &HeaderMap,
    body: &[u8],
    digest: &BodyDigest,
) -> Result<(EventId, Option<EventType>), IngestError> {
    let json = if source.needs_json() {
        Some(JsonObject::parse(body)?)
    } else {
        None
    };
    let at = describe(&source.event_id);
    let event_id = match extract(&source.event_id, headers, json.as_ref(), digest) {
        Lookup::Found(v) => {
            EventId::parse(&v).map_err(|reason| IngestError::InvalidEventId { at, reason })?
        }
        Lookup::Absent => return Err(IngestError::MissingEventId(at)),
        Lookup::Invalid(why) => {
            return Err(IngestError::InvalidEventId {
                at,
                reason: InvalidValue::BadCharacter { allowed: why },
            })
        }
    };
    let event_type = match &source.event_type {
        None => None,
        Some(rule) => {
            let at = describe(rule);
            match extract(rule, headers, json.as_ref(), digest) {
                Lookup::Found(v) => Some(
                    EventType::parse(&v)
                        .map_err(|reason| IngestError::InvalidEventType { at, reason })?,
                ),
                Lookup::Absent => return Err(IngestError::MissingEventType(at)),
                Lookup::Invalid(why) => {
                    return Err(IngestError::InvalidEventType {
                        at,
                        reason: InvalidValue::BadCharacter { allowed: why },
                    })
                }
            }
        }
    };
    Ok((event_id, event_type))
}

/// The headers kept with a message (only those the source needs to re-verify and re-identify).
fn kept_headers(source: &Source, headers: &HeaderMap) -> Vec<(String, String)> {
    source
        .kept_headers()
        .into_iter()
        .filter_map(|name| {
            let joined = headers
                .get_all(name.as_str())
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect::<Vec<_>>()
                .join(", ");
            (!joined.is_empty()).then_some((name, joined))
        })
        .collect()
}

/// The ingest service: configuration, a store and a clock, built once per cold start.
#[derive(Debug)]
pub struct Ingestor<S, C> {
    sources: Sources,
    store: S,
    clock: C,
    max_body_bytes: usize,
    retention_days: u32,
}

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    pub fn new(
        sources: Sources,
        store: S,
        clock: C,
        max_body_bytes: usize,
        retention_days: u32,
    ) -> Self {
        Self {
            sources,
            store,
            clock,
            max_body_bytes,
            retention_days,
        }
    }

    /// The store, for tests and tools.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Verifies, identifies and stores one delivery. `Ok` means durably stored (now or before).
    pub async fn ingest(&self, req: IngestRequest<'_>) -> Result<Acknowledgement, IngestError> {
        if !req.method.eq_ignore_ascii_case("POST") {
            return Err(IngestError::MethodNotAllowed(
                req.method.chars().take(16).collect(),
            ));
        }
        if req.source.is_empty() {
            return Err(IngestError::NoSource);
        }
        let source = self.sources.get(req.source).ok_or_else(|| {
            // Echo the name only when it is a plausible source name (never arbitrary input).
            let shown = crate::domain::SourceName::parse(req.source)
                .map(|s| s.to_string())
                .unwrap_or_default();
            IngestError::UnknownSource(shown)
        })?;
        let body = decode_body(req.body, req.body_is_base64, self.max_body_bytes)?;
        let now_ms = self.clock.now_millis();
        source
            .verifier
            .verify(req.headers, &body, now_ms.div_euclid(1000))?;
        let body_digest = BodyDigest::of(&body);
        let (event_id, event_type) = identify(source, req.headers, &body, &body_digest)?;
        let key = MessageKey::new(source.name.clone(), event_id);
        let headers = kept_headers(source, req.headers);
        let message = NewMessage {
            key,
            event_type,
            received_at_ms: now_ms,
            body: body.into_owned(),
            body_digest,
            headers,
        };
        match self.store.put_if_absent(&message).await? {
            PutOutcome::Inserted => Ok(Acknowledgement {
                outcome: Outcome::Accepted,
                key: message.key,
                event_type: message.event_type,
                body_differs: false,
            }),
            PutOutcome::AlreadyExists { original_digest } => {
                let body_differs = original_digest.is_some_and(|d| d != message.body_digest);
                if body_differs {
                    tracing::warn!(
                        source = %message.key.source,
                        event_id = %message.key.event_id,
                        "repeated delivery with a different body; the original is kept, the new body is journaled"
                    );
                }
                let retention_secs = i64::from(self.retention_days) * 86_400;
                let NewMessage {
                    key,
                    event_type,
                    body,
                    headers,
                    ..
                } = message;
                let delivery = Delivery {
                    key,
                    received_at_ms: now_ms,
                    body_digest,
                    body_differs,
                    differing_body: body_differs.then_some(body),
                    headers,
                    expires_at_secs: now_ms.div_euclid(1000) + retention_secs,
                };
                self.store.journal_delivery(&delivery).await?;
                Ok(Acknowledgement {
                    outcome: Outcome::Duplicate,
                    key: delivery.key,
                    event_type,
                    body_differs,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::config::parse_secrets;
    use crate::store::memory::MemoryInbox;

    const NOW: i64 = 1_700_000_000;

    fn ingestor(max_body: usize) -> Ingestor<MemoryInbox, ManualClock> {
        let secrets = parse_secrets(
            r#"{"stripe":["whsec_test"],"gh":["gh-secret"],"slack":["slack-secret"]}"#,
            "WEBHOOK_SECRETS",
        )
        .unwrap();
        let sources = Sources::from_json(
            r#"{"stripe":{"scheme":"stripe"},"gh":{"scheme":"github"},"slack":{"scheme":"slack"}}"#,
            &secrets,
        )
        .unwrap();
        Ingestor::new(
            sources,
            MemoryInbox::new(),
            ManualClock::at_secs(NOW),
            max_body,
            30,
        )
    }

    fn signed(
        ing: &Ingestor<MemoryInbox, ManualClock>,
        source: &str,
        body: &[u8],
        id: &str,
    ) -> HeaderMap {
        let src = ing.sources.get(source).unwrap();
        let mut headers = HeaderMap::new();
        for (k, v) in src.verifier.sign(body, NOW, id) {
            headers.append(k, v);
        }
        headers
    }

    async fn post(
        ing: &Ingestor<MemoryInbox, ManualClock>,
        source: &str,
        headers: &HeaderMap,
        body: &str,
    ) -> Result<Acknowledgement, IngestError> {
        ing.ingest(IngestRequest {
            method: "POST",
            source,
            headers,
            body: Some(body),
            body_is_base64: false,
        })
        .await
    }

    const EVENT: &str =
        r#"{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}"#;

    #[tokio::test]
    async fn new_event_is_accepted_and_stored_once_with_one_write() {
        let ing = ingestor(1024);
        let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
        let ack = post(&ing, "stripe", &headers, EVENT).await.unwrap();
        assert_eq!(ack.outcome, Outcome::Accepted);
        assert_eq!(ack.to_json(), r#"{"status":"accepted","id":"evt_1"}"#);
        assert_eq!(
            ing.store().write_requests(),
            1,
            "one durable write on the hot path"
        );
        let stored = ing.store().message(&ack.key).unwrap();
        assert_eq!(stored.body, EVENT.as_bytes());
        assert_eq!(
            stored.event_type.as_ref().map(|t| t.as_str()),
            Some("invoice.paid")
        );
        assert_eq!(stored.received_at, NOW * 1000);
        assert!(stored.headers.contains_key("stripe-signature"));
    }

    #[tokio::test]
    async fn repeated_delivery_is_a_duplicate_and_journaled() {
        let ing = ingestor(1024);
        let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
        post(&ing, "stripe", &headers, EVENT).await.unwrap();
        let ack = post(&ing, "stripe", &headers, EVENT).await.unwrap();
        assert_eq!(ack.outcome, Outcome::Duplicate);
        assert!(!ack.body_differs);
        assert_eq!(ing.store().message_count(), 1);
        let journal = ing.store().journal();
        assert_eq!(journal.len(), 1);
        assert!(!journal[0].body_differs && journal[0].differing_body.is_none());
        assert_eq!(journal[0].expires_at_secs, NOW + 30 * 86_400);
    }

    #[tokio::test]
    async fn same_id_with_another_body_keeps_the_original_and_flags_the_journal() {
        let ing = ingestor(1024);
        post(
            &ing,
            "stripe",
            &signed(&ing, "stripe", EVENT.as_bytes(), ""),
            EVENT,
        )
        .await
        .unwrap();
        let changed = EVENT.replace("in_1", "in_2");
        let ack = post(
            &ing,
            "stripe",
            &signed(&ing, "stripe", changed.as_bytes(), ""),
            &changed,
        )
        .await
        .unwrap();
        assert_eq!(ack.outcome, Outcome::Duplicate);
        assert!(ack.body_differs);
        assert_eq!(
            ing.store().message(&ack.key).unwrap().body,
            EVENT.as_bytes(),
            "original untouched"
        );
        let journal = ing.store().journal();
        assert_eq!(
            journal[0].differing_body.as_deref(),
            Some(changed.as_bytes())
        );
    }

    #[tokio::test]
    async fn store_outage_is_503_with_retry_after() {
        let ing = ingestor(1024);
        ing.store().set_down(true);
        let err = post(
            &ing,
            "stripe",
            &signed(&ing, "stripe", EVENT.as_bytes(), ""),
            EVENT,
        )
        .await
        .unwrap_err();
        assert_eq!((err.status(), err.code()), (503, "store_unavailable"));
        assert_eq!(err.headers(), vec![("retry-after", "5".to_string())]);
        ing.store().set_down(false);
        assert_eq!(ing.store().message_count(), 0);
    }

    #[tokio::test]
    async fn base64_bodies_are_decoded_before_verification() {
        let ing = ingestor(1024);
        let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
        let encoded = base64::engine::general_purpose::STANDARD.encode(EVENT);
        let req = IngestRequest {
            method: "POST",
            source: "stripe",
            headers: &headers,
            body: Some(&encoded),
            body_is_base64: true,
        };
        assert_eq!(ing.ingest(req).await.unwrap().outcome, Outcome::Accepted);
        let bad = IngestRequest {
            body: Some("%%%not base64"),
            ..req
        };
        assert_eq!(
            ing.ingest(bad).await.unwrap_err().code(),
            "invalid_body_encoding"
        );
    }

    #[tokio::test]
    async fn refusals_write_nothing() {
        let ing = ingestor(64);
        let h = signed(&ing, "stripe", EVENT.as_bytes(), "");
        let get = IngestRequest {
            method: "GET",
            source: "stripe",
            headers: &h,
            body: None,
            body_is_base64: false,
        };
        let cases: Vec<(Result<Acknowledgement, IngestError>, u16, &str)> = vec![
            (ing.ingest(get).await, 405, "method_not_allowed"),
            (post(&ing, "nope", &h, EVENT).await, 404, "unknown_source"),
            (post(&ing, "", &h, EVENT).await, 404, "unknown_source"),
            (
                post(&ing, "stripe", &h, EVENT).await,
                413,
                "payload_too_large",
            ),
            (
                post(&ing, "stripe", &HeaderMap::new(), "{}").await,
                401,
                "signature_missing",
            ),
        ];
        for (result, status, code) in cases {
            let err = result.unwrap_err();
            assert_eq!((err.status(), err.code()), (status, code), "{err}");
            let body: serde_json::Value = serde_json::from_str(&err.body().to_json()).unwrap();
            assert_eq!(body["error"], code);
            assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
        assert_eq!(ing.store().write_requests(), 0);
    }

    #[tokio::test]
    async fn identity_errors_after_a_valid_signature() {
        let ing = ingestor(4096);
        let cases = [
            ("[1,2]", "invalid_json"),
            ("null", "invalid_json"),
            ("{\"id\":", "invalid_json"),
            (r#"{"type":"x"}"#, "missing_event_id"),
            (r#"{"id":"","type":"x"}"#, "invalid_event_id"),
            (r#"{"id":"a b","type":"x"}"#, "invalid_event_id"),
            (r#"{"id":{"x":1},"type":"x"}"#, "invalid_event_id"),
            (r#"{"id":"evt_1"}"#, "missing_event_type"),
            (r#"{"id":"evt_1","type":7.5}"#, "invalid_event_type"),
        ];
        for (body, code) in cases {
            let err = post(
                &ing,
                "stripe",
                &signed(&ing, "stripe", body.as_bytes(), ""),
                body,
            )
            .await
            .unwrap_err();
            assert_eq!((err.status(), err.code()), (400, code), "{body}");
        }
        let huge = format!(r#"{{"id":"{}","type":"x"}}"#, "x".repeat(300));
        let err = post(
            &ing,
            "stripe",
            &signed(&ing, "stripe", huge.as_bytes(), ""),
            &huge,
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), "invalid_event_id");
        assert_eq!(ing.store().write_requests(), 0);
    }

    #[tokio::test]
    async fn ids_from_headers_numbers_and_body_hash() {
        let ing = ingestor(4096);
        let body = r#"{"zen":"Keep it logically awesome."}"#;
        let mut h = signed(
            &ing,
            "gh",
            body.as_bytes(),
            "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        );
        h.insert("x-github-event", http::HeaderValue::from_static("ping"));
        let ack = post(&ing, "gh", &h, body).await.unwrap();
        assert_eq!(
            ack.key.event_id.as_str(),
            "72d3162e-cc78-11e3-81ab-4c9367dc0958"
        );
        assert_eq!(ack.event_type.unwrap().as_str(), "ping");

        let slack = "token=x&command=%2Fweather";
        let ack = post(
            &ing,
            "slack",
            &signed(&ing, "slack", slack.as_bytes(), ""),
            slack,
        )
        .await
        .unwrap();
        assert_eq!(
            ack.key.event_id.as_str(),
            BodyDigest::of(slack.as_bytes()).to_hex(),
            "no id: body hash"
        );
        assert_eq!(ack.event_type, None);

        let numeric = r#"{"id":12345,"type":"a.b","nested":{"deep":[1,{"x":"y"}]}}"#;
        let ack = post(
            &ing,
            "stripe",
            &signed(&ing, "stripe", numeric.as_bytes(), ""),
            numeric,
        )
        .await
        .unwrap();
        assert_eq!(ack.key.event_id.as_str(), "12345");
    }

    #[test]
    fn json_pointers() {
        let body = br#"{"a":{"b/c":["x",{"~d":"deep"}]},"n":null,"s":"str"}"#;
        let doc = JsonObject::parse(body).unwrap();
        assert_eq!(doc.lookup("/a/b~1c/1/~0d"), Ok(Some("deep".into())));
        assert_eq!(doc.lookup("/a/b~1c/0"), Ok(Some("x".into())));
        assert_eq!(doc.lookup("/a/b~1c/9"), Ok(None));
        assert_eq!(doc.lookup("/n"), Ok(None));
        assert_eq!(doc.lookup("/missing"), Ok(None));
        assert_eq!(doc.lookup("/s"), Ok(Some("str".into())));
        assert!(doc.lookup("/a").is_err());
        assert!(doc.lookup("no-slash").is_err());
    }

    #[test]
    fn base64_size_is_checked_before_decoding() {
        let big = "A".repeat(4000);
        assert!(matches!(
            decode_body(Some(&big), true, 1000),
            Err(IngestError::TooLarge { .. })
        ));
        let exact = base64::engine::general_purpose::STANDARD.encode([7u8; 1000]);
        assert_eq!(decode_body(Some(&exact), true, 1000).unwrap().len(), 1000);
        let over = base64::engine::general_purpose::STANDARD.encode([7u8; 1001]);
        assert!(matches!(
            decode_body(Some(&over), true, 1000),
            Err(IngestError::TooLarge { len: 1001, .. })
        ));
        assert_eq!(decode_body(None, true, 10).unwrap().len(), 0);
    }
}
