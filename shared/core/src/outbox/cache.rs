//! The destinations, read from the table and kept for a short while ([`DestinationCache`]): the
//! process function reads them at most once per `DESTINATION_CACHE_MS` to fan events out, the
//! deliver function to send. A change made by `inboxctl dest …` therefore reaches the functions
//! within that time (5 s by default); the deliver function re-reads at once after a conflict.

use super::destination::Destination;
use super::sign::Signer;
use crate::store::{ItemStore, StoreError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A destination with its signer (built once per version read).
#[derive(Debug)]
pub struct Loaded {
    pub destination: Destination,
    /// `None` when no active secret can sign (the deliveries then fail with that reason).
    pub signer: Option<Signer>,
}

/// Every destination, as read at `read_at`.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub read_at: i64,
    pub destinations: Vec<Arc<Loaded>>,
}

impl Snapshot {
    pub fn get(&self, id: &str) -> Option<&Arc<Loaded>> {
        self.destinations.iter().find(|d| d.destination.id == id)
    }
}

/// Reads every destination through [`ItemStore::query_items`] (one `Query` on DynamoDB) and keeps
/// the result for `ttl`.
pub struct DestinationCache<S> {
    store: S,
    ttl: Duration,
    current: Mutex<Option<Arc<Snapshot>>>,
}

impl<S> std::fmt::Debug for DestinationCache<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DestinationCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl<S: ItemStore> DestinationCache<S> {
    pub fn new(store: S, ttl: Duration) -> Self {
        Self {
            store,
            ttl,
            current: Mutex::new(None),
        }
    }

    /// The destinations, read again when the copy is older than the ttl (or from the future).
    pub async fn snapshot(&self, now: i64) -> Result<Arc<Snapshot>, StoreError> {
        let ttl = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        if let Some(s) = self.cached() {
            if now >= s.read_at && now - s.read_at < ttl {
                return Ok(s);
            }
        }
        let fresh = Arc::new(load(&self.store, now).await?);
        if let Ok(mut c) = self.current.lock() {
            *c = Some(fresh.clone());
        }
        Ok(fresh)
    }

    /// Forgets the copy: the next read goes to the table.
    pub fn invalidate(&self) {
        if let Ok(mut c) = self.current.lock() {
            *c = None;
        }
    }

    fn cached(&self) -> Option<Arc<Snapshot>> {
        self.current.lock().ok().and_then(|c| c.clone())
    }
}

/// Reads every destination; an unreadable item is logged and skipped (one bad row must not stop
/// every delivery).
pub async fn load<S: ItemStore>(store: &S, now: i64) -> Result<Snapshot, StoreError> {
    let items = store
        .query_items(
            super::schema::DESTINATIONS_PK,
            super::schema::DESTINATION_PREFIX,
        )
        .await?;
    let mut destinations = Vec::with_capacity(items.len());
    for item in items {
        match Destination::from_item(item) {
            Ok(destination) => {
                let signer = Signer::new(destination.active_secrets(now)).ok();
                destinations.push(Arc::new(Loaded {
                    destination,
                    signer,
                }));
            }
            Err(e) => tracing::error!(error = %e, "a destination item is unreadable; skipped"),
        }
    }
    Ok(Snapshot {
        read_at: now,
        destinations,
    })
}
