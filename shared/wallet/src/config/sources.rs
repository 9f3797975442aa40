//! Which sources carry the wallet's events ([`WalletSources`]): read from `WALLET_STRIPE_SOURCE`,
//! `WALLET_MAILER_SOURCE` and `WALLET_EMAIL_SOURCES`, none of them a name reserved for the
//! deployment's own events.

use super::{WALLET_EMAIL_SOURCES, WALLET_MAILER_SOURCE, WALLET_STRIPE_SOURCE};
use crate::balance::events::PUBLISHED_SOURCES;
use crate::email::providers::EmailProvider;
use inbox_core::config::{ConfigError, Env};

impl WalletSources {
    /// The wallet's sources from `env` (`WALLET_STRIPE_SOURCE`, `WALLET_MAILER_SOURCE`,
    /// `WALLET_EMAIL_SOURCES`).
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let stripe: String = env.parse(&WALLET_STRIPE_SOURCE)?;
        let mailer: String = env.parse(&WALLET_MAILER_SOURCE)?;
        let email = match env.optional(&WALLET_EMAIL_SOURCES) {
            Some(text) => email_sources(&text, &[&stripe, &mailer])?,
            None => Vec::new(),
        };
        unreserved(WALLET_STRIPE_SOURCE.name, &stripe)?;
        unreserved(WALLET_MAILER_SOURCE.name, &mailer)?;
        for (source, _) in &email {
            unreserved(WALLET_EMAIL_SOURCES.name, source)?;
        }
        Ok(Self {
            stripe,
            mailer,
            email,
        })
    }
}

/// Refuses `source` (as `var` names it) if it is reserved for the deployment's own events
/// ([`PUBLISHED_SOURCES`]: the wallet publishes its own as `wallet`): an inbound source of that
/// name would be read as the wallet's.
fn unreserved(var: &'static str, source: &str) -> Result<(), ConfigError> {
    if PUBLISHED_SOURCES.contains(&source) {
        return Err(ConfigError::Invalid {
            var,
            reason: format!(
                "source {source:?} is reserved for the wallet's own events (it publishes them as \
                 source {source:?}); name the inbound source otherwise"
            ),
        });
    }
    Ok(())
}

/// `source=provider, …` (see [`WALLET_EMAIL_SOURCES`]); no source named twice or in `taken`.
fn email_sources(text: &str, taken: &[&str]) -> Result<Vec<(String, EmailProvider)>, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        var: WALLET_EMAIL_SOURCES.name,
        reason,
    };
    let mut out: Vec<(String, EmailProvider)> = Vec::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (source, provider) = pair
            .split_once('=')
            .map(|(s, p)| (s.trim(), p.trim()))
            .filter(|(s, p)| !s.is_empty() && !p.is_empty())
            .ok_or_else(|| invalid(format!("{pair:?} is not source=provider")))?;
        let provider = EmailProvider::parse(provider).ok_or_else(|| {
            let known: Vec<&str> = EmailProvider::ALL.iter().map(|p| p.as_str()).collect();
            invalid(format!(
                "{provider:?} is not an email provider (known: {})",
                known.join(", ")
            ))
        })?;
        if taken.contains(&source) || out.iter().any(|(s, _)| s == source) {
            return Err(invalid(format!(
                "source {source:?} is named twice (here, or as WALLET_STRIPE_SOURCE or WALLET_MAILER_SOURCE)"
            )));
        }
        out.push((source.to_owned(), provider));
    }
    Ok(out)
}

/// Which sources carry which events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletSources {
    /// The Stripe source (top-ups and refunds).
    pub stripe: String,
    /// The source of this product's own mailer events (`message.*`, Standard Webhooks).
    pub mailer: String,
    /// More sources of email delivery events, each with its provider's format
    /// (`WALLET_EMAIL_SOURCES`).
    pub email: Vec<(String, EmailProvider)>,
}

impl Default for WalletSources {
    /// `stripe` and `mailer`, no other email source.
    fn default() -> Self {
        Self {
            stripe: "stripe".into(),
            mailer: "mailer".into(),
            email: Vec::new(),
        }
    }
}

impl WalletSources {
    /// The default sources and these email sources.
    pub fn with_email(email: impl IntoIterator<Item = (String, EmailProvider)>) -> Self {
        Self {
            email: email.into_iter().collect(),
            ..Self::default()
        }
    }

    /// The provider whose delivery events `source` carries, if it is an email source.
    pub fn email_provider(&self, source: &str) -> Option<EmailProvider> {
        if source == self.mailer {
            return Some(EmailProvider::Mailer);
        }
        self.email
            .iter()
            .find(|(name, _)| name == source)
            .map(|(_, provider)| *provider)
    }

    /// Every email source (the mailer's first).
    pub fn email_sources(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.mailer.as_str()).chain(self.email.iter().map(|(n, _)| n.as_str()))
    }
}
