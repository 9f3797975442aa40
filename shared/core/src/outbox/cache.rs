//! The destinations, read from the table and kept for a short while ([`DestinationCache`]): the
//! process function reads them at most once per `DESTINATION_CACHE_MS` to fan events out, the
//! deliver function to send. A change made by `inboxctl dest …` therefore reaches the functions
//! within that time (5 s by default); the deliver function re-reads at once after a conflict.

use super::destination::{Destination, DestinationId};
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
    pub fn get(&self, id: &DestinationId) -> Option<&Arc<Loaded>> {
        self.destinations.iter().find(|d| d.destination.id == *id)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::destination::did;
    use crate::outbox::destination::SigningSecret;
    use crate::outbox::pattern::Pattern;
    use crate::outbox::schema::{destination_sk, DESTINATIONS_PK};
    use crate::store::attr::s;
    use crate::store::memory::MemoryStore;
    use crate::store::Item;

    const T0: i64 = 1_700_000_000_000;

    fn put(store: &MemoryStore, id: &str) -> Destination {
        let d = Destination::new(
            &did(id),
            "https://x.example/h",
            vec![Pattern::parse("*").unwrap()],
            None,
            T0,
        );
        store.put_item(d.to_item().unwrap());
        d
    }

    fn ids(s: &Snapshot) -> Vec<&str> {
        s.destinations
            .iter()
            .map(|d| d.destination.id.as_str())
            .collect()
    }

    #[tokio::test]
    async fn a_copy_is_kept_for_its_ttl_and_dropped_on_demand() {
        let store = Arc::new(MemoryStore::new());
        put(&store, "a");
        let cache = DestinationCache::new(store.clone(), Duration::from_secs(5));
        assert_eq!(ids(&cache.snapshot(T0).await.unwrap()), ["a"]);
        put(&store, "b");
        let kept = cache.snapshot(T0 + 4_999).await.unwrap();
        assert_eq!(
            (ids(&kept), kept.read_at),
            (vec!["a"], T0),
            "within the ttl"
        );
        assert!(kept.get(&did("a")).is_some() && kept.get(&did("b")).is_none());
        assert_eq!(
            ids(&cache.snapshot(T0 + 5_000).await.unwrap()),
            ["a", "b"],
            "read again at the ttl"
        );
        put(&store, "c");
        assert_eq!(
            cache.snapshot(T0 + 1_000).await.unwrap().destinations.len(),
            3,
            "a copy from the future (the clock moved back) is read again"
        );
        put(&store, "d");
        assert_eq!(
            cache.snapshot(T0 + 1_001).await.unwrap().destinations.len(),
            3
        );
        cache.invalidate();
        assert_eq!(
            cache.snapshot(T0 + 1_001).await.unwrap().destinations.len(),
            4
        );
    }

    #[tokio::test]
    async fn an_unreadable_row_is_skipped_and_no_active_secret_means_no_signer() {
        let store = MemoryStore::new();
        put(&store, "a");
        store.put_item(Item::from([
            ("pk".to_string(), s(DESTINATIONS_PK)),
            ("sk".to_string(), s(destination_sk("broken"))),
            ("url".to_string(), s("https://x.example/h")),
        ]));
        let mut expired = put(&store, "expired");
        expired.secrets = vec![SigningSecret {
            expires_at: Some(T0 + 10),
            ..expired.secrets[0].clone()
        }];
        store.put_item(expired.to_item().unwrap());
        let snapshot = load(&store, T0 + 10).await.unwrap();
        assert_eq!(
            ids(&snapshot),
            ["a", "expired"],
            "the broken row is skipped"
        );
        assert!(snapshot.get(&did("a")).unwrap().signer.is_some());
        assert!(snapshot.get(&did("expired")).unwrap().signer.is_none());
        assert!(load(&store, T0 + 9)
            .await
            .unwrap()
            .get(&did("expired"))
            .unwrap()
            .signer
            .is_some());
    }
}
