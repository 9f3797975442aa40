//! A verified delivery identified and stored once: a new event is one conditional write; a
//! repeat keeps the original and is journaled (`journal.rs`).

use super::{Acknowledgement, IngestError, Ingestor, Outcome};
use crate::clock::Clock;
use crate::domain::MessageKey;
use crate::identity;
use crate::sources::Source;
use crate::store::{Inbox, NewMessage, PutOutcome};
use http::HeaderMap;

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    /// Identifies and stores a verified delivery (once), journaling it if it is a repeat. `batch`:
    /// the delivery is one event of a batch (its body the event's bytes), and where it was.
    pub(super) async fn store_verified(
        &self,
        source: &Source,
        headers: &HeaderMap,
        body: Vec<u8>,
        now_ms: i64,
        batch: Option<crate::batch::BatchPart>,
    ) -> Result<Acknowledgement, IngestError> {
        // The body is hashed only if a rule needs it (an unsigned or unreadable id): the
        // duplicate check compares with the stored original instead (see `Original`).
        let hash = identity::BodyHash::new(&body);
        let identity = identity::identify_lazy(
            &source.event_id,
            source.id_signed,
            source.event_type.as_ref(),
            headers,
            &hash,
        );
        let body_digest = hash.computed();
        if let Some(why) = &identity.unidentified {
            tracing::warn!(
                source = %source.name,
                event_id = %identity.event_id,
                error = why.code(),
                reason = %why,
                "a correctly signed event could not be identified: stored with the type `unknown`"
            );
        }
        let message = NewMessage {
            key: MessageKey::new(source.name.clone(), identity.event_id),
            event_type: identity.event_type,
            received_at_ms: now_ms,
            body,
            body_digest,
            headers: kept_headers(source, headers),
            provider_id: identity.provider_id,
            unidentified: identity.unidentified.map(|e| e.to_string()),
            batch,
        };
        match self.store.put_if_absent(&message).await? {
            PutOutcome::Inserted => Ok(Acknowledgement {
                outcome: Outcome::Accepted,
                key: message.key,
                event_type: message.event_type,
                body_differs: false,
                repeated: None,
            }),
            PutOutcome::AlreadyExists { original } => {
                let body_differs = original.differs_from(&message.body);
                if body_differs {
                    tracing::warn!(
                        source = %message.key.source,
                        event_id = %message.key.event_id,
                        "repeated delivery with a different body; the original is kept, the new body is journaled"
                    );
                }
                let key = message.key.clone();
                let event_type = message.event_type.clone();
                let repeated = self.journal_repeat(message, body_differs).await?;
                Ok(Acknowledgement {
                    outcome: Outcome::Duplicate,
                    key,
                    event_type,
                    body_differs,
                    repeated,
                })
            }
        }
    }
}

/// The headers kept with a message (only those the source needs to re-verify and re-identify).
fn kept_headers(source: &Source, headers: &HeaderMap) -> Vec<(String, String)> {
    source
        .kept_headers()
        .iter()
        .filter_map(|name| {
            // The values joined with ", " (most headers have one: no list is built).
            let mut values = headers.get_all(name).iter().filter_map(|v| v.to_str().ok());
            let mut joined = values.next()?.to_owned();
            for value in values {
                joined.push_str(", ");
                joined.push_str(value);
            }
            (!joined.is_empty()).then(|| (name.as_str().to_owned(), joined))
        })
        .collect()
}
