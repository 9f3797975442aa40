//! A verified delivery identified and stored once: a new event is one conditional write; a
//! repeat keeps the original and is journaled (`journal.rs`). An event fetched from its
//! provider's own API ([`Ingestor::store_fetched`], e.g. Stripe's events by `inboxctl stripe
//! catch-up`) goes through the same identity and the same conditional write, its [`Origin`] kept
//! in place of a signature.

use super::{Acknowledgement, IngestError, Ingestor, Outcome};
use crate::clock::Clock;
use crate::domain::MessageKey;
use crate::identity;
use crate::sources::Source;
use crate::store::{Inbox, NewMessage, PutOutcome};
use http::HeaderMap;

/// The header an event stored without a signature keeps instead: where it came from.
pub const ORIGIN_HEADER: &str = "inbox-origin";

/// Where an event stored without a signature came from: fetched from its provider's API by
/// `how` (`catch-up`), run by `operator`, at `at_ms`. Kept with the message as its
/// [`ORIGIN_HEADER`] (`catch-up; operator=alice; at=2026-12-07T14:20:00Z`), which `inboxctl show`
/// and the console show with the other headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub how: &'static str,
    pub operator: String,
    pub at_ms: i64,
}

impl Origin {
    /// The header's value: the operator's name cut to 64 printable characters without `;` or
    /// `,` (it is a header value and a list item).
    pub fn header_value(&self) -> String {
        let operator: String = self
            .operator
            .chars()
            .filter(|c| c.is_ascii_graphic() && *c != ';' && *c != ',')
            .take(64)
            .collect();
        let at = jiff::Timestamp::from_second(self.at_ms.div_euclid(1000))
            .map(|t| t.to_string())
            .unwrap_or_else(|_| self.at_ms.to_string());
        format!("{}; operator={operator}; at={at}", self.how)
    }
}

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    /// Stores an event fetched from `source`'s provider's own API (not posted to ingest, so not
    /// signed) once, by the same identity and the same conditional write as a webhook: a new
    /// event is `Accepted` (and reaches the processor as any other, by the table's stream); one
    /// already received (by webhook or an earlier fetch) is a `Duplicate` that writes nothing (it
    /// is no delivery: not journaled, not counted). `origin` is kept in place of a signature.
    /// Body limits as ingest's; the caller vouches for the body (it asked the provider for it).
    pub async fn store_fetched(
        &self,
        source: &str,
        body: Vec<u8>,
        origin: &Origin,
    ) -> Result<Acknowledgement, IngestError> {
        let sources = self.sources();
        let source = super::verify::source_of(&sources, source)?;
        if body.len() > self.max_body_bytes {
            return Err(IngestError::TooLarge {
                len: body.len(),
                limit: self.max_body_bytes,
            });
        }
        let mut message = identified(source, &HeaderMap::new(), body, origin.at_ms, None);
        message
            .headers
            .push((ORIGIN_HEADER.to_owned(), origin.header_value()));
        let outcome = match self.store.put_if_absent(&message).await? {
            PutOutcome::Inserted => Outcome::Accepted,
            PutOutcome::AlreadyExists { .. } => Outcome::Duplicate,
        };
        Ok(Acknowledgement {
            outcome,
            key: message.key,
            event_type: message.event_type,
            body_differs: false,
            repeated: None,
        })
    }

    /// The key an event fetched from `source`'s provider would be stored under by
    /// [`Self::store_fetched`], nothing read or written (what a dry run looks up).
    pub fn fetched_key(&self, source: &str, body: &[u8]) -> Result<MessageKey, IngestError> {
        let sources = self.sources();
        let source = super::verify::source_of(&sources, source)?;
        Ok(identified(source, &HeaderMap::new(), body.to_vec(), 0, None).key)
    }

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
        let message = identified(source, headers, body, now_ms, batch);
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

/// The message a delivery (or a fetched event) of `source` is stored as: its key and type by the
/// source's identity rules.
fn identified(
    source: &Source,
    headers: &HeaderMap,
    body: Vec<u8>,
    now_ms: i64,
    batch: Option<crate::batch::BatchPart>,
) -> NewMessage {
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
    NewMessage {
        key: MessageKey::new(source.name.clone(), identity.event_id),
        event_type: identity.event_type,
        received_at_ms: now_ms,
        body,
        body_digest,
        headers: kept_headers(source, headers),
        provider_id: identity.provider_id,
        unidentified: identity.unidentified.map(|e| e.to_string()),
        batch,
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
