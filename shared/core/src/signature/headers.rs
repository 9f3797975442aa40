//! Reading a request's headers the way every scheme does ([`single_header`]: present exactly
//! once, visible ASCII, non-empty; [`parse_timestamp`]), writing the headers a scheme signs
//! ([`push_header`]), and what a scheme that signs the body and some headers covers ([`covers`]).

use http::{HeaderMap, HeaderName, HeaderValue};

use super::SignatureError;
use crate::identity::FieldRule;

/// The value of a header that must be present exactly once, trimmed of surrounding spaces and
/// tabs, non-empty and visible ASCII. `label` names it in errors.
pub(super) fn single_header<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    label: &'static str,
) -> Result<&'h str, SignatureError> {
    let mut values = headers.get_all(name).iter();
    let value = values
        .next()
        .ok_or(SignatureError::Missing { header: label })?;
    if values.next().is_some() {
        return Err(SignatureError::Duplicated { header: label });
    }
    let text = value.to_str().map_err(|_| SignatureError::Malformed {
        header: label,
        reason: "the value is not visible ASCII",
    })?;
    let text = text.trim_matches([' ', '\t']);
    if text.is_empty() {
        return Err(SignatureError::Malformed {
            header: label,
            reason: "the value is empty",
        });
    }
    Ok(text)
}

/// A timestamp in whole seconds: 1 to 18 ASCII digits (no sign). Returns the value and its
/// canonical decimal form (leading zeros removed), which is what Stripe and Standard Webhooks
/// sign.
pub(super) fn parse_timestamp(text: &str) -> Result<(i64, &str), &'static str> {
    if text.is_empty() {
        return Err("the timestamp is empty");
    }
    if text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("the timestamp is not a whole number of seconds");
    }
    let value = text
        .parse::<i64>()
        .map_err(|_| "the timestamp is not a whole number of seconds")?;
    let canonical = text.trim_start_matches('0');
    Ok((value, if canonical.is_empty() { "0" } else { canonical }))
}

/// What a scheme that signs the body and the values of `signed_headers` covers
/// ([`super::Scheme::signs`]): the body's JSON pointers and hash always, a header only if it is
/// one of `signed_headers` (case-insensitive).
pub(super) fn covers(rule: &FieldRule, signed_headers: &[&HeaderName]) -> bool {
    match rule {
        FieldRule::JsonPointer(_) | FieldRule::BodySha256 | FieldRule::FormSha256 => true,
        FieldRule::Header(name) => signed_headers
            .iter()
            .any(|h| h.as_str().eq_ignore_ascii_case(name.trim())),
        FieldRule::FirstOf(rules) => rules.iter().all(|r| covers(r, signed_headers)),
    }
}

/// Appends `(name, value)` to `out` when `value` is a valid header value (generated text: hex,
/// base64, digits, validated ids and prefixes).
pub(super) fn push_header(
    out: &mut Vec<(HeaderName, HeaderValue)>,
    name: &HeaderName,
    value: &str,
) {
    if let Ok(value) = HeaderValue::from_str(value) {
        out.push((name.clone(), value));
    }
}
