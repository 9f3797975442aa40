//! [`Secret`]: a signing secret (or other key material) as configured, redacted in every
//! `Debug`/`Display` output, readable only inside the crate (by the schemes).

use std::fmt;

/// A webhook signing secret: the configured bytes (for a JSON string, its UTF-8 bytes), which
/// each scheme interprets its own way (used as-is, base64 after `whsec_`, a public key…).
///
/// `Debug` and `Display` print `Secret(<redacted>)`, never the bytes; it deserializes from a JSON
/// string.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps raw bytes (no decoding happens here).
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The bytes. Crate-private so that secrets cannot leak through the public API.
    pub(crate) fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Self {
        Self(text.into_bytes())
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Self {
        Self(text.as_bytes().to_vec())
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}
