//! DynamoDB attribute values, built and read in one place: the store adapters, applications that
//! keep their own items in the table, the operator CLI and the tests all use these helpers.
//!
//! Builders ([`s`], [`n`], [`bool`](fn@bool), [`strings`], [`string_map`]) make values; getters
//! ([`get_s`], [`get_n`], [`get_bool`], [`get_strings`]) read an attribute of an [`Item`] and
//! answer `None` (or an empty list) when it is absent or of another type.

use super::Item;
use aws_sdk_dynamodb::types::AttributeValue;

/// A string value.
pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A number value.
pub fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// A boolean value.
pub fn bool(v: bool) -> AttributeValue {
    AttributeValue::Bool(v)
}

/// A list of strings.
pub fn strings(v: &[String]) -> AttributeValue {
    AttributeValue::L(v.iter().cloned().map(AttributeValue::S).collect())
}

/// A map of strings (e.g. a message's headers).
pub fn string_map(pairs: &[(String, String)]) -> AttributeValue {
    AttributeValue::M(
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), s(v.clone())))
            .collect(),
    )
}

/// A string attribute.
pub fn get_s<'a>(item: &'a Item, k: &str) -> Option<&'a str> {
    item.get(k).and_then(|v| v.as_s().ok()).map(String::as_str)
}

/// A number attribute that fits an `i64`.
pub fn get_n(item: &Item, k: &str) -> Option<i64> {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

/// A boolean attribute.
pub fn get_bool(item: &Item, k: &str) -> Option<bool> {
    item.get(k).and_then(|v| v.as_bool().ok()).copied()
}

/// The string elements of a list attribute (others skipped; absent: empty).
pub fn get_strings(item: &Item, k: &str) -> Vec<String> {
    item.get(k)
        .and_then(|v| v.as_l().ok())
        .map(|l| l.iter().filter_map(|v| v.as_s().ok().cloned()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_and_other_types_read_as_absent() {
        let item = Item::from([
            ("s".to_string(), s("text")),
            ("n".to_string(), n(-42)),
            ("big".to_string(), AttributeValue::N("1e400".into())),
            ("b".to_string(), bool(true)),
            (
                "l".to_string(),
                AttributeValue::L(vec![s("a"), n(1), s("b")]),
            ),
            (
                "m".to_string(),
                string_map(&[("k".to_string(), "v".to_string())]),
            ),
        ]);
        assert_eq!(get_s(&item, "s"), Some("text"));
        assert_eq!(get_n(&item, "n"), Some(-42));
        assert_eq!(get_bool(&item, "b"), Some(true));
        assert_eq!(get_strings(&item, "l"), vec!["a", "b"]);
        assert_eq!(strings(&["x".to_string()]), AttributeValue::L(vec![s("x")]));
        assert_eq!(
            item.get("m")
                .and_then(|m| m.as_m().ok())
                .and_then(|m| m.get("k")),
            Some(&s("v"))
        );
        for absent in ["missing", "s"] {
            assert_eq!(get_n(&item, absent), None);
            assert_eq!(get_bool(&item, absent), None);
            assert!(get_strings(&item, absent).is_empty());
        }
        assert_eq!(get_s(&item, "n"), None);
        assert_eq!(get_n(&item, "big"), None, "out of range reads as absent");
    }
}
