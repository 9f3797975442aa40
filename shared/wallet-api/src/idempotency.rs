//! Idempotency keys, as Stripe's API has them: the first request with a key is carried out and
//! its answer stored; the same key with the same request (method, path, canonical JSON body: its
//! [`Fingerprint`]) answers that stored answer again (`Idempotent-Replayed: true`); with another
//! request it is a 422; while the first is still running, a 409.
//!
//! One item per key, under the tenant's wallet partition (keys are scoped per tenant):
//! `pk = WALLET#{tenant}`, `sk = IDEM#{key}`, `kind = idempotency`, with `state` (`in_flight`
//! with `lease_until`; `done` with the answer's `status` and `body`; `abandoned`), the
//! `fingerprint`, and `expires_at` (the table's TTL attribute, seconds).
//!
//! 1. [`Keys::begin`] writes the marker first: a conditional create (or a replace at the version
//!    read of a record that no longer counts: expired, abandoned, or in flight past its lease),
//!    state `in_flight` with a short lease. Losing that race reads again.
//! 2. The action's own transaction replaces the marker, at the version [`Claim`] holds, with the
//!    stored answer ([`Keys::completion`]: for a hold, through the `with` closure of
//!    `Holds::place`, so the key and the hold commit together, or neither). An outcome that wrote
//!    nothing (402, 404, …) is stored alone ([`Keys::complete`]).
//! 3. A 5xx leaves nothing that blocks a retry: [`Keys::abandon`] marks the claim abandoned
//!    (best effort: if even that fails, the lease lapses and a retry takes the key over).
//!
//! A record past its `expires_at` counts as absent even before DynamoDB's TTL deletes it.

use crate::request::IdempotencyKey;
use crate::response::ApiResponse;
use http::StatusCode;
use inbox_core::clock::{Clock, Millis};
use inbox_core::store::attr::{get_n, get_s, n, s};
use inbox_core::store::schema::EXPIRES_AT;
use inbox_core::store::{Applied, Effect, Item, ItemStore, ItemWriter, StoreError};
use sha2::{Digest, Sha256};
use std::time::Duration;
use wallet_ledger::balance::items::wallet_pk;
use wallet_ledger::TenantId;

/// The sort-key prefix of idempotency records (under `WALLET#{tenant}`).
pub const IDEMPOTENCY_PREFIX: &str = "IDEM#";
/// Their `kind`.
pub const KIND_IDEMPOTENCY: &str = "idempotency";
/// How many times [`Keys::begin`] reads again after losing the race for a key.
const BEGIN_TRIES: usize = 3;

/// The SHA-256 (hex) of a request's method, canonical path and canonical JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// Of `route` (`POST /wallets/{tenant}/holds`, canonical) and `body` (canonical JSON).
    pub fn of(route: &str, body: &str) -> Self {
        let digest = Sha256::new()
            .chain_update(route.as_bytes())
            .chain_update(b"\n")
            .chain_update(body.as_bytes())
            .finalize();
        Self(hex::encode(digest))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The state of a stored record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    InFlight { lease_until: Millis },
    Done { status: u16, body: String },
    Abandoned,
}

/// A stored record, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub fingerprint: String,
    pub state: State,
    /// Seconds since the epoch (the TTL attribute).
    pub expires_at: i64,
    pub version: Option<u64>,
}

impl Record {
    fn from_item(item: &Item) -> Option<Self> {
        let state = match get_s(item, "state")? {
            "in_flight" => State::InFlight {
                lease_until: Millis::new(get_n(item, "lease_until")?),
            },
            "done" => State::Done {
                status: u16::try_from(get_n(item, "status")?).ok()?,
                body: get_s(item, "body")?.to_owned(),
            },
            "abandoned" => State::Abandoned,
            _ => return None,
        };
        Some(Self {
            fingerprint: get_s(item, "fingerprint")?.to_owned(),
            state,
            expires_at: get_n(item, EXPIRES_AT)?,
            version: get_n(item, "version").and_then(|v| u64::try_from(v).ok()),
        })
    }
}

/// What a request with a key may do, given the key's record (a pure rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Carry it out: write the marker over the record at this version (`None`: no record).
    Claim { over: Option<u64> },
    /// Answer the stored answer.
    Replay { status: u16, body: String },
    /// The key belongs to another request.
    Reused,
    /// The first request with the key is still running.
    InFlight,
}

/// The rule: a record that is absent, past its `expires_at`, or abandoned does not count; one of
/// another fingerprint is a reuse; a finished one is replayed; one in flight blocks until its
/// lease lapses, then it may be taken over. An unreadable record is taken over like an expired
/// one (it can hold no answer to replay).
pub fn decide(record: Option<&Record>, fingerprint: &Fingerprint, now: Millis) -> Decision {
    let Some(r) = record else {
        return Decision::Claim { over: None };
    };
    if r.expires_at <= now.as_secs() || r.state == State::Abandoned {
        return Decision::Claim { over: r.version };
    }
    if r.fingerprint != fingerprint.as_str() {
        return Decision::Reused;
    }
    match &r.state {
        State::Done { status, body } => Decision::Replay {
            status: *status,
            body: body.clone(),
        },
        State::InFlight { lease_until } if *lease_until > now => Decision::InFlight,
        State::InFlight { .. } | State::Abandoned => Decision::Claim { over: r.version },
    }
}

/// A key claimed for one run of its request: where its record is and at which version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub tenant: TenantId,
    pub key: IdempotencyKey,
    pub fingerprint: Fingerprint,
    /// The marker's version (the completion replaces it at this one).
    pub version: u64,
    pub created_at: Millis,
    pub expires_at: i64,
}

impl Claim {
    fn item(&self, state: &State) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(&self.tenant))),
            ("sk".to_string(), s(record_sk(&self.key))),
            ("kind".to_string(), s(KIND_IDEMPOTENCY)),
            ("tenant".to_string(), s(self.tenant.as_str())),
            ("key".to_string(), s(self.key.as_str())),
            ("fingerprint".to_string(), s(self.fingerprint.as_str())),
            ("created_at".to_string(), n(self.created_at.get())),
            (EXPIRES_AT.to_string(), n(self.expires_at)),
        ]);
        match state {
            State::InFlight { lease_until } => {
                item.insert("state".into(), s("in_flight"));
                item.insert("lease_until".into(), n(lease_until.get()));
            }
            State::Done { status, body } => {
                item.insert("state".into(), s("done"));
                item.insert("status".into(), n(i64::from(*status)));
                item.insert("body".into(), s(body.as_str()));
            }
            State::Abandoned => {
                item.insert("state".into(), s("abandoned"));
            }
        }
        item
    }
}

/// The record's sort key.
pub fn record_sk(key: &IdempotencyKey) -> String {
    format!("{IDEMPOTENCY_PREFIX}{}", key.as_str())
}

/// What [`Keys::begin`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    Run(Claim),
    Replay(ApiResponse),
    Reused,
    InFlight,
}

/// The idempotency records on a table, read against a clock.
#[derive(Debug)]
pub struct Keys<'a, S, C> {
    pub store: &'a S,
    pub clock: &'a C,
    /// How long an answer is kept (and replayed).
    pub retention: Duration,
    /// How long a run holds its key before a retry may take it over.
    pub lease: Duration,
}

impl<S: ItemStore + ItemWriter, C: Clock> Keys<'_, S, C> {
    /// Claims `key` for a run of the request `fingerprint`, or says why not.
    pub async fn begin(
        &self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> Result<Begun, StoreError> {
        let pk = wallet_pk(tenant);
        let sk = record_sk(key);
        for _ in 0..BEGIN_TRIES {
            let now = self.clock.now();
            let item = self.store.get_item(&pk, &sk).await?;
            let record = item.as_ref().map(|i| {
                Record::from_item(i).unwrap_or(Record {
                    fingerprint: String::new(),
                    state: State::Abandoned,
                    expires_at: 0,
                    version: get_n(i, "version").and_then(|v| u64::try_from(v).ok()),
                })
            });
            let over = match decide(record.as_ref(), fingerprint, now) {
                Decision::Claim { over } => over,
                Decision::Replay { status, body } => {
                    let status =
                        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                    return Ok(Begun::Replay(ApiResponse {
                        status,
                        headers: vec![(crate::response::REPLAYED_HEADER, "true".into())],
                        body,
                    }));
                }
                Decision::Reused => return Ok(Begun::Reused),
                Decision::InFlight => return Ok(Begun::InFlight),
            };
            let claim = Claim {
                tenant: tenant.clone(),
                key: key.clone(),
                fingerprint: fingerprint.clone(),
                version: over.map_or(0, |v| v + 1),
                created_at: now,
                expires_at: now.plus(self.retention).as_secs(),
            };
            let marker = Effect::Replace {
                item: claim.item(&State::InFlight {
                    lease_until: now.plus(self.lease),
                }),
                expected_version: over,
            };
            match self.store.commit(vec![marker]).await? {
                Applied::Done => return Ok(Begun::Run(claim)),
                // Another request with the key wrote first: read what it wrote.
                Applied::EffectConflict | Applied::MessageConflict => continue,
            }
        }
        Ok(Begun::InFlight)
    }

    /// The write that stores `answer` as the claim's outcome (for the action's own transaction).
    pub fn completion(&self, claim: &Claim, answer: &ApiResponse) -> Effect {
        Effect::Replace {
            item: claim.item(&State::Done {
                status: answer.status.as_u16(),
                body: answer.body.clone(),
            }),
            expected_version: Some(claim.version),
        }
    }

    /// Stores `answer` alone (an outcome whose action wrote nothing). `false`: the claim was
    /// taken over meanwhile (its lease lapsed), and the other run's answer stands.
    pub async fn complete(&self, claim: &Claim, answer: &ApiResponse) -> Result<bool, StoreError> {
        let applied = self
            .store
            .commit(vec![self.completion(claim, answer)])
            .await?;
        Ok(applied == Applied::Done)
    }

    /// Gives the key back (a 5xx): the next request with it runs afresh.
    pub async fn abandon(&self, claim: &Claim) -> Result<(), StoreError> {
        let release = Effect::Replace {
            item: claim.item(&State::Abandoned),
            expected_version: Some(claim.version),
        };
        self.store.commit(vec![release]).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests;
