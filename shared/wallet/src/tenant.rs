//! [`TenantId`]: the tenant a wallet belongs to, parsed once where it enters (an event's
//! `metadata.tenant`, `data.tenant` or tag; an operator's argument; a stored item) and carried
//! as a type from there. It is part of the keys of the wallet's items (`WALLET#{tenant}`), so
//! it is exactly what the events name: trimmed (events are read trimmed), printable, bounded.

use serde::Serialize;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

/// Longest tenant, in characters (it is part of the keys of the wallet's items).
pub const MAX_TENANT_CHARS: usize = 256;

/// A tenant: not empty, no leading or trailing spaces, no control characters, at most
/// [`MAX_TENANT_CHARS`] characters. Stored, serialized and debug-printed as the string itself
/// (messages quote it as they quoted the string: `tenant "acme"`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct TenantId(String);

/// Why a string is not a tenant (the text names the tenant, never anything else).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTenant {
    #[error("the tenant is empty")]
    Empty,
    #[error(
        "tenant {0:?} has leading or trailing spaces; events name tenants trimmed, so it could never match"
    )]
    Untrimmed(String),
    #[error("tenant {0:?} contains control characters")]
    Control(String),
    #[error("the tenant is longer than {MAX_TENANT_CHARS} characters")]
    TooLong,
}

impl TenantId {
    /// Parses a tenant.
    pub fn parse(s: &str) -> Result<Self, InvalidTenant> {
        if s.trim().is_empty() {
            return Err(InvalidTenant::Empty);
        }
        if s.trim() != s {
            return Err(InvalidTenant::Untrimmed(s.to_owned()));
        }
        if s.chars().any(char::is_control) {
            return Err(InvalidTenant::Control(s.to_owned()));
        }
        if s.chars().count() > MAX_TENANT_CHARS {
            return Err(InvalidTenant::TooLong);
        }
        Ok(Self(s.to_owned()))
    }

    /// The tenant as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for TenantId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A tenant is read wherever a string is (keys, messages, metric properties).
impl Deref for TenantId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&TenantId> for String {
    fn from(t: &TenantId) -> Self {
        t.0.clone()
    }
}

impl From<TenantId> for String {
    fn from(t: TenantId) -> Self {
        t.0
    }
}

impl FromStr for TenantId {
    type Err = InvalidTenant;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl PartialEq<str> for TenantId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for TenantId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_is_what_events_name() {
        for good in ["acme", "Acme Corp #2", "é", &"x".repeat(MAX_TENANT_CHARS)] {
            assert_eq!(TenantId::parse(good).unwrap().as_str(), good);
        }
        assert_eq!(TenantId::parse(""), Err(InvalidTenant::Empty));
        assert_eq!(TenantId::parse("  "), Err(InvalidTenant::Empty));
        assert!(matches!(
            TenantId::parse(" acme"),
            Err(InvalidTenant::Untrimmed(_))
        ));
        assert!(matches!(
            TenantId::parse("acme\n"),
            Err(InvalidTenant::Untrimmed(_))
        ));
        assert!(matches!(
            TenantId::parse("a\u{7}b"),
            Err(InvalidTenant::Control(_))
        ));
        assert_eq!(
            TenantId::parse(&"x".repeat(MAX_TENANT_CHARS + 1)),
            Err(InvalidTenant::TooLong)
        );
    }

    #[test]
    fn it_serializes_as_the_string_and_compares_with_one() {
        let t = TenantId::parse("acme").unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), r#""acme""#);
        assert_eq!(t, "acme");
        assert_eq!(format!("{t} {t:?}"), r#"acme "acme""#);
        assert_eq!("acme".parse::<TenantId>().unwrap(), t);
    }
}
