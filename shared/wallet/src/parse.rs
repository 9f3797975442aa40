//! Tolerant parsing of the events that move money, the helpers every slice's parse shares:
//! amounts as numbers or numeric strings (never above the configured cap), ids, trimmed text,
//! tenants parsed once, unknown fields ignored (the raw body stays in the table), and errors that
//! say what is wrong ([`Unusable`]); and every Stripe event's `livemode` ([`StripeMode`]). The
//! events themselves are parsed in their slices: Stripe's payments in
//! [`crate::payments::parse`], autopay's in [`crate::autopay::parse`], the mailer's in
//! [`crate::email::parse`].

use crate::tenant::TenantId;
use serde_json::Value;

/// The provider's customer and saved payment method (from its setup events or the operator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedMethod {
    pub customer: String,
    pub payment_method: String,
}

/// Why an event cannot move money (a permanent failure: the message is quarantined with this reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

pub(crate) fn unusable(s: impl Into<String>) -> Unusable {
    Unusable(s.into())
}

/// Which Stripe mode a source moves money for: an event's `livemode` must match it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StripeMode {
    Live,
    #[default]
    Test,
}

impl StripeMode {
    /// `live` or `test` (any case, surrounding spaces ignored).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "live" => Some(Self::Live),
            "test" => Some(Self::Test),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Test => "test",
        }
    }

    /// The mode an event's `livemode` names.
    pub fn of(livemode: bool) -> Self {
        if livemode {
            Self::Live
        } else {
            Self::Test
        }
    }
}

impl std::str::FromStr for StripeMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| format!("{s:?} is neither live nor test"))
    }
}

/// The `livemode` of a Stripe event (the event's own, else its object's); `None` when absent.
pub fn livemode(body: &Value) -> Option<bool> {
    body["livemode"]
        .as_bool()
        .or_else(|| body["data"]["object"]["livemode"].as_bool())
}

/// An amount in minor units no larger than `max` (`WALLET_MAX_AMOUNT`).
pub fn capped(v: &Value, field: &str, max: i64) -> Result<i64, Unusable> {
    let a = amount(v, field)?;
    if a > max {
        return Err(unusable(format!(
            "{field} {a} is above the largest accepted amount, {max} minor units \
             (WALLET_MAX_AMOUNT); refused"
        )));
    }
    Ok(a)
}

/// An id field: a string, or an expanded object's `id`.
pub(crate) fn id_of(v: &Value) -> Option<String> {
    text(v).or_else(|| text(&v["id"]))
}

/// An amount in minor units: a JSON integer or a string of digits.
pub fn amount(v: &Value, field: &str) -> Result<i64, Unusable> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| unusable(format!("{field} is not an integer amount: {n}"))),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| unusable(format!("{field} is not an integer amount: {s:?}"))),
        Value::Null => Err(unusable(format!("{field} is missing"))),
        other => Err(unusable(format!("{field} is not an amount: {other}"))),
    }
    .and_then(|a| {
        if a < 0 {
            Err(unusable(format!("{field} is negative: {a}")))
        } else {
            Ok(a)
        }
    })
}

/// A tenant read at `field` (already trimmed), parsed once here.
pub(crate) fn tenant_of(tenant: &str, field: &str) -> Result<TenantId, Unusable> {
    TenantId::parse(tenant).map_err(|e| unusable(format!("{field}: {e}")))
}

/// A Stripe object's `metadata.tenant`, if it names one.
pub(crate) fn stripe_tenant(obj: &Value) -> Result<Option<TenantId>, Unusable> {
    text(&obj["metadata"]["tenant"])
        .map(|t| tenant_of(&t, "data.object.metadata.tenant"))
        .transpose()
}

/// A string's trimmed value, unless it is blank or not a string.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn amounts_are_numbers_or_numeric_strings() {
        assert_eq!(amount(&json!(2000), "a"), Ok(2000));
        assert_eq!(amount(&json!("2000"), "a"), Ok(2000));
        assert_eq!(amount(&json!(" 7 "), "a"), Ok(7));
        for bad in [
            json!(12.5),
            json!("12.5"),
            json!("x"),
            json!(null),
            json!([1]),
            json!(-1),
            json!("-3"),
        ] {
            assert!(amount(&bad, "a").is_err(), "{bad}");
        }
        assert_eq!(
            amount(&json!(null), "data.object.amount_total")
                .unwrap_err()
                .0,
            "data.object.amount_total is missing"
        );
    }

    #[test]
    fn modes_and_livemode() {
        assert_eq!(StripeMode::parse(" LIVE "), Some(StripeMode::Live));
        assert_eq!(StripeMode::parse("test"), Some(StripeMode::Test));
        assert_eq!(StripeMode::parse("prod"), None);
        assert_eq!(StripeMode::of(true).as_str(), "live");
        assert_eq!(
            livemode(&json!({"livemode": true, "data": {"object": {"livemode": false}}})),
            Some(true)
        );
        assert_eq!(
            livemode(&json!({"data": {"object": {"livemode": false}}})),
            Some(false)
        );
        assert_eq!(livemode(&json!({"data": {"object": {}}})), None);
        assert_eq!(livemode(&json!({"livemode": "yes"})), None);
    }
}
