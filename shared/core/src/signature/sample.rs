//! What `inboxctl send` needs of a scheme and ingest does not: the [`Sampler`] (a sample event
//! shaped like the provider's, its id and its type), and the helper samples use
//! ([`random_alnum`]; ids and times as signing writes them too are in `stamp.rs`).

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
