//! An event's identity: where its id and type come from ([`FieldRule`]: a JSON pointer into the
//! body, a header, or the body's hash) and their extraction from a verified request
//! ([`identify`]), with the typed errors a payload that cannot be identified gets
//! ([`IdentityError`]; all of them answer 400).
//!
//! Signature schemes name their default rules here (`Scheme::default_event_id`); a source's
//! configuration may override them (`event_id` / `event_type` in `WEBHOOK_SOURCES`).
//!
//! The body is parsed at most once, and only when a rule needs it: its top-level members are
//! validated and kept raw; a pointer descends into nested values lazily, and into a JSON document
//! embedded in a string (SNS's `Message`: `/Message/eventType`). A rule may also be the first of
//! several that finds a value (`{"first_of": [...]}`).

use crate::domain::{BodyDigest, EventId, EventType, InvalidValue};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;

/// Where a value (event id or type) is taken from. In `WEBHOOK_SOURCES`:
/// `{"json_pointer": "/a/b"}`, `{"header": "X-Name"}`, `"body_sha256"` or
/// `{"first_of": [rule, …]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldRule {
    /// A JSON pointer into the body (`/id`); the body must then be a JSON object.
    JsonPointer(String),
    /// A request header (case-insensitive).
    Header(String),
    /// The lower-case hex SHA-256 of the raw body (for providers that give no id).
    BodySha256,
    /// The first of these rules that finds a value (a value that is present but invalid stops
    /// the search: it is the error).
    FirstOf(Vec<FieldRule>),
}

impl FieldRule {
    /// A [`FieldRule::JsonPointer`].
    pub fn json_pointer(pointer: &str) -> Self {
        Self::JsonPointer(pointer.to_owned())
    }

    /// A [`FieldRule::Header`].
    pub fn header(name: &str) -> Self {
        Self::Header(name.to_owned())
    }

    /// Where the rule points, for error messages (`JSON pointer /id`, `header X-Id`).
    pub fn describe(&self) -> String {
        match self {
            Self::JsonPointer(p) => format!("JSON pointer {p}"),
            Self::Header(h) => format!("header {h}"),
            Self::BodySha256 => "the body hash".into(),
            Self::FirstOf(rules) => format!(
                "the first of {}",
                rules
                    .iter()
                    .map(Self::describe)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Whether the rule reads the body as JSON.
    pub fn reads_json(&self) -> bool {
        match self {
            Self::JsonPointer(_) => true,
            Self::FirstOf(rules) => rules.iter().any(Self::reads_json),
            Self::Header(_) | Self::BodySha256 => false,
        }
    }

    /// The header names the rule reads.
    pub fn headers(&self) -> Vec<&str> {
        match self {
            Self::Header(h) => vec![h.as_str()],
            Self::FirstOf(rules) => rules.iter().flat_map(Self::headers).collect(),
            Self::JsonPointer(_) | Self::BodySha256 => Vec::new(),
        }
    }
}

/// Why a (correctly signed) payload cannot be identified. Messages name the field at fault and
/// never quote the payload.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
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
}

impl IdentityError {
    /// The machine-readable error code (the HTTP status is always 400).
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidJson(_) | Self::NotAnObject => "invalid_json",
            Self::MissingEventId(_) => "missing_event_id",
            Self::InvalidEventId { .. } => "invalid_event_id",
            Self::MissingEventType(_) => "missing_event_type",
            Self::InvalidEventType { .. } => "invalid_event_type",
        }
    }
}

/// Whether these rules need the body parsed as a JSON object.
pub fn needs_json(event_id: &FieldRule, event_type: Option<&FieldRule>) -> bool {
    event_id.reads_json() || event_type.is_some_and(FieldRule::reads_json)
}

/// The identity of a verified delivery: its id by `event_id`, its type by `event_type` (`None`:
/// the source's events have no type). `digest` is the body's SHA-256 (computed once by the
/// caller, who stores it too).
pub fn identify(
    event_id: &FieldRule,
    event_type: Option<&FieldRule>,
    headers: &HeaderMap,
    body: &[u8],
    digest: &BodyDigest,
) -> Result<(EventId, Option<EventType>), IdentityError> {
    let json = if needs_json(event_id, event_type) {
        Some(JsonObject::parse(body)?)
    } else {
        None
    };
    let at = event_id.describe();
    let id = match extract(event_id, headers, json.as_ref(), digest) {
        Lookup::Found(v) => {
            EventId::parse(&v).map_err(|reason| IdentityError::InvalidEventId { at, reason })?
        }
        Lookup::Absent => return Err(IdentityError::MissingEventId(at)),
        Lookup::Invalid(why) => {
            return Err(IdentityError::InvalidEventId {
                at,
                reason: InvalidValue::BadCharacter { allowed: why },
            })
        }
    };
    let kind = match event_type {
        None => None,
        Some(rule) => {
            let at = rule.describe();
            match extract(rule, headers, json.as_ref(), digest) {
                Lookup::Found(v) => Some(
                    EventType::parse(&v)
                        .map_err(|reason| IdentityError::InvalidEventType { at, reason })?,
                ),
                Lookup::Absent => return Err(IdentityError::MissingEventType(at)),
                Lookup::Invalid(why) => {
                    return Err(IdentityError::InvalidEventType {
                        at,
                        reason: InvalidValue::BadCharacter { allowed: why },
                    })
                }
            }
        }
    };
    Ok((id, kind))
}

/// The top level of a JSON object body, parsed once (values left raw, validated but not built).
struct JsonObject<'a>(HashMap<Cow<'a, str>, &'a RawValue>);

impl<'a> JsonObject<'a> {
    /// One pass over the body: the top-level members are validated and kept raw.
    fn parse(body: &'a [u8]) -> Result<Self, IdentityError> {
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some() && first != Some(&b'{') {
            // A scalar or an array (valid JSON or not): either way not an event object.
            return Err(IdentityError::NotAnObject);
        }
        serde_json::from_slice(body)
            .map(Self)
            .map_err(|e| IdentityError::InvalidJson(json_error(&e)))
    }

    /// Resolves an RFC 6901 JSON pointer to a string (or an integer, as its digits).
    /// `Ok(None)`: absent or null. `Err(reason)`: present but not a string or integer.
    fn lookup(&self, pointer: &str) -> Result<Option<String>, &'static str> {
        let mut tokens = pointer
            .strip_prefix('/')
            .map(|p| p.split('/').map(unescape))
            .ok_or("is not a valid JSON pointer")?;
        let first = tokens.next().unwrap_or_default();
        let Some(current) = self.0.get(first.as_ref()).copied() else {
            return Ok(None);
        };
        let rest: Vec<Cow<'_, str>> = tokens.collect();
        descend(current.get(), &rest)
    }
}

/// Follows `tokens` from the JSON value `text`. A string met before the last token is parsed as
/// the JSON document it may hold (SNS's `Message`), and the pointer continues inside it.
fn descend(text: &str, tokens: &[Cow<'_, str>]) -> Result<Option<String>, &'static str> {
    let Some((token, rest)) = tokens.split_first() else {
        return leaf(text);
    };
    let next = match text.as_bytes().first() {
        Some(b'{') => serde_json::from_str::<HashMap<Cow<str>, &RawValue>>(text)
            .ok()
            .and_then(|m| m.get(token.as_ref()).copied()),
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text).unwrap_or_default();
            token
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i).copied())
        }
        Some(b'"') => {
            let Ok(embedded) = serde_json::from_str::<String>(text) else {
                return Ok(None);
            };
            let embedded = embedded.trim();
            if !embedded.starts_with(['{', '['])
                || serde_json::from_str::<&RawValue>(embedded).is_err()
            {
                return Ok(None);
            }
            return descend(embedded, tokens);
        }
        _ => None,
    };
    match next {
        Some(v) => descend(v.get(), rest),
        None => Ok(None),
    }
}

/// The value at the end of a pointer: a string, an integer (its digits), or nothing (null).
fn leaf(text: &str) -> Result<Option<String>, &'static str> {
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
        FieldRule::FirstOf(rules) => rules
            .iter()
            .map(|rule| extract(rule, headers, json, digest))
            .find(|found| !matches!(found, Lookup::Absent))
            .unwrap_or(Lookup::Absent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

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
    fn pointers_descend_into_json_embedded_in_strings() {
        // An SNS notification: the SES event is a JSON document inside the `Message` string.
        let body = br#"{"Type":"Notification","Message":"{\"eventType\":\"Delivery\",\"mail\":{\"tags\":{\"t\":[\"acme\"]}}}","Text":"plain words","Arr":"[1,\"x\"]"}"#;
        let doc = JsonObject::parse(body).unwrap();
        assert_eq!(
            doc.lookup("/Message/eventType"),
            Ok(Some("Delivery".into()))
        );
        assert_eq!(
            doc.lookup("/Message/mail/tags/t/0"),
            Ok(Some("acme".into()))
        );
        assert_eq!(doc.lookup("/Arr/1"), Ok(Some("x".into())));
        assert_eq!(doc.lookup("/Message/missing"), Ok(None));
        assert_eq!(doc.lookup("/Text/eventType"), Ok(None), "not JSON inside");
        assert!(
            doc.lookup("/Message").unwrap().unwrap().starts_with('{'),
            "the string itself"
        );
        assert!(
            doc.lookup("/Message/mail").is_err(),
            "an object is not a value"
        );
    }

    #[test]
    fn first_of_takes_the_first_rule_that_finds_a_value() {
        let rule: FieldRule = serde_json::from_str(
            r#"{"first_of":[{"json_pointer":"/Message/eventType"},{"json_pointer":"/Message/notificationType"},{"header":"X-Type"},{"json_pointer":"/Type"}]}"#,
        )
        .unwrap();
        assert!(rule.reads_json());
        assert_eq!(rule.headers(), ["X-Type"]);
        assert!(rule
            .describe()
            .starts_with("the first of JSON pointer /Message/eventType, "));
        let kind = |body: &[u8]| {
            identify(
                &FieldRule::BodySha256,
                Some(&rule),
                &HeaderMap::new(),
                body,
                &BodyDigest::of(body),
            )
            .map(|(_, t)| t.map(|t| t.as_str().to_owned()))
        };
        assert_eq!(
            kind(br#"{"Type":"Notification","Message":"{\"eventType\":\"Bounce\"}"}"#)
                .unwrap()
                .unwrap(),
            "Bounce"
        );
        assert_eq!(
            kind(br#"{"Type":"Notification","Message":"{\"notificationType\":\"Delivery\"}"}"#)
                .unwrap()
                .unwrap(),
            "Delivery"
        );
        assert_eq!(
            kind(
                br#"{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe"}"#
            )
            .unwrap()
            .unwrap(),
            "SubscriptionConfirmation"
        );
        assert_eq!(
            kind(br#"{"Message":"x"}"#).unwrap_err().code(),
            "missing_event_type"
        );
        assert_eq!(
            kind(br#"{"Type":"N","Message":"{\"eventType\":true}"}"#)
                .unwrap_err()
                .code(),
            "invalid_event_type"
        );
        assert!(!FieldRule::FirstOf(vec![FieldRule::BodySha256]).reads_json());
    }

    #[test]
    fn rules_deserialize_and_describe_themselves() {
        let cases: &[(&str, FieldRule, &str)] = &[
            (
                r#"{"json_pointer":"/id"}"#,
                FieldRule::json_pointer("/id"),
                "JSON pointer /id",
            ),
            (
                r#"{"header":"X-Id"}"#,
                FieldRule::header("X-Id"),
                "header X-Id",
            ),
            (r#""body_sha256""#, FieldRule::BodySha256, "the body hash"),
        ];
        for (json, rule, described) in cases {
            assert_eq!(&serde_json::from_str::<FieldRule>(json).unwrap(), rule);
            assert_eq!(rule.describe(), *described);
        }
        assert!(serde_json::from_str::<FieldRule>(r#""header""#).is_err());
    }

    #[test]
    fn identify_by_header_pointer_and_hash() {
        let body = br#"{"id":42,"type":"a.b"}"#;
        let digest = BodyDigest::of(body);
        let mut headers = HeaderMap::new();
        headers.insert("x-id", HeaderValue::from_static(" hdr-1 "));
        let (id, kind) = identify(
            &FieldRule::header("X-Id"),
            Some(&FieldRule::json_pointer("/type")),
            &headers,
            body,
            &digest,
        )
        .unwrap();
        assert_eq!((id.as_str(), kind.unwrap().as_str()), ("hdr-1", "a.b"));
        let (id, kind) = identify(
            &FieldRule::json_pointer("/id"),
            None,
            &headers,
            body,
            &digest,
        )
        .unwrap();
        assert_eq!((id.as_str(), kind), ("42", None));
        // No JSON rule: the body is never parsed (it need not be JSON).
        let (id, _) = identify(
            &FieldRule::BodySha256,
            None,
            &headers,
            b"not json",
            &BodyDigest::of(b"not json"),
        )
        .unwrap();
        assert_eq!(id.as_str(), BodyDigest::of(b"not json").to_hex());
    }

    #[test]
    fn identity_errors_have_codes() {
        let digest = BodyDigest::of(b"");
        let mut twice = HeaderMap::new();
        twice.append("x-id", HeaderValue::from_static("a"));
        twice.append("x-id", HeaderValue::from_static("b"));
        let id = FieldRule::json_pointer("/id");
        let ty = FieldRule::json_pointer("/type");
        let none = HeaderMap::new();
        let cases: Vec<(Result<_, IdentityError>, &str)> = vec![
            (identify(&id, None, &none, b"[1]", &digest), "invalid_json"),
            (identify(&id, None, &none, b"{", &digest), "invalid_json"),
            (
                identify(&id, None, &none, b"{}", &digest),
                "missing_event_id",
            ),
            (
                identify(&id, None, &none, br#"{"id":true}"#, &digest),
                "invalid_event_id",
            ),
            (
                identify(&FieldRule::header("x-id"), None, &twice, b"", &digest),
                "invalid_event_id",
            ),
            (
                identify(&id, Some(&ty), &none, br#"{"id":"e"}"#, &digest),
                "missing_event_type",
            ),
            (
                identify(&id, Some(&ty), &none, br#"{"id":"e","type":""}"#, &digest),
                "invalid_event_type",
            ),
        ];
        for (result, code) in cases {
            let err = result.unwrap_err();
            assert_eq!(err.code(), code, "{err}");
            assert!(!err.to_string().is_empty());
        }
    }
}
