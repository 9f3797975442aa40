//! The top-level members of a JSON object body, for the schemes that sign inside it (SNS,
//! Mailgun): parsed once, values kept raw, and a member the signature depends on refused when it
//! appears more than once (two parsers could otherwise disagree on which one was signed).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::SignatureError;

/// The members of a JSON object, in order, duplicates kept.
pub(super) struct Fields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Fields<'a> {
    /// Parses a JSON object; `None` if `bytes` is not one.
    pub(super) fn parse(bytes: &'a [u8]) -> Option<Self> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let fields = (&mut de).deserialize_map(FieldsVisitor).ok()?;
        de.end().ok()?;
        Some(fields)
    }

    /// Parses a raw value that must be a JSON object (a nested member).
    pub(super) fn nested(raw: &'a RawValue) -> Option<Self> {
        Self::parse(raw.get().as_bytes())
    }

    /// The raw value of `name`; `Err` if it appears more than once.
    pub(super) fn raw(&self, name: &'static str) -> Result<Option<&'a RawValue>, SignatureError> {
        let mut found = self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| *v);
        let first = found.next();
        if found.next().is_some() {
            return Err(SignatureError::MalformedField {
                field: name,
                reason: "it appears more than once",
            });
        }
        Ok(first)
    }

    /// The string value of `name`: `Ok(None)` when absent or null, `Err` when duplicated or not
    /// a string.
    pub(super) fn string(&self, name: &'static str) -> Result<Option<String>, SignatureError> {
        match self.raw(name)? {
            None => Ok(None),
            Some(raw) if raw.get() == "null" => Ok(None),
            Some(raw) => serde_json::from_str::<String>(raw.get())
                .map(Some)
                .map_err(|_| SignatureError::MalformedField {
                    field: name,
                    reason: "it is not a string",
                }),
        }
    }

    /// The string value of a required member.
    pub(super) fn required(&self, name: &'static str) -> Result<String, SignatureError> {
        self.string(name)?
            .ok_or(SignatureError::MissingField { field: name })
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(entry) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
            out.push(entry);
        }
        Ok(Fields(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_strings_and_duplicates() {
        let f =
            Fields::parse(br#" {"a":"x","n":null,"i":1,"o":{"k":"v"},"d":"1","d":"2"} "#).unwrap();
        assert_eq!(f.string("a"), Ok(Some("x".into())));
        assert_eq!(f.string("n"), Ok(None));
        assert_eq!(f.string("missing"), Ok(None));
        assert!(matches!(
            f.string("i"),
            Err(SignatureError::MalformedField { field: "i", .. })
        ));
        assert!(matches!(
            f.string("d"),
            Err(SignatureError::MalformedField { field: "d", reason }) if reason.contains("more than once")
        ));
        assert_eq!(
            f.required("missing"),
            Err(SignatureError::MissingField { field: "missing" })
        );
        let nested = Fields::nested(f.raw("o").unwrap().unwrap()).unwrap();
        assert_eq!(nested.string("k"), Ok(Some("v".into())));
        // Escapes are decoded.
        let f = Fields::parse(br#"{"a":"line\nbreak \u00e9"}"#).unwrap();
        assert_eq!(f.string("a"), Ok(Some("line\nbreak é".into())));
        for bad in [&b"[1]"[..], b"", b"{", b"{} x", b"\"s\"", b"\xff"] {
            assert!(Fields::parse(bad).is_none(), "{bad:?}");
        }
    }
}
