//! A destination's id ([`DestinationId`]), parsed once by [`check_id`]'s rule.

use super::{DestinationError, MAX_ID_LEN};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A destination's id, parsed once ([`check_id`]): lower-case letters, digits, `-`, `_`, starting
/// with a letter or digit, at most [`MAX_ID_LEN`] bytes. The plain string on the wire and in the
/// table; reading one that is not valid fails there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DestinationId(String);

impl DestinationId {
    /// Parses an id.
    pub fn parse(id: &str) -> Result<Self, DestinationError> {
        check_id(id)?;
        Ok(Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for DestinationId {
    type Error = DestinationError;
    fn try_from(id: String) -> Result<Self, Self::Error> {
        check_id(&id)?;
        Ok(Self(id))
    }
}

impl From<DestinationId> for String {
    fn from(id: DestinationId) -> Self {
        id.0
    }
}

impl std::str::FromStr for DestinationId {
    type Err = DestinationError;
    fn from_str(id: &str) -> Result<Self, Self::Err> {
        Self::parse(id)
    }
}

impl fmt::Display for DestinationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for DestinationId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for DestinationId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for DestinationId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// Checks a destination id: lower-case letters, digits, `-`, `_`, starting with a letter or digit.
pub fn check_id(id: &str) -> Result<(), DestinationError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && !id.starts_with(['-', '_']);
    if ok {
        Ok(())
    } else {
        Err(DestinationError::Invalid(format!(
            "destination id {:?}: 1-{MAX_ID_LEN} of a-z, 0-9, '-', '_', starting with a letter or digit",
            id.chars().take(MAX_ID_LEN + 1).collect::<String>()
        )))
    }
}
