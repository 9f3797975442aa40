//! The signature errors: why a request's signature was refused ([`SignatureError`], with its
//! stable code), why a scheme could not be built ([`SchemeError`]) and why a message could not be
//! signed ([`SignError`]). No message ever contains a secret or a signature value.

/// Why a scheme could not be built from a source's settings and secrets. Messages never contain
/// a secret.
#[derive(Debug, thiserror::Error)]
pub enum SchemeError {
    /// No scheme is registered under this name.
    #[error("unknown signature scheme {name:?} (known: {known})")]
    UnknownScheme { name: String, known: String },
    /// The scheme's settings are unusable (e.g. the generic scheme's header name).
    #[error("invalid signature scheme configuration: {reason}")]
    InvalidConfig { reason: String },
    /// No secret was given.
    #[error("no signing secret is configured")]
    Empty,
    /// The secret at `index` (0-based) is unusable.
    #[error("signing secret #{index} is invalid: {reason}")]
    Invalid { index: usize, reason: &'static str },
}

impl SchemeError {
    /// Whether the error is about the secrets (rather than the source's settings).
    pub fn is_about_secrets(&self) -> bool {
        matches!(self, Self::Empty | Self::Invalid { .. })
    }
}

/// Why a message could not be signed ([`super::Scheme::sign`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The configured key material only verifies (e.g. a public key).
    #[error("this source's signature scheme cannot sign: {reason}")]
    Unsupported { reason: &'static str },
}

/// Why a request's signature was refused. Messages name the header at fault and never contain a
/// secret or a signature value.
///
/// `header` is the header's name as the provider documents it (for the generic scheme: the
/// configured name, interned once per distinct name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A required header is absent.
    #[error("missing required header `{header}`")]
    Missing { header: &'static str },
    /// A required header is present more than once (ambiguous, refused).
    #[error("header `{header}` is present more than once")]
    Duplicated { header: &'static str },
    /// A required header cannot be parsed (bad signature encoding or length, bad timestamp…).
    #[error("malformed header `{header}`: {reason}")]
    Malformed {
        header: &'static str,
        reason: &'static str,
    },
    /// The (authentic) request's timestamp is older than the tolerance.
    #[error("timestamp is {age_secs} s old, beyond the tolerance of {tolerance_secs} s")]
    TimestampTooOld { age_secs: i64, tolerance_secs: i64 },
    /// The (authentic) request's timestamp is further in the future than the tolerance.
    #[error(
        "timestamp is {ahead_secs} s in the future, beyond the tolerance of {tolerance_secs} s"
    )]
    TimestampInFuture {
        ahead_secs: i64,
        tolerance_secs: i64,
    },
    /// The signatures are well-formed but none matches any configured secret.
    #[error("no signature matches any configured secret")]
    Mismatch,
    /// A field the signature needs is absent from the body (schemes that sign inside it: SNS,
    /// Mailgun).
    #[error("missing required field `{field}` in the body")]
    MissingField { field: &'static str },
    /// A field the signature needs cannot be used: not a string, not decodable, present more than
    /// once, or not the value this source is pinned to (SNS `TopicArn`, `SigningCertURL`).
    #[error("field `{field}` of the body: {reason}")]
    MalformedField {
        field: &'static str,
        reason: &'static str,
    },
    /// The request's source address is not in the source's allow-list (or unknown).
    #[error("the request does not come from an address this source allows")]
    SourceNotAllowed,
    /// The key that verifies the request could not be obtained now (the SNS signing certificate
    /// could not be fetched): nothing was decided, the provider should retry (503).
    #[error("the signing key could not be obtained ({reason}); retry later")]
    KeyUnavailable { reason: &'static str },
}

impl SignatureError {
    /// Stable machine-readable code, used as the `error` field of HTTP error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing { .. } => "signature_missing",
            Self::Duplicated { .. } => "signature_header_duplicated",
            Self::Malformed { .. } => "signature_malformed",
            Self::TimestampTooOld { .. } | Self::TimestampInFuture { .. } => {
                "timestamp_out_of_tolerance"
            }
            Self::Mismatch => "signature_invalid",
            Self::MissingField { .. } => "signature_missing",
            Self::MalformedField { .. } => "signature_malformed",
            Self::SourceNotAllowed => "source_not_allowed",
            Self::KeyUnavailable { .. } => "signing_key_unavailable",
        }
    }

    /// Whether nothing was decided about the request's authenticity (the key could not be
    /// obtained): answered 503, so that the provider retries, rather than 401.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::KeyUnavailable { .. })
    }
}
