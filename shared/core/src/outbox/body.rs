//! The body a delivery sends, read once and shared ([`SharedBodies`]): the deliveries of one event
//! that run at once (a batch fanning one event out to ten destinations) wait on ONE read of the
//! store (one S3 `GetObject` for a large body) and send the same buffer, a [`Bytes`] that is never
//! copied (the HTTP client sends it as it is); it is freed when the last of them is done, so a
//! worker holds at most one copy of each event it is sending, whatever its fan-out.
//!
//! A batch reads its events' bodies ahead ([`SharedBodies::read_ahead`]): the inline ones in one
//! request for the whole batch (DynamoDB's `BatchGetItem`), held until the batch is done, so each
//! delivery finds its body already read; a body kept in S3 is still read by its first delivery
//! (a batch never holds more than one large body per delivery in flight).
//!
//! A body that cannot be read is a refusal with the reason, not an infrastructure error: the
//! message is gone (purged, expired), its body in S3 expired or was deleted, or its stored frame is
//! damaged. Reading again would give the same answer, and a delivery that errs after its claim
//! would otherwise be claimed again every minute, forever. A store that is unreachable is still an
//! infrastructure error (the record is delivered again).

use super::cache::Loaded;
use super::sign::Signer;
use super::worker::{Deliverer, DeliveryPorts};
use crate::domain::MessageKey;
use crate::process::InfraError;
use crate::store::{MessageStore, StoreError};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::OnceCell;

/// A body being sent; the buffer lives while any delivery of its event holds one.
#[derive(Debug, Clone)]
pub struct Body(Arc<OnceCell<Option<Bytes>>>);

impl Body {
    /// The raw bytes (empty only for an empty body).
    pub fn bytes(&self) -> &Bytes {
        static EMPTY: Bytes = Bytes::new();
        self.0.get().and_then(Option::as_ref).unwrap_or(&EMPTY)
    }
}

/// The bodies being read or sent by one worker, by message.
#[derive(Debug, Default)]
pub struct SharedBodies {
    reads: Mutex<HashMap<MessageKey, Weak<OnceCell<Option<Bytes>>>>>,
}

/// Why a body cannot be sent (the delivery is refused with it): `None` from the store.
pub const GONE: &str = "the event is no longer in the inbox (purged or expired)";

impl SharedBodies {
    /// The body of `key`: shared with the deliveries of the same event in flight, else read from
    /// `store`. `Ok(Err(why))`: it cannot be sent, for good.
    pub async fn read<S: MessageStore>(
        &self,
        store: &S,
        key: &MessageKey,
    ) -> Result<Result<Body, String>, InfraError> {
        let cell = {
            let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
            reads.retain(|_, w| w.strong_count() > 0);
            match reads.get(key).and_then(Weak::upgrade) {
                Some(cell) => cell,
                None => {
                    let cell = Arc::new(OnceCell::new());
                    reads.insert(key.clone(), Arc::downgrade(&cell));
                    cell
                }
            }
        };
        // One reader at a time per event; a failed read is not kept (the next waiter tries).
        match cell.get_or_try_init(|| store.read_body(key)).await {
            Ok(Some(_)) => Ok(Ok(Body(cell))),
            Ok(None) => Ok(Err(GONE.to_owned())),
            Err(e @ StoreError::Unreadable(_)) => Ok(Err(format!(
                "the event's body cannot be read: {}",
                e.chain()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads the bodies of `keys` ahead, as far as the store can in one go
    /// ([`MessageStore::read_bodies_ahead`]), for the deliveries about to run: what is returned
    /// holds them (drop it when the batch is done). Never an error: what was not read ahead (the
    /// store failed, a body in S3) is read by its delivery as before.
    pub async fn read_ahead<S: MessageStore>(&self, store: &S, keys: &[MessageKey]) -> Vec<Body> {
        let mut held = Vec::new();
        let mut wanted = Vec::new();
        {
            let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
            reads.retain(|_, w| w.strong_count() > 0);
            for key in keys {
                if reads.get(key).and_then(Weak::upgrade).is_some()
                    || wanted.iter().any(|(k, _)| k == key)
                {
                    continue;
                }
                let cell = Arc::new(OnceCell::new());
                reads.insert(key.clone(), Arc::downgrade(&cell));
                wanted.push((key.clone(), cell));
            }
        }
        if wanted.is_empty() {
            return held;
        }
        let asked: Vec<MessageKey> = wanted.iter().map(|(k, _)| k.clone()).collect();
        match store.read_bodies_ahead(&asked).await {
            Ok(answers) => {
                for ((_, cell), answer) in wanted.into_iter().zip(answers) {
                    if let Some(body) = answer {
                        let _ = cell.set(body);
                        held.push(Body(cell));
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e.chain(), "bodies not read ahead; each delivery reads its own")
            }
        }
        held
    }

    /// How many events' bodies are held.
    #[cfg(test)]
    fn held(&self) -> usize {
        let reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        reads.values().filter(|w| w.strong_count() > 0).count()
    }
}

impl<P: DeliveryPorts> Deliverer<P> {
    /// What a claimed delivery sends, and who signs it: `Ok(Err(why))` when it cannot be sent
    /// (the body cannot be read, the destination has no active secret).
    pub(super) async fn sendable<'l>(
        &self,
        key: &MessageKey,
        loaded: &'l Loaded,
    ) -> Result<Result<(Body, &'l Signer), String>, InfraError> {
        let body = match self.bodies.read(&self.store, key).await? {
            Ok(body) => body,
            Err(why) => return Ok(Err(why)),
        };
        Ok(match &loaded.signer {
            Some(signer) => Ok((body, signer)),
            None => Err("the destination has no active signing secret".into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventId, SourceName};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(id: &str) -> MessageKey {
        MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(id).unwrap(),
        )
    }

    /// Counts body reads; answers a 1 KiB body, none, or an unreadable one by event id.
    #[derive(Default)]
    struct Reads(AtomicUsize);

    impl MessageStore for Reads {
        async fn get(
            &self,
            _: &MessageKey,
        ) -> Result<Option<crate::message::StoredMessage>, StoreError> {
            unreachable!("bodies are read with read_body")
        }
        async fn read_body(&self, key: &MessageKey) -> Result<Option<Bytes>, StoreError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            match key.event_id.as_str() {
                "evt_gone" => Ok(None),
                "evt_damaged" => Err(StoreError::Unreadable("not a zstd frame".into())),
                "evt_down" => Err(StoreError::Unavailable("connection refused".into())),
                _ => Ok(Some(Bytes::from(vec![b'x'; 1024]))),
            }
        }
        async fn transition(
            &self,
            _: &MessageKey,
            _: u64,
            _: &crate::store::Transition,
            _: Vec<crate::store::Effect>,
        ) -> Result<crate::store::Applied, StoreError> {
            unreachable!()
        }
        async fn due(
            &self,
            _: &str,
            _: i64,
            _: usize,
        ) -> Result<Vec<crate::store::DueMessage>, StoreError> {
            unreachable!()
        }
        async fn list(
            &self,
            _: &crate::store::ListFilter,
            _: usize,
        ) -> Result<Vec<crate::message::StoredMessage>, StoreError> {
            unreachable!()
        }
        async fn deliveries(
            &self,
            _: &MessageKey,
        ) -> Result<Vec<crate::store::RepeatRecord>, StoreError> {
            unreachable!()
        }
        async fn repeat_count(&self, _: &MessageKey) -> Result<u64, StoreError> {
            unreachable!()
        }
        async fn purge(&self, _: &MessageKey, _: u64) -> Result<crate::store::Applied, StoreError> {
            unreachable!()
        }
    }

    #[tokio::test]
    async fn ten_deliveries_of_one_event_read_its_body_once_and_share_one_buffer() {
        let store = Reads::default();
        let shared = SharedBodies::default();
        let k = key("evt_big");
        let bodies: Vec<Body> =
            futures_util::future::join_all((0..10).map(|_| shared.read(&store, &k)))
                .await
                .into_iter()
                .map(|r| r.unwrap().unwrap())
                .collect();
        assert_eq!(store.0.load(Ordering::SeqCst), 1, "one read for ten");
        let first = bodies[0].bytes().as_ptr();
        assert!(
            bodies.iter().all(|b| b.bytes().as_ptr() == first),
            "one buffer"
        );
        assert_eq!(bodies[0].bytes().len(), 1024);
        assert_eq!(shared.held(), 1);
        drop(bodies);
        assert_eq!(shared.held(), 0, "freed with the last delivery");
        // Read again once nobody holds it (a later batch).
        shared.read(&store, &k).await.unwrap().unwrap();
        assert_eq!(store.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_body_that_is_gone_or_damaged_is_a_reason_and_an_outage_an_error() {
        let store = Reads::default();
        let shared = SharedBodies::default();
        let gone = shared.read(&store, &key("evt_gone")).await.unwrap();
        assert_eq!(gone.unwrap_err(), GONE);
        let damaged = shared.read(&store, &key("evt_damaged")).await.unwrap();
        let why = damaged.unwrap_err();
        assert!(
            why.contains("cannot be read") && why.contains("zstd"),
            "{why}"
        );
        let down = shared.read(&store, &key("evt_down")).await;
        assert!(matches!(
            down,
            Err(InfraError::Store(StoreError::Unavailable(_)))
        ));
        // A failed read is not kept: the next one asks the store again.
        let _ = shared.read(&store, &key("evt_down")).await;
        assert_eq!(store.0.load(Ordering::SeqCst), 4);
    }
}
