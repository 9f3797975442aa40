//! What signing (SNS's envelopes) and samples both write on a message: a fresh UUID and a time
//! in RFC 3339.

/// A random UUID v4 (GitHub and Shopify delivery ids).
pub(super) fn random_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Unix seconds as RFC 3339 UTC, `2026-11-30T10:00:00Z` (sample timestamps, SNS envelopes).
pub(super) fn rfc3339(secs: i64) -> String {
    // jiff's `Timestamp` prints RFC 3339 in UTC, without a fraction when there is none; a time
    // beyond its range (±9999 years) is clamped to the range's end.
    let at = jiff::Timestamp::from_second(secs).unwrap_or(if secs < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    at.to_string()
}
