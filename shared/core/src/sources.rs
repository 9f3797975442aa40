//! The configured webhook sources: each source's name, signature scheme (built once from its
//! settings, secrets and tolerance), where its event id and type come from, and the headers kept
//! with its messages.
//!
//! Sources are written in `WEBHOOK_SOURCES` (a JSON object: source name → `{"scheme": …}` plus
//! the scheme's settings, `tolerance_secs`, `event_id`, `event_type`, `handshake`, `batch`; see
//! `docs/sources.md`), secrets in
//! `WEBHOOK_SECRETS` or the Secrets Manager secret (source name → list of secrets), read by
//! [`parse_secrets`] into redacted [`Secret`]s. Errors name the variable at fault and never
//! contain a secret. [`live`]: the sources in use, re-read when their secrets may have changed;
//! [`secrets_manager`]: the secrets read from AWS Secrets Manager.

pub mod live;
pub mod secrets_manager;

pub use live::{LiveSources, Reloader, SecretsFetch};
pub use secrets_manager::{fetch_secret, SecretsManagerSecrets};

use crate::config::{vars, ConfigError, DEFAULT_TOLERANCE_SECS};
use crate::domain::SourceName;
use crate::identity::{self, FieldRule};
#[cfg(feature = "samples")]
use crate::signature::Sampler;
use crate::signature::{self, Fetcher, Scheme, SchemeError, Secret, Spec};
use http::HeaderName;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Refuses a `WEBHOOK_SOURCES` that names a source the deployment publishes its own events
/// under (`published`: the names its applications write messages as, through the outbox; the
/// core knows none of them, whoever composes the function passes them). A webhook source of such
/// a name would let whoever holds its secret write messages the handlers take for the
/// application's own, so configuring one fails at start. Only the JSON's names are read (before
/// any secret is looked at); what else is wrong with it is [`Sources::from_json`]'s to report.
pub fn refuse_published(sources_json: &str, published: &[&str]) -> Result<(), ConfigError> {
    let Ok(specs) = serde_json::from_str::<Map<String, Value>>(sources_json) else {
        return Ok(());
    };
    match specs.keys().find(|name| published.contains(&name.as_str())) {
        Some(name) => Err(ConfigError::Invalid {
            var: vars::WEBHOOK_SOURCES,
            reason: format!(
                "source name {name:?} is reserved for the deployment's own events (an application \
                 publishes its events as source {name:?}); an inbound source of that name could \
                 forge them: name it otherwise"
            ),
        }),
        None => Ok(()),
    }
}

/// One source as written in `WEBHOOK_SOURCES`.
#[derive(Debug, Clone, Deserialize)]
pub struct SourceSpec {
    /// The registered scheme name (`stripe`, `hmac-sha256`, …).
    pub scheme: String,
    /// Tolerance for signed timestamps, seconds (schemes with a timestamp only).
    #[serde(default)]
    pub tolerance_secs: Option<u64>,
    /// Overrides the scheme's default event id rule.
    #[serde(default)]
    pub event_id: Option<FieldRule>,
    /// Overrides the scheme's default event type rule.
    #[serde(default)]
    pub event_type: Option<FieldRule>,
    /// `false`: the scheme's endpoint handshakes (Slack's `url_verification`, Zoom's URL
    /// validation, Discord's PINGs, SNS subscription confirmations) are stored as events instead
    /// of answered. Default `true`.
    #[serde(default)]
    pub handshake: Option<bool>,
    /// Whether a body that is a JSON array is split into one message per element (the scheme's
    /// default: `true` for SendGrid, `false` otherwise).
    #[serde(default)]
    pub batch: Option<bool>,
    /// Everything else: the scheme's own settings (e.g. the generic scheme's `header`).
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

/// A configured source, ready to verify and identify requests. `Debug` shows no secret.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: SourceName,
    /// The registered name of its scheme.
    pub scheme_name: String,
    pub scheme: Arc<dyn Scheme>,
    pub event_id: FieldRule,
    /// Whether the scheme's signature covers what `event_id` reads (`Scheme::signs`); if not, the
    /// dedupe key is the body's hash and the id is kept as metadata ([`identity::identify`]).
    pub id_signed: bool,
    /// `None`: the source's events have no type.
    pub event_type: Option<FieldRule>,
    /// Whether ingest answers the scheme's endpoint handshakes (`Scheme::handshake`).
    pub handshakes: bool,
    /// Whether a JSON array body is split into its events, each its own message (`event_id` and
    /// `event_type` then apply to each event).
    pub batches: bool,
    /// Lower-case names of the headers kept with a message, sorted, computed once.
    kept_headers: Vec<HeaderName>,
    /// The scheme's own settings, from which [`Source::sampler`] builds its samples.
    #[cfg(feature = "samples")]
    settings: Map<String, Value>,
}

impl Source {
    /// Builds a source from its spec and secrets, filling in the scheme's defaults (the spec's
    /// own rules are checked by [`Sources::from_json`]).
    pub fn new(
        name: SourceName,
        spec: SourceSpec,
        secrets: &[Secret],
    ) -> Result<Self, SchemeError> {
        Self::with_fetcher(name, spec, secrets, None)
    }

    /// The same, with `fetcher` (`None`: the production one) for what the provider publishes
    /// (SNS certificates) and what a handshake visits (SNS confirmation URLs).
    pub fn with_fetcher(
        name: SourceName,
        spec: SourceSpec,
        secrets: &[Secret],
        fetcher: Option<&Arc<dyn Fetcher>>,
    ) -> Result<Self, SchemeError> {
        let base = match spec.tolerance_secs {
            Some(secs) => Spec::new(&spec.settings, secrets, Duration::from_secs(secs)),
            None => Spec::new(
                &spec.settings,
                secrets,
                Duration::from_secs(DEFAULT_TOLERANCE_SECS),
            )
            .with_default_tolerance(),
        };
        let scheme_spec = match fetcher {
            Some(fetcher) => base.with_fetcher(fetcher),
            None => base,
        };
        let scheme = signature::build(&spec.scheme, &scheme_spec)?;
        let event_id = spec.event_id.unwrap_or_else(|| scheme.default_event_id());
        let id_signed = scheme.signs(&event_id);
        let event_type = spec.event_type.or_else(|| scheme.default_event_type());
        let kept_headers = kept_headers(scheme.as_ref(), &event_id, event_type.as_ref());
        let handshakes = spec.handshake.unwrap_or(true);
        let batches = spec.batch.unwrap_or_else(|| scheme.batches());
        Ok(Self {
            name,
            scheme_name: spec.scheme,
            scheme,
            event_id,
            id_signed,
            event_type,
            handshakes,
            batches,
            kept_headers,
            #[cfg(feature = "samples")]
            settings: spec.settings,
        })
    }

    /// Its scheme's samples, for `inboxctl send`: built from the source's settings when asked
    /// (a sample never depends on its secrets), and only with the `samples` feature: ingest never
    /// asks for one, and no Lambda carries them.
    #[cfg(feature = "samples")]
    pub fn sampler(&self) -> Result<Arc<dyn Sampler>, SchemeError> {
        let tolerance = Duration::from_secs(DEFAULT_TOLERANCE_SECS);
        signature::sampler(
            &self.scheme_name,
            &Spec::new(&self.settings, &[], tolerance),
        )
    }

    /// Whether identifying this source's events needs the body parsed as a JSON object.
    pub fn needs_json(&self) -> bool {
        identity::needs_json(&self.event_id, self.event_type.as_ref())
    }

    /// Header names (lower case, sorted) kept with a message: those needed to re-verify it,
    /// those its id and type come from, and `content-type`.
    pub fn kept_headers(&self) -> &[HeaderName] {
        &self.kept_headers
    }
}

fn kept_headers(
    scheme: &dyn Scheme,
    event_id: &FieldRule,
    event_type: Option<&FieldRule>,
) -> Vec<HeaderName> {
    let mut names = scheme.signed_headers().to_vec();
    for rule in [Some(event_id), event_type].into_iter().flatten() {
        for h in rule.headers() {
            // A name that is not a valid header name can never be present: nothing to keep.
            if let Ok(name) = HeaderName::from_bytes(h.to_ascii_lowercase().as_bytes()) {
                names.push(name);
            }
        }
    }
    names.push(http::header::CONTENT_TYPE);
    names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    names.dedup();
    names
}

/// All configured sources, by name.
#[derive(Debug, Clone, Default)]
pub struct Sources(HashMap<String, Source>);

impl Sources {
    /// Parses `WEBHOOK_SOURCES` JSON and pairs each source with its secrets (`source → [secret]`).
    /// Errors about a source's settings name `WEBHOOK_SOURCES`, about its secrets
    /// `WEBHOOK_SECRETS`.
    pub fn from_json(
        sources_json: &str,
        secrets: &HashMap<String, Vec<Secret>>,
    ) -> Result<Self, ConfigError> {
        Self::from_json_with_fetcher(sources_json, secrets, None)
    }

    /// The same, with `fetcher` for what providers publish and handshakes visit (`None`: the
    /// production HTTPS fetcher; tests inject one that never reaches the network).
    pub fn from_json_with_fetcher(
        sources_json: &str,
        secrets: &HashMap<String, Vec<Secret>>,
        fetcher: Option<&Arc<dyn Fetcher>>,
    ) -> Result<Self, ConfigError> {
        let invalid = |var, reason: String| ConfigError::Invalid { var, reason };
        let specs: HashMap<String, SourceSpec> = serde_json::from_str(sources_json)
            .map_err(|e| invalid(vars::WEBHOOK_SOURCES, e.to_string()))?;
        if specs.is_empty() {
            return Err(invalid(
                vars::WEBHOOK_SOURCES,
                "no source is configured".into(),
            ));
        }
        // Everything wrong with WEBHOOK_SOURCES itself is reported before any secret is looked at.
        let mut named = Vec::with_capacity(specs.len());
        for (name, spec) in specs {
            let source_name = SourceName::parse(&name)
                .map_err(|e| invalid(vars::WEBHOOK_SOURCES, format!("source name {name:?} {e}")))?;
            signature::check_registered(&spec.scheme)
                .map_err(|e| invalid(vars::WEBHOOK_SOURCES, format!("source {name:?}: {e}")))?;
            for (field, rule) in [
                ("event_id", &spec.event_id),
                ("event_type", &spec.event_type),
            ] {
                if let Some(Err(reason)) = rule.as_ref().map(FieldRule::check) {
                    return Err(invalid(
                        vars::WEBHOOK_SOURCES,
                        format!("source {name:?}: `{field}`: {reason}"),
                    ));
                }
            }
            named.push((name, source_name, spec));
        }
        let mut out = HashMap::with_capacity(named.len());
        for (name, source_name, spec) in named {
            let source_secrets = secrets.get(&name).ok_or_else(|| {
                invalid(
                    vars::WEBHOOK_SECRETS,
                    format!("no secret for source {name:?}"),
                )
            })?;
            let source =
                Source::with_fetcher(source_name, spec, source_secrets, fetcher).map_err(|e| {
                    let var = if e.is_about_secrets() {
                        vars::WEBHOOK_SECRETS
                    } else {
                        vars::WEBHOOK_SOURCES
                    };
                    invalid(var, format!("source {name:?}: {e}"))
                })?;
            out.insert(name, source);
        }
        Ok(Self(out))
    }

    /// The source called `name`, if configured.
    pub fn get(&self, name: &str) -> Option<&Source> {
        self.0.get(name)
    }

    /// Configured source names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.0.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}

/// Parses the secrets JSON (`{"source": ["secret", …]}`); a single string is accepted for one
/// secret.
pub fn parse_secrets(
    json: &str,
    var: &'static str,
) -> Result<HashMap<String, Vec<Secret>>, ConfigError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(Secret),
        Many(Vec<Secret>),
    }
    // The parser's message could quote part of the input, i.e. a secret: keep only its position.
    let map: HashMap<String, OneOrMany> = serde_json::from_str(json).map_err(|e| ConfigError::Invalid {
        var,
        reason: format!(
            "expected a JSON object mapping source names to lists of secrets (error at line {}, column {})",
            e.line(),
            e.column()
        ),
    })?;
    Ok(map
        .into_iter()
        .map(|(k, v)| match v {
            OneOrMany::One(s) => (k, vec![s]),
            OneOrMany::Many(v) => (k, v),
        })
        .collect())
}

#[cfg(test)]
mod tests;
