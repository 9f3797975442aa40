//! The destinations, read from the table and kept for a short while ([`DestinationCache`]): the
//! process function reads them at most once per `DESTINATION_CACHE_MS` to fan events out, the
//! deliver function to send. A change made by `inboxctl dest …` therefore reaches the functions
//! within that time (5 s by default). A copy can be older than the delivery it is asked about (the
//! process instance that fanned the event out read a newer one): so when the deliver function's
//! copy does not know a delivery's destination, or says it is disabled, [`DestinationCache::lookup`]
//! reads the table again (one consistent read, shared by the lookups waiting on it) before that
//! answer stands; a re-read that fails leaves the answer unconfirmed (the delivery is deferred,
//! not failed).

use super::destination::{Destination, DestinationId, DestinationState};
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
    /// Held while re-reading: lookups that find the same stale copy wait for one read.
    rereading: tokio::sync::Mutex<()>,
}

/// What [`DestinationCache::lookup`] knows of a destination.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// As read (disabled included: a copy said so and a read made for this lookup confirmed it).
    Known(Arc<Loaded>),
    /// Not in the table (removed), as a read made for this lookup says.
    Removed,
    /// The copy did not know it (or said disabled) and the table could not be read again.
    Unconfirmed,
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
            rereading: tokio::sync::Mutex::new(()),
        }
    }

    /// The destinations, read again when the copy is older than the ttl (or from the future).
    pub async fn snapshot(&self, now: i64) -> Result<Arc<Snapshot>, StoreError> {
        match self.copy(now) {
            Some(s) => Ok(s),
            None => self.read(now).await,
        }
    }

    /// One destination, for a delivery: what the copy says, unless the copy (not read for this
    /// lookup) does not know it or says it is disabled: then the table is read again once, and
    /// that read's answer stands. `Err` only when the first read fails.
    pub async fn lookup(&self, id: &DestinationId, now: i64) -> Result<Lookup, StoreError> {
        let (copy, read_now) = match self.copy(now) {
            Some(s) => (s, false),
            None => (self.read(now).await?, true),
        };
        let doubtful = |s: &Snapshot| {
            s.get(id)
                .is_none_or(|l| l.destination.state == DestinationState::Disabled)
        };
        let snapshot = if read_now || !doubtful(&copy) {
            copy
        } else {
            // Unless another lookup read the table since this copy was handed out.
            let _one = self.rereading.lock().await;
            let again = match self.cached() {
                Some(current) if !Arc::ptr_eq(&current, &copy) => Ok(current),
                _ => self.read(now).await,
            };
            match again {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(destination = %id, error = %e.chain(), "the destinations could not be read again; the delivery waits");
                    return Ok(Lookup::Unconfirmed);
                }
            }
        };
        Ok(snapshot
            .get(id)
            .map_or(Lookup::Removed, |l| Lookup::Known(l.clone())))
    }

    /// The copy, if within its ttl (and not from the future).
    fn copy(&self, now: i64) -> Option<Arc<Snapshot>> {
        let ttl = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        self.cached()
            .filter(|s| now >= s.read_at && now - s.read_at < ttl)
    }

    /// Reads the table and keeps the result (boxed: the SDK's futures are deep, and every
    /// delivery's future holds this one).
    async fn read(&self, now: i64) -> Result<Arc<Snapshot>, StoreError> {
        let fresh = Arc::new(Box::pin(load(&self.store, now)).await?);
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
    async fn a_lookup_reads_again_once_when_its_copy_does_not_know_the_destination() {
        let store = Arc::new(MemoryStore::new());
        put(&store, "a");
        let cache = DestinationCache::new(store.clone(), Duration::from_secs(5));
        assert!(
            matches!(cache.lookup(&did("b"), T0).await.unwrap(), Lookup::Removed),
            "read for this lookup: its answer stands"
        );
        put(&store, "b");
        let Lookup::Known(b) = cache.lookup(&did("b"), T0 + 1).await.unwrap() else {
            panic!("the copy did not know b: read again");
        };
        assert_eq!(b.destination.id, did("b"));
        assert_eq!(
            cache.snapshot(T0 + 2).await.unwrap().read_at,
            T0 + 1,
            "the read again is the new copy"
        );
        let mut disabled = put(&store, "c");
        disabled.state = DestinationState::Disabled;
        store.put_item(disabled.to_item().unwrap());
        assert!(matches!(
            cache.lookup(&did("c"), T0 + 3).await.unwrap(),
            Lookup::Known(c) if c.destination.state == DestinationState::Disabled
        ));
        // The copy says `c` is disabled; the table cannot be read again: not confirmed.
        store.set_down(true);
        assert!(matches!(
            cache.lookup(&did("c"), T0 + 4).await.unwrap(),
            Lookup::Unconfirmed
        ));
        assert!(matches!(
            cache.lookup(&did("nope"), T0 + 4).await.unwrap(),
            Lookup::Unconfirmed
        ));
        assert!(
            matches!(
                cache.lookup(&did("a"), T0 + 4).await.unwrap(),
                Lookup::Known(_)
            ),
            "what the copy knows active needs no read"
        );
        assert!(
            cache.lookup(&did("a"), T0 + 10_000).await.is_err(),
            "an expired copy is read"
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
