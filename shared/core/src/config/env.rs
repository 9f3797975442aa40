//! The one way configuration is read from the environment: [`Env`], over a variable lookup (the
//! process environment in the functions and the CLI, a list of pairs in tests). Every function and
//! `inboxctl` read their variables through it, so the rules are the same everywhere:
//!
//! - a value is trimmed, and an empty (or blank) value counts as unset;
//! - an unset variable takes its documented default ([`Var::unset`]), parsed like a set value;
//! - a missing or unparsable variable is an error naming it (never quoting its value).
//!
//! Variables are read by their documentation ([`Var`]), so nothing can be read undocumented.

use super::doc::{Unset, Var};
use super::ConfigError;
use std::collections::HashMap;
use std::fmt::Display;
use std::str::FromStr;

/// A variable lookup: `Some(value)` for a set variable.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Reads documented variables from a lookup.
pub struct Env {
    lookup: Box<Lookup>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env").finish_non_exhaustive()
    }
}

impl Env {
    /// The process environment (a value that is not valid Unicode counts as unset).
    pub fn process() -> Self {
        Self::from_fn(|name| std::env::var(name).ok())
    }

    /// Any lookup: `Some(value)` for a set variable.
    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self {
            lookup: Box::new(lookup),
        }
    }

    /// Exactly these variables (tests).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let map: HashMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        Self::from_fn(move |name| map.get(name).cloned())
    }

    /// The value, trimmed; `None` when unset or blank. Ignores the documented default.
    pub fn optional(&self, var: &Var) -> Option<String> {
        (self.lookup)(var.name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// Whether the variable is set (and not blank).
    pub fn is_set(&self, var: &Var) -> bool {
        self.optional(var).is_some()
    }

    /// The value, trimmed; an error naming the variable when it is unset (a documented default
    /// does not apply: use [`Self::parse`] for that).
    pub fn required(&self, var: &Var) -> Result<String, ConfigError> {
        self.optional(var).ok_or(ConfigError::Missing(var.name))
    }

    /// The value (or the documented default) parsed as `T`; an error naming the variable when it
    /// does not parse, or is unset without a default.
    pub fn parse<T>(&self, var: &Var) -> Result<T, ConfigError>
    where
        T: FromStr,
        T::Err: Display,
    {
        let (value, documented) = match (self.optional(var), var.unset) {
            (Some(v), _) => (v, false),
            (None, Unset::Default(d)) => (d.to_owned(), true),
            (None, _) => return Err(ConfigError::Missing(var.name)),
        };
        value.parse().map_err(|e: T::Err| ConfigError::Invalid {
            var: var.name,
            reason: if documented {
                format!("its documented default {value:?} does not parse: {e}")
            } else {
                e.to_string()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::doc::ReadBy;

    const NAME: Var = Var {
        name: "SOME_NAME",
        read_by: ReadBy::Everyone,
        unset: Unset::Required,
        meaning: "a name",
    };
    const COUNT: Var = Var {
        name: "SOME_COUNT",
        read_by: ReadBy::Everyone,
        unset: Unset::Default("7"),
        meaning: "a count",
    };
    const BROKEN: Var = Var {
        name: "BROKEN_DEFAULT",
        read_by: ReadBy::Everyone,
        unset: Unset::Default("seven"),
        meaning: "a count documented wrongly",
    };
    const LOOSE: Var = Var {
        name: "LOOSE",
        read_by: ReadBy::Everyone,
        unset: Unset::Optional,
        meaning: "anything",
    };

    #[test]
    fn values_are_trimmed_and_blank_counts_as_unset() {
        let env = Env::from_pairs([("SOME_NAME", "  t  "), ("LOOSE", " \t ")]);
        assert_eq!(env.required(&NAME).unwrap(), "t");
        assert_eq!(env.optional(&LOOSE), None);
        assert!(!env.is_set(&LOOSE));
        assert!(env.is_set(&NAME));
        for blank in ["", "   "] {
            let env = Env::from_pairs([("SOME_NAME", blank), ("SOME_COUNT", blank)]);
            let e = env.required(&NAME).unwrap_err().to_string();
            assert_eq!(e, "missing environment variable SOME_NAME");
            assert_eq!(env.parse::<u32>(&COUNT).unwrap(), 7, "{blank:?}");
        }
    }

    #[test]
    fn defaults_parse_like_values_and_errors_name_the_variable() {
        let empty = Env::from_pairs::<&str, &str>([]);
        assert_eq!(empty.parse::<u32>(&COUNT).unwrap(), 7);
        assert_eq!(empty.optional(&COUNT), None, "optional ignores the default");
        assert!(matches!(
            empty.parse::<u32>(&NAME),
            Err(ConfigError::Missing("SOME_NAME"))
        ));
        let set = Env::from_pairs([("SOME_COUNT", " 12 ")]);
        assert_eq!(set.parse::<u64>(&COUNT).unwrap(), 12);
        let bad = Env::from_pairs([("SOME_COUNT", "12x")]);
        let e = bad.parse::<u32>(&COUNT).unwrap_err().to_string();
        assert!(
            e.starts_with("environment variable SOME_COUNT is invalid: "),
            "{e}"
        );
        let e = empty.parse::<u32>(&BROKEN).unwrap_err().to_string();
        assert!(
            e.contains("BROKEN_DEFAULT") && e.contains("documented default"),
            "{e}"
        );
    }

    #[test]
    fn the_process_environment_is_read() {
        // PATH is set wherever tests run; read through a variable documented for the test.
        const PATH: Var = Var {
            name: "PATH",
            read_by: ReadBy::Everyone,
            unset: Unset::Optional,
            meaning: "the search path",
        };
        assert_eq!(
            Env::process().optional(&PATH),
            std::env::var("PATH")
                .ok()
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
        );
    }
}
