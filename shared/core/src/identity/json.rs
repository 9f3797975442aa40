//! The body's top-level JSON object, parsed once for the identity rules ([`JsonObject`]): the
//! fast scan (`scan.rs`) first, serde_json for what it refuses; JSON pointers resolved lazily,
//! through JSON documents embedded in strings.

use super::IdentityError;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;

/// The top level of a JSON object body, parsed once: the whole body is validated, and only the
/// members some rule reads are kept (raw, not built); the others are skipped without
/// allocating. A key given twice keeps its last value. The fast scan (`scan.rs`) decides most
/// bodies; what it refuses, serde_json decides.
pub(super) struct JsonObject<'a>(pub(super) Vec<(Cow<'a, str>, &'a str)>);

impl<'a> JsonObject<'a> {
    /// One pass over the body, keeping the top-level members named in `wanted`.
    pub(super) fn parse(body: &'a [u8], wanted: &[&str]) -> Result<Self, IdentityError> {
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some() && first != Some(&b'{') {
            // A scalar or an array (valid JSON or not): either way not an event object.
            return Err(IdentityError::NotAnObject);
        }
        if let Ok(members) = super::scan::members(body, wanted) {
            return Ok(Self(members));
        }
        let mut de = serde_json::Deserializer::from_slice(body);
        let members = serde::Deserializer::deserialize_map(&mut de, Members { wanted })
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| IdentityError::InvalidJson(json_error(&e)))?;
        Ok(Self(
            members.into_iter().map(|(k, v)| (k, v.get())).collect(),
        ))
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Resolves an RFC 6901 JSON pointer to a string (or an integer, as its digits).
    /// `Ok(None)`: absent or null. `Err(reason)`: present but not a string or integer.
    pub(super) fn lookup(&self, pointer: &str) -> Result<Option<String>, &'static str> {
        let mut tokens = pointer
            .strip_prefix('/')
            .map(|p| p.split('/').map(unescape))
            .ok_or("is not a valid JSON pointer")?;
        let first = tokens.next().unwrap_or_default();
        let Some(current) = self.get(first.as_ref()) else {
            return Ok(None);
        };
        let rest: Vec<Cow<'_, str>> = tokens.collect();
        descend(current, &rest)
    }
}

/// Deserializes a JSON object's members, keeping those named in `wanted` as raw values.
struct Members<'w> {
    wanted: &'w [&'w str],
}

impl<'de> serde::de::Visitor<'de> for Members<'_> {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = Vec::with_capacity(self.wanted.len());
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if self.wanted.iter().any(|w| *w == "*" || *w == key.as_ref()) {
                kept.push((key, map.next_value::<&'de RawValue>()?));
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(kept)
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
