//! [`WalletApi`]: one request in, one answer out. Routes it ([`crate::request::Route`]), parses its
//! inputs, runs POSTs under their idempotency key ([`crate::idempotency`]), and carries out the
//! action: a hold through [`Holds::place`] (the key's answer in the hold's own transaction), its
//! release through [`Holds::release`], the wallet as read, a hosted checkout through the
//! provider's [`Checkout`]. Every failure is an [`ApiError`] answer; internals are logged with
//! their cause chain and answered opaquely.

use crate::config::ApiConfig;
use crate::error::{outcome, ApiError};
use crate::idempotency::{Begun, Claim, Fingerprint, Keys};
use crate::request::{
    body_object, canonical_json, release_body, ApiRequest, CheckoutBody, HoldBody, IdempotencyKey,
    Route,
};
use crate::response::ApiResponse;
use crate::response::{held_answer, released_answer};
use http::StatusCode;
use inbox_core::clock::Clock;
use inbox_core::metrics::{EmfWriter, MetricSink};
use inbox_core::store::attr::get_bool;
use inbox_core::store::{ItemStore, ItemWriter};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;
use wallet_ledger::email::holds::{HoldOutcome, HoldRequest, Holds, ReleaseOutcome};
use wallet_ledger::payments::checkout::Checkout;
use wallet_ledger::{month_of, Ledger, LedgerError, TenantId, WalletViews};

/// The wallet API over a table `S`, a provider's checkout `K` and a clock `C`.
pub struct WalletApi<S, K, C> {
    pub store: S,
    pub checkout: K,
    pub clock: C,
    pub config: ApiConfig,
    /// Where the holds' metrics go (`HoldBusy`, `HoldConflicts`, their notices').
    pub metrics: Arc<dyn MetricSink>,
    /// The instance's view of sharded wallets (`WALLET_VIEW_MS`; none unless
    /// [`WalletApi::with_views`]).
    pub views: WalletViews,
}

impl<S, K, C> std::fmt::Debug for WalletApi<S, K, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalletApi")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<S, K, C> WalletApi<S, K, C>
where
    S: ItemStore + ItemWriter,
    K: Checkout,
    C: Clock + Clone + 'static,
{
    /// The API with its metrics as EMF on stdout (the deployed functions' writer).
    pub fn new(store: S, checkout: K, clock: C, config: ApiConfig) -> Self {
        Self {
            store,
            checkout,
            clock,
            config,
            metrics: Arc::new(EmfWriter::stdout()),
            views: WalletViews::disabled(),
        }
    }

    /// The same placing a sharded wallet's holds on `views` (each reads its own shard alone).
    pub fn with_views(mut self, views: WalletViews) -> Self {
        self.views = views;
        self
    }

    /// The same with its metrics going to `sink`.
    pub fn with_metrics(mut self, sink: Arc<dyn MetricSink>) -> Self {
        self.metrics = sink;
        self
    }

    fn holds(&self) -> Holds<'_, S> {
        Holds::new(&self.store)
            .with_clock(Arc::new(self.clock.clone()))
            .with_views(self.views.clone())
            .with_expires_in(self.config.hold_expires_in)
    }

    /// Emits what `holds` measured (after its commit).
    fn emit(&self, holds: &Holds<'_, S>) {
        let metrics = holds.take_metrics();
        if !metrics.is_empty() {
            self.metrics.emit(self.clock.now_millis(), &metrics);
        }
    }

    fn keys(&self) -> Keys<'_, S, C> {
        Keys {
            store: &self.store,
            clock: &self.clock,
            retention: self.config.idempotency_retention,
            lease: self.config.lease,
        }
    }

    /// Answers one request, logging one line (route, tenant, status, replayed, latency; never
    /// the body), and the cause chain of an internal failure.
    pub async fn handle(&self, req: &ApiRequest<'_>) -> ApiResponse {
        let started = Instant::now();
        let route = Route::of(req.method, req.path);
        let (name, tenant) = match &route {
            Ok(r) => (r.name(), r.tenant().as_str().to_owned()),
            Err(_) => ("", String::new()),
        };
        let answer = match route {
            Ok(route) => self.route(&route, req).await,
            Err(e) => Err(e),
        };
        let latency_ms = started.elapsed().as_secs_f64() * 1e3;
        match answer {
            Ok(r) => {
                tracing::info!(
                    route = name,
                    tenant,
                    status = r.status.as_u16(),
                    replayed = r.header(crate::response::REPLAYED_HEADER).is_some(),
                    latency_ms,
                    "wallet api request"
                );
                r
            }
            Err(e) => {
                let status = e.status().as_u16();
                if e.is_internal() {
                    tracing::error!(route = name, tenant, error = e.code(), status, latency_ms, cause = %inbox_core::error::one_line(&e), "wallet api request failed");
                } else {
                    tracing::info!(
                        route = name,
                        tenant,
                        error = e.code(),
                        status,
                        latency_ms,
                        "wallet api request refused"
                    );
                }
                e.response()
            }
        }
    }

    async fn route(&self, route: &Route, req: &ApiRequest<'_>) -> Result<ApiResponse, ApiError> {
        if let Route::Wallet(tenant) = route {
            return self.wallet(tenant).await;
        }
        let key = IdempotencyKey::of(req.headers)?;
        let body = body_object(req)?;
        // Every input parsed before the key is claimed: a bad request stores nothing, so the
        // same key with the request corrected is carried out.
        let action = match route {
            Route::Holds(_) => Action::Hold(HoldBody::parse(&body)?),
            Route::Release(_, hold_id) => {
                release_body(&body)?;
                Action::Release(hold_id.clone())
            }
            Route::CheckoutSessions(_) => Action::Checkout(CheckoutBody::parse(&body)?),
            Route::Wallet(tenant) => return self.wallet(tenant).await,
        };
        let tenant = route.tenant();
        let fingerprint =
            Fingerprint::of(&route.canonical(), &canonical_json(&Value::Object(body)));
        let keys = self.keys();
        let claim = match keys
            .begin(tenant, &key, &fingerprint)
            .await
            .map_err(ApiError::store)?
        {
            Begun::Run(claim) => claim,
            Begun::Replay(answer) => return Ok(answer),
            Begun::Reused => return Err(ApiError::KeyReused),
            Begun::InFlight => return Err(ApiError::InFlight),
        };
        let result = match action {
            Action::Hold(body) => self.hold(&claim, body).await,
            Action::Release(hold_id) => self.release(&claim, &hold_id).await,
            Action::Checkout(body) => self.create_checkout(&claim, body).await,
        };
        match result {
            Ok(Ran::Stored(answer)) => Ok(answer),
            Ok(Ran::Unstored(answer)) => {
                // The action wrote nothing (402, …) or nothing of ours (the provider's session):
                // the answer is stored alone. Not stored (`false`): the key was taken over
                // meanwhile; this answer still says what happened.
                keys.complete(&claim, &answer)
                    .await
                    .map_err(ApiError::store)?;
                Ok(answer)
            }
            Err(e) => {
                if e.is_internal() {
                    if let Err(abandon) = keys.abandon(&claim).await {
                        tracing::warn!(cause = %inbox_core::error::one_line(&abandon), "idempotency key not given back; it frees itself when its lease lapses");
                    }
                    return Err(e);
                }
                // A refusal that is the action's outcome (404 no wallet): stored like a success.
                let answer = e.response();
                keys.complete(&claim, &answer)
                    .await
                    .map_err(ApiError::store)?;
                Ok(answer)
            }
        }
    }

    /// `GET /wallets/{tenant}`.
    async fn wallet(&self, tenant: &TenantId) -> Result<ApiResponse, ApiError> {
        // Every shard's figures summed (K reads for a wallet of K shards).
        let (wallet, item) = Ledger::new(&self.store)
            .wallet_and_item(tenant)
            .await
            .map_err(|e| match e {
                LedgerError::Store(e) => ApiError::store(e),
                LedgerError::Unreadable(reason) => ApiError::Internal(reason.into()),
            })?
            .ok_or_else(|| ApiError::NoWallet(tenant.as_str().to_owned()))?;
        let available = wallet
            .available()
            .map_err(|e| ApiError::Internal(Box::new(e)))?;
        // overdrawn, review and low (it cannot afford one more send at its price) always; any
        // other flag the wallet item carries as well.
        let mut flags = Map::new();
        flags.insert("overdrawn".into(), json!(wallet.overdrawn));
        flags.insert("review".into(), json!(wallet.review));
        flags.insert("low".into(), json!(wallet.low));
        let mut others: Vec<&String> = item.keys().filter(|k| !flags.contains_key(*k)).collect();
        others.sort();
        for k in others {
            if let Some(b) = get_bool(&item, k) {
                flags.insert(k.clone(), json!(b));
            }
        }
        let month = month_of(self.clock.now_millis());
        Ok(ApiResponse::json(
            StatusCode::OK,
            &json!({
                "tenant": tenant,
                "currency": wallet.currency.as_str(),
                "balance": wallet.balance.minor(),
                "held": wallet.held.minor(),
                "available": available.minor(),
                "floor": wallet.floor.minor(),
                "price": wallet.message_price.minor(),
                "review_threshold": wallet.review_threshold.map(|t| t.minor()),
                "flags": flags,
                "month_debits": {
                    "month": month.replace('_', "-"),
                    "amount": wallet.debits_in(&month).minor(),
                },
            }),
        ))
    }

    /// `POST /wallets/{tenant}/holds`.
    async fn hold(&self, claim: &Claim, body: HoldBody) -> Result<Ran, ApiError> {
        let request = HoldRequest {
            tenant: claim.tenant.clone(),
            message_id: body.message_id,
            amount: body.amount,
            hold_id: format!("hold_{}", uuid::Uuid::new_v4().simple()),
            expires_in: body.expires_in,
        };
        let keys = self.keys();
        let holds = self.holds();
        let placed = holds
            .place(&request, |held| {
                vec![keys.completion(claim, &held_answer(held))]
            })
            .await
            .map_err(ledger);
        self.emit(&holds);
        let placed = placed?;
        Ok(match placed {
            HoldOutcome::Held(held) => Ran::Stored(held_answer(&held)),
            HoldOutcome::InsufficientFunds {
                available,
                floor,
                amount,
            } => Ran::Unstored(outcome(
                StatusCode::PAYMENT_REQUIRED,
                "insufficient_funds",
                &format!("holding {amount} would take the available {available} below the wallet's floor of {floor}"),
                json!({"available": available.minor(), "floor": floor.minor(), "amount": amount.minor(), "currency": amount.currency().as_str()}),
            )),
            HoldOutcome::NoWallet => return Err(ApiError::NoWallet(claim.tenant.as_str().to_owned())),
            HoldOutcome::AlreadyExists { hold_id, state } => Ran::Unstored(outcome(
                StatusCode::CONFLICT,
                "message_already_held",
                &format!("message {:?} already has a hold or a row (state {}); its hold is not placed twice", request.message_id, state_name(&state)),
                json!({"message_id": request.message_id, "hold_id": hold_id, "state": state_name(&state)}),
            )),
            HoldOutcome::Busy => return Err(ApiError::Busy),
        })
    }

    /// `POST /wallets/{tenant}/holds/{hold_id}/release`.
    async fn release(&self, claim: &Claim, hold_id: &str) -> Result<Ran, ApiError> {
        let keys = self.keys();
        let holds = self.holds();
        let placed = holds
            .release(&claim.tenant, hold_id, |released| {
                vec![keys.completion(claim, &released_answer(released))]
            })
            .await
            .map_err(ledger);
        self.emit(&holds);
        let placed = placed?;
        Ok(match placed {
            ReleaseOutcome::Released(r) => Ran::Stored(released_answer(&r)),
            ReleaseOutcome::NotFound => Ran::Unstored(outcome(
                StatusCode::NOT_FOUND,
                "hold_not_found",
                &format!(
                    "no hold {hold_id:?} in the wallet of tenant {:?}",
                    claim.tenant.as_str()
                ),
                json!({"hold_id": hold_id}),
            )),
            ReleaseOutcome::Settled { state } => Ran::Unstored(outcome(
                StatusCode::CONFLICT,
                "hold_settled",
                &format!(
                    "hold {hold_id:?} is settled already (state {}); nothing was released",
                    state_name(&state)
                ),
                json!({"hold_id": hold_id, "state": state_name(&state)}),
            )),
            ReleaseOutcome::NoWallet => {
                return Err(ApiError::NoWallet(claim.tenant.as_str().to_owned()))
            }
            ReleaseOutcome::Busy => return Err(ApiError::Busy),
        })
    }
}

mod checkout;

/// What a POST asks for, parsed.
enum Action {
    Hold(HoldBody),
    Release(String),
    Checkout(CheckoutBody),
}

/// What an action came to: its answer stored with its own write, or still to be stored.
enum Ran {
    Stored(ApiResponse),
    Unstored(ApiResponse),
}

fn ledger(e: LedgerError) -> ApiError {
    match e {
        LedgerError::Store(e) => ApiError::store(e),
        other => ApiError::Internal(Box::new(other)),
    }
}

fn state_name(state: &wallet_ledger::balance::rules::EmailState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
