//! What `inboxctl send` needs of a scheme and ingest does not: the [`Sampler`] (a sample event
//! shaped like the provider's, its id and its type), the samplers' registration list
//! (`SAMPLERS`, [`sampler`]), and the helper samples use ([`random_alnum`]; ids and times as
//! signing writes them too are in `stamp.rs`).
//!
//! Compiled only with the `samples` feature (which `inboxctl` turns on) and in this crate's
//! tests: no Lambda carries a sample. Each provider's `Samples` stays in its file, behind the same
//! `cfg`.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::{
    discord, generic, github, mailgun, paddle, postmark, sendgrid, shopify, slack, sns, square,
    standard, stripe, twilio, unknown, zoom, SchemeError, Spec,
};

/// The samplers, under the names their schemes are registered as (`SCHEMES` in `mod.rs`, in the
/// same order; a test holds them equal).
const SAMPLERS: &[(&str, SamplerConstructor)] = &[
    ("stripe", fixed::<stripe::Samples>),
    ("standard-webhooks", fixed::<standard::Samples>),
    ("github", fixed::<github::Samples>),
    ("shopify", fixed::<shopify::Samples>),
    ("slack", fixed::<slack::Samples>),
    ("hmac-sha256", fixed::<generic::Samples>),
    ("sns", sns::samples),
    ("sendgrid", fixed::<sendgrid::Samples>),
    ("mailgun", fixed::<mailgun::Samples>),
    ("postmark", fixed::<postmark::Samples>),
    ("paddle", fixed::<paddle::Samples>),
    ("square", fixed::<square::Samples>),
    ("twilio", fixed::<twilio::Samples>),
    ("discord", fixed::<discord::Samples>),
    ("zoom", fixed::<zoom::Samples>),
];

/// A registered scheme's samples' constructor (from the source's spec: a sample may show a
/// setting, as SNS's shows its topic).
type SamplerConstructor = fn(&Spec<'_>) -> Result<Arc<dyn Sampler>, SchemeError>;

/// The samples of a provider whose samples show no setting.
fn fixed<S: Sampler + Default + 'static>(_: &Spec<'_>) -> Result<Arc<dyn Sampler>, SchemeError> {
    Ok(Arc::new(S::default()))
}

/// Builds the samples of the scheme registered as `name`, for `inboxctl send`
/// ([`SchemeError::UnknownScheme`] if there is none).
pub fn sampler(name: &str, spec: &Spec<'_>) -> Result<Arc<dyn Sampler>, SchemeError> {
    let (_, samples) = SAMPLERS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| unknown(name))?;
    samples(spec)
}

/// A provider's sample events, for `inboxctl send`; beside [`super::Scheme`], which is what
/// ingest needs. Built for a source from its spec, like its scheme ([`sampler`]); a sample
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

#[cfg(test)]
mod tests {
    use super::SAMPLERS;

    /// Every registered scheme has samples, registered under its name, in the same order.
    #[test]
    fn every_scheme_has_samples() {
        let samplers: Vec<&str> = SAMPLERS.iter().map(|(name, _)| *name).collect();
        assert_eq!(samplers, super::super::scheme_names().collect::<Vec<_>>());
    }
}
