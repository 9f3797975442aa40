//! What `inboxctl send` needs of a scheme and ingest does not: the [`Sampler`] (a sample event
//! shaped like the provider's, its id and its type), and the helpers samples use
//! ([`random_alnum`], [`random_uuid`], [`rfc3339`]).

use std::fmt;

use serde_json::Value;

/// A provider's sample events, for `inboxctl send`; beside [`super::Scheme`], which is what
/// ingest needs. Built for a source from its spec, like its scheme ([`super::sampler`]); a sample
/// never depends on the source's secrets.
pub trait Sampler: fmt::Debug + Send + Sync {
    /// A fresh event id in the provider's format (`evt_…`, a UUID, …).
    fn sample_id(&self) -> String;

    /// The provider's usual test event type.
    fn sample_type(&self) -> &'static str;

    /// A sample event shaped like the provider's, with this id and type wherever the provider
    /// puts them, created at `now_secs`.
    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample;
}

/// A sample event ([`Sampler::sample`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub body: Vec<u8>,
    /// The body's media type (`application/json`).
    pub content_type: &'static str,
}

impl Sample {
    /// A JSON body.
    pub fn json(value: &Value) -> Self {
        Self {
            body: value.to_string().into_bytes(),
            content_type: "application/json",
        }
    }
}

/// `n` random ASCII letters and digits (sample ids).
pub(super) fn random_alnum(n: usize) -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(n)
        .collect()
}

/// A random UUID v4 (GitHub and Shopify delivery ids).
pub(super) fn random_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Unix seconds as RFC 3339 UTC, `2026-11-30T10:00:00Z` (sample timestamps).
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
