//! What signing (SNS's envelopes) and samples both write on a message: a fresh UUID and a time
//! in RFC 3339.

/// A random UUID v4 (GitHub and Shopify delivery ids).
pub(super) fn random_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Unix seconds as RFC 3339 UTC, `2026-11-30T10:00:00Z` (sample timestamps, SNS envelopes).
pub(super) fn rfc3339(secs: i64) -> String {
    // Days since 1970-01-01 → civil date (Howard Hinnant's algorithm).
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}
