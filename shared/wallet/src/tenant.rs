//! [`TenantId`]: the tenant a wallet belongs to, parsed once where it enters and carried as a
//! type from there. It is part of the keys of the wallet's items (`WALLET#{tenant}`), of the
//! API's paths and of the console's links, so what enters has a grammar (issue 32): 1 to
//! [`MAX_TENANT_CHARS`] of `A-Z a-z 0-9 . _ : -`, and not `.` or `..` (a path's dot segments).
//!
//! - [`TenantId::parse`]: every door (the wallet API's paths, `inboxctl wallet`'s arguments, a
//!   provider's event naming a tenant, the console's forms). What does not fit is refused with
//!   an [`InvalidTenant`] naming the problem, before anything is written.
//! - [`TenantId::stored`]: a tenant read back from an item already in the table. Wallets created
//!   before the grammar may name tenants outside it (spaces, `/`, any printable unicode up to
//!   [`MAX_STORED_TENANT_CHARS`]); they stay readable (listed, shown, reconciled) under the rule
//!   they were written with, and [`TenantId::fits_grammar`] tells them apart. Never for input.

use serde::Serialize;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

/// Longest tenant, in characters.
pub const MAX_TENANT_CHARS: usize = 128;

/// Longest tenant of an item written before the grammar, in characters (the rule then).
pub const MAX_STORED_TENANT_CHARS: usize = 256;

/// The grammar in words, for messages.
pub const TENANT_GRAMMAR: &str =
    "1 to 128 characters of A-Z a-z 0-9 . _ : - (and not \".\" or \"..\")";

/// A tenant. Stored, serialized and debug-printed as the string itself (messages quote it as
/// they quoted the string: `tenant "acme"`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct TenantId(String);

/// Why a string is not a tenant (the text names the tenant, never anything else; a tenant too
/// long to quote is not quoted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTenant {
    #[error("the tenant is empty; a tenant is {TENANT_GRAMMAR}")]
    Empty,
    #[error("the tenant is {chars} characters long; the limit is {limit}")]
    TooLong { chars: usize, limit: usize },
    /// A character outside `A-Z a-z 0-9 . _ : -` (the first one found).
    #[error("tenant {tenant:?} contains {found:?}; a tenant is {TENANT_GRAMMAR}")]
    Character { tenant: String, found: char },
    /// `.` or `..`: a path's dot segment.
    #[error("tenant {0:?} is a path's dot segment; a tenant is {TENANT_GRAMMAR}")]
    DotSegment(String),
    /// A stored tenant with leading or trailing spaces ([`TenantId::stored`]).
    #[error("stored tenant {0:?} has leading or trailing spaces")]
    Untrimmed(String),
    /// A stored tenant with control characters ([`TenantId::stored`]).
    #[error("stored tenant {0:?} contains control characters")]
    Control(String),
}

/// Whether `c` may be part of a tenant.
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
}

impl TenantId {
    /// Parses a tenant at a door: the grammar, or the first thing wrong with `s`.
    pub fn parse(s: &str) -> Result<Self, InvalidTenant> {
        if s.is_empty() {
            return Err(InvalidTenant::Empty);
        }
        // Counted before anything is quoted: a megabyte of input is never echoed.
        let chars = s.chars().count();
        if chars > MAX_TENANT_CHARS {
            return Err(InvalidTenant::TooLong {
                chars,
                limit: MAX_TENANT_CHARS,
            });
        }
        if let Some(found) = s.chars().find(|c| !allowed(*c)) {
            return Err(InvalidTenant::Character {
                tenant: s.to_owned(),
                found,
            });
        }
        if s == "." || s == ".." {
            return Err(InvalidTenant::DotSegment(s.to_owned()));
        }
        Ok(Self(s.to_owned()))
    }

    /// A tenant read back from an item already in the table, under the rule it may have been
    /// written with before the grammar: not empty, trimmed, no control characters, at most
    /// [`MAX_STORED_TENANT_CHARS`]. For reads of stored items only; input goes through
    /// [`TenantId::parse`].
    pub fn stored(s: &str) -> Result<Self, InvalidTenant> {
        if s.trim().is_empty() {
            return Err(InvalidTenant::Empty);
        }
        let chars = s.chars().count();
        if chars > MAX_STORED_TENANT_CHARS {
            return Err(InvalidTenant::TooLong {
                chars,
                limit: MAX_STORED_TENANT_CHARS,
            });
        }
        if s.trim() != s {
            return Err(InvalidTenant::Untrimmed(s.to_owned()));
        }
        if s.chars().any(char::is_control) {
            return Err(InvalidTenant::Control(s.to_owned()));
        }
        Ok(Self(s.to_owned()))
    }

    /// Whether the tenant fits the grammar ([`TenantId::parse`] accepts it). Only a stored
    /// tenant written before the grammar does not: its wallet is read, never reached by input.
    pub fn fits_grammar(&self) -> bool {
        Self::parse(&self.0).is_ok()
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
    fn a_tenant_fits_the_grammar() {
        let longest = "x".repeat(MAX_TENANT_CHARS);
        for good in [
            "acme",
            "Acme-Corp_2",
            "org:acme.eu",
            "a",
            "...",
            "a..b",
            "0",
            &longest,
        ] {
            let t = TenantId::parse(good).unwrap();
            assert_eq!(t.as_str(), good);
            assert!(t.fits_grammar());
        }
    }

    #[test]
    fn what_does_not_fit_is_refused_naming_the_problem() {
        assert_eq!(TenantId::parse(""), Err(InvalidTenant::Empty));
        for (bad, found) in [
            ("a/b", '/'),
            ("../acme", '/'),
            ("acme corp", ' '),
            (" acme", ' '),
            ("acme\n", '\n'),
            ("é", 'é'),
            ("ａｃｍｅ", 'ａ'),
            ("acme#2", '#'),
            ("a%2Fb", '%'),
            ("acme\u{0}", '\u{0}'),
        ] {
            assert_eq!(
                TenantId::parse(bad),
                Err(InvalidTenant::Character {
                    tenant: bad.to_owned(),
                    found
                }),
                "{bad:?}"
            );
        }
        for dots in [".", ".."] {
            assert_eq!(
                TenantId::parse(dots),
                Err(InvalidTenant::DotSegment(dots.to_owned()))
            );
        }
        assert_eq!(
            TenantId::parse(&"x".repeat(MAX_TENANT_CHARS + 1)),
            Err(InvalidTenant::TooLong {
                chars: MAX_TENANT_CHARS + 1,
                limit: MAX_TENANT_CHARS
            })
        );
        // Unicode is counted in characters, and refused for what it is once short enough.
        assert!(matches!(
            TenantId::parse(&"é".repeat(MAX_TENANT_CHARS + 1)),
            Err(InvalidTenant::TooLong { .. })
        ));
        let message = TenantId::parse("a/b").unwrap_err().to_string();
        assert!(
            message.contains("'/'") && message.contains("A-Z a-z 0-9 . _ : -"),
            "{message}"
        );
        // A long input is never quoted back.
        let huge = "/".repeat(100_000);
        assert!(TenantId::parse(&huge).unwrap_err().to_string().len() < 200);
    }

    #[test]
    fn a_stored_tenant_from_before_the_grammar_is_still_read() {
        let long = "x".repeat(MAX_STORED_TENANT_CHARS);
        for legacy in ["Acme Corp #2", "é", "a/b", "..", &long] {
            let t = TenantId::stored(legacy).unwrap();
            assert_eq!(t.as_str(), legacy);
            assert!(!t.fits_grammar(), "{legacy:?}");
        }
        assert!(TenantId::stored("acme").unwrap().fits_grammar());
        assert_eq!(TenantId::stored(" "), Err(InvalidTenant::Empty));
        assert!(matches!(
            TenantId::stored(" acme"),
            Err(InvalidTenant::Untrimmed(_))
        ));
        assert!(matches!(
            TenantId::stored("a\u{7}b"),
            Err(InvalidTenant::Control(_))
        ));
        assert!(matches!(
            TenantId::stored(&"x".repeat(MAX_STORED_TENANT_CHARS + 1)),
            Err(InvalidTenant::TooLong { .. })
        ));
    }

    #[test]
    fn it_serializes_as_the_string_and_compares_with_one() {
        let t = TenantId::parse("acme").unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), r#""acme""#);
        assert_eq!(t, "acme");
        assert_eq!(format!("{t} {t:?}"), r#"acme "acme""#);
        assert_eq!("acme".parse::<TenantId>().unwrap(), t);
        assert!("acme corp".parse::<TenantId>().is_err());
    }
}
