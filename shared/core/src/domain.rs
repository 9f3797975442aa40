//! Domain newtypes, valid by construction ("parse, don't validate"), and the message status.
//!
//! Everything that ends up in a DynamoDB key or a log line passes through one of these parsers
//! first, so a key can never exceed DynamoDB's limits or carry control characters.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// Longest accepted provider event id, in bytes. Stripe ids are ~30 bytes, UUIDs 36; DynamoDB's
/// partition key limit (2048 bytes) leaves room for the prefix and the source.
pub const MAX_EVENT_ID_LEN: usize = 255;
/// Longest accepted event type, in bytes.
pub const MAX_EVENT_TYPE_LEN: usize = 128;
/// Longest accepted source name, in bytes.
pub const MAX_SOURCE_LEN: usize = 64;

/// Why a value was refused as an id, type or source name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidValue {
    #[error("is empty")]
    Empty,
    #[error("is longer than {max} bytes ({len})")]
    TooLong { len: usize, max: usize },
    #[error("contains a character outside {allowed}")]
    BadCharacter { allowed: &'static str },
}

fn check(
    value: &str,
    max: usize,
    ok: impl Fn(u8) -> bool,
    allowed: &'static str,
) -> Result<(), InvalidValue> {
    if value.is_empty() {
        return Err(InvalidValue::Empty);
    }
    if value.len() > max {
        return Err(InvalidValue::TooLong {
            len: value.len(),
            max,
        });
    }
    if !value.bytes().all(ok) {
        return Err(InvalidValue::BadCharacter { allowed });
    }
    Ok(())
}

fn visible_ascii(b: u8) -> bool {
    b.is_ascii_graphic()
}

macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The value as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).map_err(|e| serde::de::Error::custom(format!("{}: {e}", stringify!($name))))
            }
        }
    };
}

string_newtype!(
    /// A configured webhook source (`stripe`, `mailer`, …): lower-case ASCII letters, digits,
    /// `-` and `_`, starting with a letter or digit, at most [`MAX_SOURCE_LEN`] bytes.
    SourceName
);
string_newtype!(
    /// A provider's event id: visible ASCII (no spaces or control characters), at most
    /// [`MAX_EVENT_ID_LEN`] bytes.
    EventId
);
string_newtype!(
    /// A provider's event type (`checkout.session.completed`, `push`, …): visible ASCII, at most
    /// [`MAX_EVENT_TYPE_LEN`] bytes.
    EventType
);

impl SourceName {
    /// Parses a source name.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let allowed = "a-z, 0-9, '-' and '_'";
        check(
            s,
            MAX_SOURCE_LEN,
            |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_',
            allowed,
        )?;
        if s.starts_with(['-', '_']) {
            return Err(InvalidValue::BadCharacter { allowed });
        }
        Ok(Self(s.to_owned()))
    }
}

impl EventId {
    /// Parses a provider event id.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        check(s, MAX_EVENT_ID_LEN, visible_ascii, "visible ASCII")?;
        Ok(Self(s.to_owned()))
    }

    /// [`EventId::parse`] of an owned string, kept without a copy.
    pub fn parse_owned(s: String) -> Result<Self, InvalidValue> {
        check(&s, MAX_EVENT_ID_LEN, visible_ascii, "visible ASCII")?;
        Ok(Self(s))
    }

    /// The id used where a provider gives none: the lower-case hex SHA-256 of the raw body.
    pub fn from_digest(digest: &BodyDigest) -> Self {
        Self(digest.to_hex())
    }
}

impl EventType {
    /// The type of a correctly signed event whose type (or id) could not be read: stored all the
    /// same, never routed to a handler (so `ignored`), listable and replayable.
    pub const UNKNOWN: &'static str = "unknown";

    /// Parses a provider event type.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        check(s, MAX_EVENT_TYPE_LEN, visible_ascii, "visible ASCII")?;
        Ok(Self(s.to_owned()))
    }

    /// [`EventType::parse`] of an owned string, kept without a copy.
    pub fn parse_owned(s: String) -> Result<Self, InvalidValue> {
        check(&s, MAX_EVENT_TYPE_LEN, visible_ascii, "visible ASCII")?;
        Ok(Self(s))
    }

    /// [`EventType::UNKNOWN`].
    pub fn unknown() -> Self {
        Self(Self::UNKNOWN.to_owned())
    }

    /// Whether this is [`EventType::UNKNOWN`].
    pub fn is_unknown(&self) -> bool {
        self.0 == Self::UNKNOWN
    }
}

/// The SHA-256 of a raw body.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BodyDigest([u8; 32]);

impl BodyDigest {
    /// Hashes `body`.
    pub fn of(body: &[u8]) -> Self {
        Self(Sha256::digest(body).into())
    }

    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses lower- or upper-case hex of 32 bytes.
    pub fn from_hex(s: &str) -> Option<Self> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(Self(out))
    }
}

impl fmt::Debug for BodyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BodyDigest({})", self.to_hex())
    }
}

/// The identity of a message: the dedupe key `(source, provider event id)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MessageKey {
    pub source: SourceName,
    pub event_id: EventId,
}

impl MessageKey {
    /// The key for `event_id` from `source`.
    pub fn new(source: SourceName, event_id: EventId) -> Self {
        Self { source, event_id }
    }
}

impl fmt::Display for MessageKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.source, self.event_id)
    }
}

/// Where a message stands in its life cycle (docs/architecture.md, "The message state machine").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Stored, not yet claimed.
    Pending,
    /// Claimed by a processor holding a lease.
    Processing,
    /// A transient failure; due again at its next attempt time.
    Retrying,
    /// Handled; terminal.
    Processed,
    /// No handler for its type; terminal, kept and replayable.
    Ignored,
    /// Quarantined after too many or a permanent failure; terminal until replayed.
    Failed,
}

impl Status {
    /// Whether the message has reached an end state (it leaves the index of open messages).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Processed | Self::Ignored | Self::Failed)
    }

    /// The lower-case name stored in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Processing => "processing",
            Self::Retrying => "retrying",
            Self::Processed => "processed",
            Self::Ignored => "ignored",
            Self::Failed => "failed",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names() {
        for ok in ["stripe", "mailer-eu", "a", "x_1", "0abc"] {
            assert!(SourceName::parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(SourceName::parse(""), Err(InvalidValue::Empty));
        for bad in ["Stripe", "-x", "_x", "a b", "a/b", "ä", "a.b"] {
            assert!(
                matches!(
                    SourceName::parse(bad),
                    Err(InvalidValue::BadCharacter { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            SourceName::parse(&"a".repeat(65)),
            Err(InvalidValue::TooLong { len: 65, max: 64 })
        ));
        assert!(SourceName::parse(&"a".repeat(64)).is_ok());
    }

    /// The owned parsers accept and refuse exactly what the borrowing ones do.
    #[test]
    fn owned_parsers_agree_with_borrowing_ones() {
        let long = "x".repeat(MAX_EVENT_ID_LEN + 1);
        for text in [
            "evt_1",
            "a.b.c",
            "",
            "a b",
            "a\nb",
            "é",
            long.as_str(),
            &long[..129],
        ] {
            assert_eq!(EventId::parse_owned(text.to_owned()), EventId::parse(text));
            assert_eq!(
                EventType::parse_owned(text.to_owned()),
                EventType::parse(text)
            );
        }
    }

    #[test]
    fn event_ids() {
        assert!(EventId::parse("evt_1NG8Du2eZvKYlo2CUI79vXWy").is_ok());
        assert!(EventId::parse("2b9f3c2e-9a57-4d43-8ef3-7b5ad1dd3f3c").is_ok());
        assert_eq!(EventId::parse(""), Err(InvalidValue::Empty));
        for bad in ["a b", "a\nb", "a\u{0}b", "é", "tab\t"] {
            assert!(
                matches!(EventId::parse(bad), Err(InvalidValue::BadCharacter { .. })),
                "{bad:?}"
            );
        }
        assert!(EventId::parse(&"x".repeat(MAX_EVENT_ID_LEN)).is_ok());
        assert!(matches!(
            EventId::parse(&"x".repeat(MAX_EVENT_ID_LEN + 1)),
            Err(InvalidValue::TooLong { .. })
        ));
    }

    #[test]
    fn event_types() {
        assert!(EventType::parse("checkout.session.completed").is_ok());
        assert!(EventType::parse("").is_err());
        assert!(EventType::parse("a b").is_err());
        assert!(EventType::parse(&"t".repeat(MAX_EVENT_TYPE_LEN + 1)).is_err());
        assert!(EventType::unknown().is_unknown());
        assert_eq!(EventType::parse("unknown"), Ok(EventType::unknown()));
        assert!(!EventType::parse("a.b").unwrap().is_unknown());
    }

    #[test]
    fn deserializing_validates() {
        assert!(serde_json::from_str::<SourceName>("\"stripe\"").is_ok());
        assert!(serde_json::from_str::<SourceName>("\"Stripe\"").is_err());
        assert!(serde_json::from_str::<EventId>("\"\"").is_err());
    }

    #[test]
    fn digest_round_trips_and_is_sha256() {
        let d = BodyDigest::of(b"abc");
        assert_eq!(
            d.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(BodyDigest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(BodyDigest::from_hex("abc"), None);
        assert_eq!(EventId::from_digest(&d).as_str(), d.to_hex());
    }

    #[test]
    fn terminal_statuses() {
        use Status::*;
        let all = [Pending, Processing, Retrying, Processed, Ignored, Failed];
        let terminal: Vec<_> = all.into_iter().filter(|s| s.is_terminal()).collect();
        assert_eq!(terminal, vec![Processed, Ignored, Failed]);
        for s in all {
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::Value::String(s.as_str().into()))
            );
        }
    }
}
