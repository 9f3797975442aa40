//! An event's identity: where its id and type come from ([`FieldRule`]: a JSON pointer into the
//! body, a header, the body's hash, or the hash of its signed form parameters: `form.rs`) and
//! their extraction from a verified request
//! ([`identify`] → [`Identity`]).
//!
//! Signature schemes name their default rules (`Scheme::default_event_id`) and say whether their
//! signature covers what a rule reads (`Scheme::signs`); a source's configuration may override the
//! rules (`event_id` / `event_type` in `WEBHOOK_SOURCES`, checked at start-up by
//! [`FieldRule::check`]).
//!
//! Two rules keep a signed request from being lost or replayed as new:
//!
//! - **The dedupe key is always signed.** When a source's id comes from a header its signature
//!   does not cover (GitHub's `X-GitHub-Delivery`, Shopify's `X-Shopify-Webhook-Id`), anyone
//!   holding one signed request could resend it with a fresh id: the key is then the SHA-256 of
//!   the signed body, and the header's id is kept beside it as [`Identity::provider_id`].
//! - **A signed event is never refused for its payload.** A correctly signed request whose id or
//!   type cannot be read is stored with the type [`EventType::UNKNOWN`] (never routed to a
//!   handler, so `ignored`, listable and replayable), keyed by its body's hash when the id is the
//!   part that failed; [`Identity::unidentified`] says why. A 400 would only make the provider
//!   retry until it disables the endpoint.
//!
//! The body is parsed at most once, and only when a rule needs it: its top-level members are
//! validated and kept raw; a pointer descends into nested values lazily, and into a JSON document
//! embedded in a string (SNS's `Message`: `/Message/eventType`). A rule may also be the first of
//! several that finds a value (`{"first_of": [...]}`).

use crate::domain::{BodyDigest, EventId, EventType, InvalidValue};
use http::{HeaderMap, HeaderName};
use serde::Deserialize;

pub(crate) mod form;
mod json;
mod scan;

use json::JsonObject;

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
    /// The lower-case hex SHA-256 of a form-encoded body's parameters as Twilio signs them
    /// (`form.rs`): a resend with reordered or repeated parameters is the same event. Twilio's
    /// default; not a `WEBHOOK_SOURCES` setting.
    #[serde(skip_deserializing)]
    FormSha256,
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
            Self::FormSha256 => "the hash of the signed form parameters".into(),
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
            Self::Header(_) | Self::BodySha256 | Self::FormSha256 => false,
        }
    }

    /// The first token of each JSON pointer the rule reads (the top-level members it needs).
    pub fn top_level_keys<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Self::JsonPointer(p) => {
                let first = p.strip_prefix('/').unwrap_or(p);
                let first = first.split('/').next().unwrap_or_default();
                // An escaped token (`~0`, `~1`) is matched unescaped: keep every member then.
                out.push(if first.contains('~') { "*" } else { first });
            }
            Self::FirstOf(rules) => rules.iter().for_each(|r| r.top_level_keys(out)),
            Self::Header(_) | Self::BodySha256 | Self::FormSha256 => {}
        }
    }

    /// The header names the rule reads.
    pub fn headers(&self) -> Vec<&str> {
        match self {
            Self::Header(h) => vec![h.as_str()],
            Self::FirstOf(rules) => rules.iter().flat_map(Self::headers).collect(),
            Self::JsonPointer(_) | Self::BodySha256 | Self::FormSha256 => Vec::new(),
        }
    }

    /// Checks the rule once, at start-up: a header name must be a valid HTTP header name and a
    /// JSON pointer must start with `/` (otherwise the rule could never read anything, and every
    /// event would be stored as `unknown`). The error says why, without the input beyond 64 bytes.
    pub fn check(&self) -> Result<(), String> {
        let shown = |text: &str| text.chars().take(64).collect::<String>();
        match self {
            Self::Header(name) => HeaderName::from_bytes(name.trim().as_bytes())
                .map(|_| ())
                .map_err(|_| format!("{:?} is not a valid HTTP header name", shown(name))),
            Self::JsonPointer(p) if !p.starts_with('/') => Err(format!(
                "{:?} is not a JSON pointer (it must start with `/`)",
                shown(p)
            )),
            Self::JsonPointer(_) | Self::BodySha256 | Self::FormSha256 => Ok(()),
            Self::FirstOf(rules) => rules.iter().try_for_each(Self::check),
        }
    }
}

/// Why a (correctly signed) payload could not be identified. Messages name the field at fault
/// and never quote the payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// A machine-readable code for logs.
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

/// The identity of a verified delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The dedupe key: the provider's id where the signature covers it, else the body's hash.
    pub event_id: EventId,
    /// `None`: the source's events have no type. [`EventType::UNKNOWN`] when the type or the id
    /// could not be read.
    pub event_type: Option<EventType>,
    /// The provider's id read from a header the signature does not cover (metadata only: not
    /// the dedupe key); `None` when the id is signed, or the header is absent or invalid.
    pub provider_id: Option<EventId>,
    /// Why the event could not be identified (its type is then `unknown`).
    pub unidentified: Option<IdentityError>,
}

/// The identity of a verified delivery: its id by `event_id` if `id_signed` (the scheme's
/// signature covers what that rule reads), else the body's hash with the rule's value as
/// [`Identity::provider_id`]; its type by `event_type` (`None`: the source's events have no
/// type). Never fails: what cannot be read makes the type [`EventType::UNKNOWN`] (and the id the
/// body's hash, if the id is what failed). `digest` is the body's SHA-256 (computed once by the
/// caller, who stores it too).
pub fn identify(
    event_id: &FieldRule,
    id_signed: bool,
    event_type: Option<&FieldRule>,
    headers: &HeaderMap,
    body: &[u8],
    digest: &BodyDigest,
) -> Identity {
    identify_lazy(
        event_id,
        id_signed,
        event_type,
        headers,
        &BodyHash::known(body, *digest),
    )
}

/// The body and its SHA-256, computed on first use: most sources never need it (their id is
/// signed and readable), so the accepted path hashes the body only inside the signature.
#[derive(Debug)]
pub struct BodyHash<'a> {
    body: &'a [u8],
    digest: std::cell::OnceCell<BodyDigest>,
}

impl<'a> BodyHash<'a> {
    /// `body`, not hashed yet.
    pub fn new(body: &'a [u8]) -> Self {
        Self {
            body,
            digest: std::cell::OnceCell::new(),
        }
    }

    /// `body` whose digest is already known.
    pub fn known(body: &'a [u8], digest: BodyDigest) -> Self {
        Self {
            body,
            digest: std::cell::OnceCell::from(digest),
        }
    }

    /// The body.
    pub fn body(&self) -> &'a [u8] {
        self.body
    }

    /// The digest (computed now if no one needed it before).
    pub fn digest(&self) -> &BodyDigest {
        self.digest.get_or_init(|| BodyDigest::of(self.body))
    }

    /// The digest if something already computed it.
    pub fn computed(&self) -> Option<BodyDigest> {
        self.digest.get().copied()
    }
}

/// [`identify`] with the body's hash computed only if a rule needs it (a `body_sha256` id, an
/// unsigned id, or an id that could not be read).
pub fn identify_lazy(
    event_id: &FieldRule,
    id_signed: bool,
    event_type: Option<&FieldRule>,
    headers: &HeaderMap,
    hash: &BodyHash<'_>,
) -> Identity {
    let json = needs_json(event_id, event_type).then(|| {
        let mut wanted = Vec::new();
        event_id.top_level_keys(&mut wanted);
        if let Some(t) = event_type {
            t.top_level_keys(&mut wanted);
        }
        JsonObject::parse(hash.body(), &wanted)
    });
    let json = json.as_ref().map(|parsed| parsed.as_ref());
    let digest = hash;
    let read_id = read_event_id(event_id, headers, json, digest);
    let (id, provider_id, mut unidentified) = match (id_signed, read_id) {
        (true, Ok(id)) => (id, None, None),
        (true, Err(e)) => (EventId::from_digest(digest.digest()), None, Some(e)),
        (false, read) => (EventId::from_digest(digest.digest()), read.ok(), None),
    };
    let kind = match (event_type, &unidentified) {
        (_, Some(_)) => Some(EventType::unknown()),
        (None, None) => None,
        (Some(rule), None) => match read_event_type(rule, headers, json, digest) {
            Ok(t) => Some(t),
            Err(e) => {
                unidentified = Some(e);
                Some(EventType::unknown())
            }
        },
    };
    Identity {
        event_id: id,
        event_type: kind,
        provider_id,
        unidentified,
    }
}

fn read_event_id(
    rule: &FieldRule,
    headers: &HeaderMap,
    json: Option<Result<&JsonObject<'_>, &IdentityError>>,
    digest: &BodyHash<'_>,
) -> Result<EventId, IdentityError> {
    // `describe` allocates: only on the way to an error.
    match extract(rule, headers, json, digest)? {
        Lookup::Found(v) => {
            EventId::parse_owned(v).map_err(|reason| IdentityError::InvalidEventId {
                at: rule.describe(),
                reason,
            })
        }
        Lookup::Absent => Err(IdentityError::MissingEventId(rule.describe())),
        Lookup::Invalid(why) => Err(IdentityError::InvalidEventId {
            at: rule.describe(),
            reason: InvalidValue::BadCharacter { allowed: why },
        }),
    }
}

fn read_event_type(
    rule: &FieldRule,
    headers: &HeaderMap,
    json: Option<Result<&JsonObject<'_>, &IdentityError>>,
    digest: &BodyHash<'_>,
) -> Result<EventType, IdentityError> {
    // `describe` allocates: only on the way to an error.
    match extract(rule, headers, json, digest)? {
        Lookup::Found(v) => {
            EventType::parse_owned(v).map_err(|reason| IdentityError::InvalidEventType {
                at: rule.describe(),
                reason,
            })
        }
        Lookup::Absent => Err(IdentityError::MissingEventType(rule.describe())),
        Lookup::Invalid(why) => Err(IdentityError::InvalidEventType {
            at: rule.describe(),
            reason: InvalidValue::BadCharacter { allowed: why },
        }),
    }
}

enum Lookup {
    Found(String),
    Absent,
    Invalid(&'static str),
}

/// Reads the value a rule points at. `json`: the parsed body when a rule needs it (`Err`: it is
/// not a JSON object, which only matters to a JSON pointer).
fn extract(
    rule: &FieldRule,
    headers: &HeaderMap,
    json: Option<Result<&JsonObject<'_>, &IdentityError>>,
    digest: &BodyHash<'_>,
) -> Result<Lookup, IdentityError> {
    Ok(match rule {
        FieldRule::BodySha256 => Lookup::Found(digest.digest().to_hex()),
        FieldRule::FormSha256 => match form::signed_params_digest(digest.body()) {
            Some(d) => Lookup::Found(d.to_hex()),
            None => Lookup::Invalid("is not form-encoded UTF-8"),
        },
        FieldRule::Header(name) => {
            let mut values = headers.get_all(name.trim()).iter();
            match (values.next(), values.next()) {
                (None, _) => Lookup::Absent,
                (Some(_), Some(_)) => Lookup::Invalid("is given more than once"),
                (Some(v), None) => match v.to_str() {
                    Ok(s) => Lookup::Found(s.trim().to_owned()),
                    Err(_) => Lookup::Invalid("is not visible ASCII"),
                },
            }
        }
        FieldRule::JsonPointer(p) => match json {
            Some(Err(e)) => return Err(e.clone()),
            Some(Ok(j)) => match j.lookup(p) {
                Ok(Some(v)) => Lookup::Found(v),
                Ok(None) => Lookup::Absent,
                Err(reason) => Lookup::Invalid(reason),
            },
            None => Lookup::Absent,
        },
        FieldRule::FirstOf(rules) => {
            let mut found = Lookup::Absent;
            for rule in rules {
                let lookup = extract(rule, headers, json, digest)?;
                if !matches!(lookup, Lookup::Absent) {
                    found = lookup;
                    break;
                }
            }
            found
        }
    })
}

#[cfg(test)]
mod tests;
