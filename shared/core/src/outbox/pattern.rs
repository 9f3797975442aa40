//! The events a destination subscribes to: patterns `source:type` where `*` stands for any run of
//! characters (`stripe:checkout.session.*`, `mailer:*`, `*:invoice.paid`), or `*` alone for
//! everything. An event without a type matches only a pattern whose type part is `*`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest accepted pattern, in bytes.
pub const MAX_PATTERN_LEN: usize = 200;

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pattern {
    source: String,
    event_type: String,
}

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("pattern {0:?}: expected `source:type` (either part may use `*`) or `*`")]
    Shape(String),
    #[error("pattern {0:?}: only visible ASCII characters, at most {MAX_PATTERN_LEN} bytes")]
    Characters(String),
}

impl Pattern {
    /// Parses `source:type` or `*`.
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let shown = || text.chars().take(MAX_PATTERN_LEN).collect::<String>();
        if text.is_empty()
            || text.len() > MAX_PATTERN_LEN
            || !text.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(PatternError::Characters(shown()));
        }
        if text == "*" {
            return Ok(Self {
                source: "*".into(),
                event_type: "*".into(),
            });
        }
        match text.split_once(':') {
            Some((source, event_type)) if !source.is_empty() && !event_type.is_empty() => {
                Ok(Self {
                    source: source.to_owned(),
                    event_type: event_type.to_owned(),
                })
            }
            _ => Err(PatternError::Shape(shown())),
        }
    }

    /// Whether an event of `source` with `event_type` matches.
    pub fn matches(&self, source: &str, event_type: Option<&str>) -> bool {
        glob(&self.source, source)
            && match event_type {
                Some(t) => glob(&self.event_type, t),
                None => self.event_type == "*",
            }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.source == "*" && self.event_type == "*" {
            return f.write_str("*");
        }
        write!(f, "{}:{}", self.source, self.event_type)
    }
}

impl TryFrom<String> for Pattern {
    type Error = PatternError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<Pattern> for String {
    fn from(p: Pattern) -> Self {
        p.to_string()
    }
}

/// Whether any of `patterns` matches.
pub fn any_matches(patterns: &[Pattern], source: &str, event_type: Option<&str>) -> bool {
    patterns.iter().any(|p| p.matches(source, event_type))
}

/// `*` matches any run of bytes (also none); everything else matches itself. Linear-time
/// backtracking over the last `*` (no exponential blow-up on `*a*a*a…`).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, source: &str, event_type: Option<&str>) -> bool {
        Pattern::parse(pattern).unwrap().matches(source, event_type)
    }

    #[test]
    fn matching() {
        let cases = [
            ("*", "stripe", Some("anything"), true),
            ("*", "stripe", None, true),
            ("stripe:*", "stripe", Some("charge.refunded"), true),
            ("stripe:*", "stripe", None, true),
            ("stripe:*", "mailer", Some("charge.refunded"), false),
            ("mailer:*", "mailer", Some("message.sent"), true),
            (
                "stripe:checkout.session.*",
                "stripe",
                Some("checkout.session.completed"),
                true,
            ),
            (
                "stripe:checkout.session.*",
                "stripe",
                Some("checkout.session."),
                true,
            ),
            (
                "stripe:checkout.session.*",
                "stripe",
                Some("checkout.sessions"),
                false,
            ),
            ("stripe:checkout.session.*", "stripe", None, false),
            (
                "stripe:charge.refunded",
                "stripe",
                Some("charge.refunded"),
                true,
            ),
            (
                "stripe:charge.refunded",
                "stripe",
                Some("charge.refunded.x"),
                false,
            ),
            ("*:invoice.paid", "billing", Some("invoice.paid"), true),
            ("*:invoice.paid", "billing", Some("invoice.unpaid"), false),
            ("s*:*.paid", "stripe", Some("invoice.paid"), true),
            ("s*:*.paid", "mailer", Some("invoice.paid"), false),
            (
                "stripe:*.*.completed",
                "stripe",
                Some("checkout.session.completed"),
                true,
            ),
            (
                "stripe:*a*a*a*b",
                "stripe",
                Some("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
                false,
            ),
            ("stripe:**", "stripe", Some(""), true),
        ];
        for (pattern, source, t, expected) in cases {
            assert_eq!(
                m(pattern, source, t),
                expected,
                "{pattern} vs {source}:{t:?}"
            );
        }
    }

    #[test]
    fn parsing_and_display_round_trip() {
        for text in ["*", "stripe:*", "mailer:message.*", "*:x"] {
            let p = Pattern::parse(text).unwrap();
            assert_eq!(p.to_string(), text);
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Pattern>(&json).unwrap(), p);
        }
        assert_eq!(Pattern::parse("*:*").unwrap().to_string(), "*");
        for bad in ["", "stripe", "stripe:", ":x", "a b:c", "é:x"] {
            assert!(Pattern::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Pattern::parse(&format!("s:{}", "x".repeat(MAX_PATTERN_LEN))).is_err());
        assert!(serde_json::from_str::<Pattern>("\"nope\"").is_err());
        let ps = [
            Pattern::parse("a:*").unwrap(),
            Pattern::parse("b:x").unwrap(),
        ];
        assert!(any_matches(&ps, "b", Some("x")));
        assert!(!any_matches(&ps, "b", Some("y")));
        assert!(!any_matches(&[], "a", None));
    }

    /// The glob by its definition (recursive; exponential, so only on short inputs).
    fn reference_glob(p: &[u8], t: &[u8]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some((b'*', rest)) => (0..=t.len()).any(|k| reference_glob(rest, &t[k..])),
            Some((c, rest)) => t.first() == Some(c) && reference_glob(rest, &t[1..]),
        }
    }

    proptest::proptest! {
        #![proptest_config(crate::fuzz::config(512))]

        /// Any text: parsed or refused, never a panic; what parses prints back to itself (`*:*`
        /// as `*`) and matches exactly as the glob's definition says.
        #[test]
        fn fuzz_patterns_parse_print_and_match_by_definition(
            text in proptest::prop_oneof![
                "[a-c*:]{0,10}",
                "[ -~\u{e9}\u{0}]{0,12}",
                proptest::strategy::Just("*".repeat(250)),
            ],
            source in "[a-c]{0,6}",
            event_type in proptest::option::of("[a-c:*]{0,6}"),
        ) {
            let Ok(pattern) = Pattern::parse(&text) else {
                return Ok(());
            };
            let printed = pattern.to_string();
            proptest::prop_assert!(printed == text || (text == "*:*" && printed == "*"));
            proptest::prop_assert_eq!(Pattern::parse(&printed), Ok(pattern.clone()));
            let (ps, pt) = text.split_once(':').unwrap_or(("*", "*"));
            let expected = reference_glob(ps.as_bytes(), source.as_bytes())
                && match &event_type {
                    Some(t) => reference_glob(pt.as_bytes(), t.as_bytes()),
                    None => pt == "*",
                };
            proptest::prop_assert_eq!(
                pattern.matches(&source, event_type.as_deref()),
                expected,
                "{} vs {}:{:?}", text, source, event_type
            );
        }
    }
}
