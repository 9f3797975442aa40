//! [`StripePayments`]: the wallet's [`Provider`] on Stripe (what the ledger is reconciled
//! against, [`wallet_ledger::reconcile::provider`]), over the crate's call loop (the account's
//! shared bucket, retries; a `GET` is always safe to repeat).
//!
//! As Stripe documents them:
//!
//! - "List all PaymentIntents" (https://docs.stripe.com/api/payment_intents/list):
//!   `GET /v1/payment_intents`, newest first, `created[gte]`, `limit` "between 1 and 100",
//!   `starting_after` the last id of a page while `has_more`; `expand[]=data.latest_charge`
//!   gives each intent's charge in the same page (its cumulative `amount_refunded`). Lists are
//!   strongly consistent; the search (`/v1/payment_intents/search`) is not ("Don't use search
//!   for read-after-write flows … data is searchable in under 1 minute. Propagation … could be
//!   delayed during an outage", https://docs.stripe.com/search), so the product's intents are
//!   told apart here, by their `metadata.tenant`, not by a search query.
//! - "Retrieve a PaymentIntent" (https://docs.stripe.com/api/payment_intents/retrieve): a 404
//!   `resource_missing` is Stripe having no such intent.
//!
//! A window of N intents costs ⌈N / 100⌉ list requests (at least one) plus one retrieval for
//! each ledger row of the window the list did not name.

use crate::answer;
use crate::client::{Ended, StripeClient};
use crate::form::{encode, PAYMENT_INTENTS};
use crate::metrics::Tally;
use crate::transport::{Request, Transport};
use inbox_core::metrics::Metric;
use inbox_core::outbox::bucket::shared::SharedBucket;
use serde_json::Value;
use std::sync::Mutex;
use wallet_ledger::reconcile::provider::pass::{Provider, ProviderError};
use wallet_ledger::reconcile::provider::{Reported, Status};
use wallet_ledger::TenantId;

/// The most pages one pass lists (100 intents each): a window beyond it is an error, never a
/// partial comparison read as clean.
pub const MAX_PAGES: usize = 500;

/// The request for one page of the intents created at or after `created_gte`.
pub fn list_page(created_gte: i64, starting_after: Option<&str>) -> Request {
    let since = created_gte.to_string();
    let mut pairs = vec![
        ("created[gte]", since.as_str()),
        ("limit", "100"),
        ("expand[]", "data.latest_charge"),
    ];
    if let Some(after) = starting_after {
        pairs.push(("starting_after", after));
    }
    Request::get(&format!("{PAYMENT_INTENTS}?{}", encode(pairs)))
}

/// The request for one intent, its latest charge expanded.
pub fn retrieve(id: &str) -> Request {
    let id: String = form_urlencoded::byte_serialize(id.as_bytes()).collect();
    Request::get(&format!(
        "{PAYMENT_INTENTS}/{id}?{}",
        encode([("expand[]", "latest_charge")])
    ))
}

/// An intent as the comparison reads it; `None` when it is not one (no id, an undocumented
/// status: skipped, never guessed).
pub fn reported(intent: &Value) -> Option<Reported> {
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let md = &intent["metadata"];
    Some(Reported {
        id: text(&intent["id"])?,
        tenant: text(&md["tenant"]).and_then(|t| TenantId::parse(&t).ok()),
        attempt: text(&md["attempt"]),
        status: Status::parse(intent["status"].as_str()?)?,
        received: intent["amount_received"].as_i64().unwrap_or(0),
        currency: text(&intent["currency"])?.to_ascii_lowercase(),
        created: intent["created"].as_i64().unwrap_or(0),
        // Not expanded (an id) or none: nothing refunded is known.
        refunded: intent["latest_charge"]["amount_refunded"]
            .as_i64()
            .unwrap_or(0),
    })
}

/// Stripe's payments, through a [`StripeClient`].
#[derive(Debug)]
pub struct StripePayments<T, B> {
    client: StripeClient<T, B>,
    tally: Mutex<Tally>,
}

impl<T: Transport, B: SharedBucket> StripePayments<T, B> {
    pub fn on(client: StripeClient<T, B>) -> Self {
        Self {
            client,
            tally: Mutex::default(),
        }
    }

    /// The calls' metrics since the last take (requests, retries, 429s), for the caller to emit.
    pub fn take_metrics(&self) -> Vec<Metric> {
        std::mem::take(&mut *self.tally.lock().unwrap_or_else(|p| p.into_inner())).metrics()
    }

    /// One call: the JSON of a 200, `None` for a 404 `resource_missing`, else why not.
    async fn get(&self, request: &Request) -> Result<Option<Value>, ProviderError> {
        let mut tally = Tally::default();
        let ended = self.client.call(request, &mut tally).await;
        {
            let mut kept = self.tally.lock().unwrap_or_else(|p| p.into_inner());
            kept.requests += tally.requests;
            kept.retries += tally.retries;
            kept.rate_limited += tally.rate_limited;
        }
        let path = request.path.split('?').next().unwrap_or_default();
        match ended {
            Ended::Answer(a) if a.status == 200 => serde_json::from_slice(&a.body)
                .map(Some)
                .map_err(|e| ProviderError(format!("{path}: not JSON: {e}"))),
            Ended::Answer(a)
                if a.status == 404
                    && answer::error_code(&a.body).as_deref() == Some("resource_missing") =>
            {
                Ok(None)
            }
            Ended::Answer(a) => Err(ProviderError(format!(
                "{path} answered HTTP {} {}",
                a.status,
                answer::error_code(&a.body).unwrap_or_default()
            ))),
            Ended::GaveUp(why) => Err(ProviderError(format!("{path}: {why}"))),
        }
    }
}

impl<T: Transport, B: SharedBucket> Provider for StripePayments<T, B> {
    async fn list(&self, created_gte: i64) -> Result<Vec<Reported>, ProviderError> {
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let page = self
                .get(&list_page(created_gte, after.as_deref()))
                .await?
                .ok_or_else(|| ProviderError("the list answered 404".into()))?;
            let data = page["data"]
                .as_array()
                .ok_or_else(|| ProviderError("the list answered no `data`".into()))?;
            after = data
                .last()
                .and_then(|i| i["id"].as_str())
                .map(str::to_owned);
            out.extend(data.iter().filter_map(reported));
            if !page["has_more"].as_bool().unwrap_or(false) || after.is_none() {
                return Ok(out);
            }
        }
        Err(ProviderError(format!(
            "more than {MAX_PAGES} pages of PaymentIntents in the window: shorten it"
        )))
    }

    async fn retrieve(&self, id: &str) -> Result<Option<Reported>, ProviderError> {
        Ok(self.get(&retrieve(id)).await?.as_ref().and_then(reported))
    }

    fn requests(&self) -> u32 {
        self.tally
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .requests
    }
}

#[cfg(test)]
mod tests;
