//! Sources that follow their secrets in a warm container: [`LiveSources`] holds the current
//! [`Sources`] behind an [`ArcSwap`] (a request takes a snapshot without locking) and rebuilds
//! them from freshly read secrets ([`Reloader`], over a [`SecretsFetch`]: Secrets Manager in the
//! cloud):
//!
//! - when they are older than the TTL (`WEBHOOK_SECRETS_TTL_SECS`, 5 minutes by default): a
//!   removed (compromised) secret is refused within the TTL, and an added one accepted;
//! - after a signature that matched no secret, at most once a minute (a provider that rotated
//!   to a secret stored a moment ago is not refused for a whole TTL, and forged requests cannot
//!   make the function hammer Secrets Manager).
//!
//! A failed reload keeps the sources in use and is tried again a minute later at the earliest;
//! it never fails a request. One request reloads at a time; the others keep the snapshot they
//! took. Time comes from the caller (the ingest command's injectable clock).

use super::{parse_secrets, Sources};
use crate::config::ConfigError;
use arc_swap::ArcSwap;
use futures_util::future::BoxFuture;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The shortest time between two reloads that are not due to the TTL (after a signature that
/// matched no secret, or after a failed reload), ms.
pub const MIN_RELOAD_INTERVAL_MS: i64 = 60_000;

/// Where the secrets JSON (`{"source": ["secret", …]}`) is read from, each time it is reloaded.
pub trait SecretsFetch: Send + Sync {
    /// The secrets JSON as stored now. Errors never contain a secret.
    fn fetch(&self) -> BoxFuture<'_, Result<String, ConfigError>>;
}

/// Rebuilds the sources from `WEBHOOK_SOURCES` (fixed for the container's life) and secrets read
/// again. `Debug` shows the variable the secrets come from, nothing else.
#[derive(Clone)]
pub struct Reloader {
    sources_json: Arc<str>,
    secrets_var: &'static str,
    fetch: Arc<dyn SecretsFetch>,
}

impl Reloader {
    /// A reloader of the sources `sources_json`, with secrets from `fetch` (errors name
    /// `secrets_var`).
    pub fn new(
        sources_json: impl Into<Arc<str>>,
        secrets_var: &'static str,
        fetch: Arc<dyn SecretsFetch>,
    ) -> Self {
        Self {
            sources_json: sources_json.into(),
            secrets_var,
            fetch,
        }
    }

    /// Reads the secrets and builds the sources.
    pub async fn load(&self) -> Result<Sources, ConfigError> {
        let json = self.fetch.fetch().await?;
        let secrets = parse_secrets(&json, self.secrets_var)?;
        Sources::from_json(&self.sources_json, &secrets)
    }
}

impl fmt::Debug for Reloader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloader")
            .field("secrets_var", &self.secrets_var)
            .finish_non_exhaustive()
    }
}

/// The sources in use, reloaded on a TTL and after a mismatch when a [`Reloader`] is given.
#[derive(Debug)]
pub struct LiveSources {
    current: ArcSwap<Sources>,
    reloader: Option<Reloader>,
    ttl_ms: i64,
    /// When the TTL next asks for a reload, ms.
    due_at_ms: AtomicI64,
    /// When the last reload was tried, ms (`i64::MIN`: never).
    tried_at_ms: AtomicI64,
    reloading: AtomicBool,
}

impl LiveSources {
    /// Sources that never change (secrets from the environment, tests, benchmarks).
    pub fn fixed(sources: Sources) -> Self {
        Self {
            current: ArcSwap::from_pointee(sources),
            reloader: None,
            ttl_ms: i64::MAX,
            due_at_ms: AtomicI64::new(i64::MAX),
            tried_at_ms: AtomicI64::new(i64::MIN),
            reloading: AtomicBool::new(false),
        }
    }

    /// Sources loaded at `loaded_at_ms`, reloaded by `reloader` once `ttl` has passed, and after
    /// a mismatch at most once a minute.
    pub fn reloading(
        sources: Sources,
        reloader: Reloader,
        ttl: Duration,
        loaded_at_ms: i64,
    ) -> Self {
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX).max(1);
        Self {
            current: ArcSwap::from_pointee(sources),
            reloader: Some(reloader),
            ttl_ms,
            due_at_ms: AtomicI64::new(loaded_at_ms.saturating_add(ttl_ms)),
            tried_at_ms: AtomicI64::new(loaded_at_ms),
            reloading: AtomicBool::new(false),
        }
    }

    /// The sources in use now (a snapshot: a reload does not change it under the caller).
    pub fn current(&self) -> Arc<Sources> {
        self.current.load_full()
    }

    /// The sources to verify a request arriving at `now_ms` with: reloaded first if the TTL
    /// passed.
    pub async fn for_request(&self, now_ms: i64) -> Arc<Sources> {
        if now_ms >= self.due_at_ms.load(Ordering::Acquire) {
            self.reload(now_ms, "the secrets' TTL passed").await;
        }
        self.current()
    }

    /// After a signature that matched no secret at `now_ms`: reloads unless the last reload is
    /// less than a minute old, and answers the new sources if they were reloaded (`None`: the
    /// verdict stands).
    pub async fn after_mismatch(&self, now_ms: i64) -> Option<Arc<Sources>> {
        self.reloader.as_ref()?;
        let tried = self.tried_at_ms.load(Ordering::Acquire);
        if now_ms.saturating_sub(tried) < MIN_RELOAD_INTERVAL_MS {
            return None;
        }
        self.reload(now_ms, "a signature matched no secret")
            .await
            .then(|| self.current())
    }

    /// Reloads now unless another request is reloading; `true` if new sources are in use.
    async fn reload(&self, now_ms: i64, why: &'static str) -> bool {
        let Some(reloader) = &self.reloader else {
            return false;
        };
        let Some(_reloading) = Busy::try_set(&self.reloading) else {
            return false;
        };
        self.tried_at_ms.store(now_ms, Ordering::Release);
        let loaded = match reloader.load().await {
            Ok(sources) => {
                self.current.store(Arc::new(sources));
                self.due_at_ms
                    .store(now_ms.saturating_add(self.ttl_ms), Ordering::Release);
                tracing::info!(reason = why, "signing secrets re-read");
                true
            }
            Err(e) => {
                self.due_at_ms.store(
                    now_ms.saturating_add(MIN_RELOAD_INTERVAL_MS.min(self.ttl_ms)),
                    Ordering::Release,
                );
                tracing::error!(reason = why, error = %e, "could not re-read the signing secrets; the ones in use stay");
                false
            }
        };
        loaded
    }
}

/// A flag set while a reload runs, cleared when dropped (also if the request is cancelled).
struct Busy<'a>(&'a AtomicBool);

impl<'a> Busy<'a> {
    /// Sets the flag unless it is set already.
    fn try_set(flag: &'a AtomicBool) -> Option<Self> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Self(flag))
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
