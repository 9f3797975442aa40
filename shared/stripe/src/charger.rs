//! [`StripeCharger`]: the wallet's [`Charger`] on Stripe, over the crate's call loop
//! ([`StripeClient`]). A charge is one off-session PaymentIntent ([`crate::form::payment_intent`])
//! sent with the attempt's idempotency key (stored before the call); a look-up retrieves one
//! intent; a find reads the attempt's intents from the customer's list (strongly consistent) and
//! the search by metadata. When the call gives up (retries spent, no token in time) the charge is
//! `Indeterminate` (never a new key: the next try of the same attempt sends the same one and
//! gets Stripe's saved answer). Metrics are counted per call and kept until
//! [`Charger::take_metrics`].

use crate::answer;
use crate::client::{Draw, Ended, Pause, StripeClient};
use crate::config::StripeConfig;
use crate::form;
use crate::http::HttpTransport;
use crate::metrics::Tally;
use crate::retry::RetryPolicy;
use crate::transport::Transport;
use inbox_core::clock::Clock;
use inbox_core::metrics::Metric;
use inbox_core::outbox::bucket::shared::SharedBucket;
use inbox_core::outbox::bucket::Rate;
use std::sync::Arc;
use std::time::Duration;
use wallet_ledger::autopay::{
    ChargeOutcome, ChargeReply, ChargeRequest, Charger, Find, ProviderUnavailable,
};

/// Autopay's charges on a Stripe account.
#[derive(Debug)]
pub struct StripeCharger<T, B> {
    client: StripeClient<T, B>,
}

impl<T: Transport, B: SharedBucket> StripeCharger<T, B> {
    /// Charges through `client`.
    pub fn on(client: StripeClient<T, B>) -> Self {
        Self { client }
    }

    /// A charger sending through `transport`, at `rate` on `bucket`, retrying as `retry` says
    /// (see [`StripeClient::new`]).
    pub fn new(transport: T, bucket: B, rate: Rate, retry: RetryPolicy) -> Self {
        Self::on(StripeClient::new(transport, bucket, rate, retry))
    }

    /// The same with another clock, wait and draw (tests).
    pub fn with_pause(self, clock: Arc<dyn Clock>, pause: Pause, draw: Draw) -> Self {
        Self::on(self.client.with_pause(clock, pause, draw))
    }

    /// The same waiting at most `max_wait` for a token of the account.
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.client.max_wait = max_wait;
        self
    }

    /// Charges `request` and returns the reply with the call's metrics (not kept).
    pub async fn charge_measured(&self, request: &ChargeRequest) -> (ChargeReply, Vec<Metric>) {
        let mut tally = Tally::default();
        let reply = match self
            .client
            .call(&form::payment_intent(request), &mut tally)
            .await
        {
            Ended::Answer(a) => {
                let read = answer::read(a.status, &a.body);
                ChargeReply {
                    outcome: read.outcome,
                    provider_ref: read.intent,
                    replayed: a.replayed,
                    requests: tally.requests,
                }
            }
            Ended::GaveUp(why) => {
                tracing::warn!(attempt = %request.attempt, try_no = request.try_no, why = %why,
                    "a charge's outcome is not known");
                ChargeReply {
                    outcome: ChargeOutcome::Indeterminate,
                    provider_ref: None,
                    replayed: false,
                    requests: tally.requests,
                }
            }
        };
        tally.outcome(&reply.outcome);
        (reply, tally.metrics())
    }

    /// The PaymentIntent `id` as Stripe has it now, with the call's metrics.
    pub async fn lookup_measured(
        &self,
        id: &str,
    ) -> (Result<ChargeReply, ProviderUnavailable>, Vec<Metric>) {
        let mut tally = Tally::default();
        let found = match self
            .client
            .call(&form::retrieve_intent(id), &mut tally)
            .await
        {
            Ended::Answer(a) if a.status == 200 => {
                let json: serde_json::Value =
                    serde_json::from_slice(&a.body).unwrap_or(serde_json::Value::Null);
                let read = answer::intent(&json);
                match read.intent {
                    Some(_) => Ok(ChargeReply {
                        outcome: read.outcome,
                        provider_ref: read.intent,
                        replayed: false,
                        requests: tally.requests,
                    }),
                    None => Err(ProviderUnavailable(format!(
                        "retrieving {id} answered no PaymentIntent"
                    ))),
                }
            }
            Ended::Answer(a) => Err(ProviderUnavailable(format!(
                "retrieving {id} answered HTTP {} {}",
                a.status,
                answer::error_code(&a.body).unwrap_or_default()
            ))),
            Ended::GaveUp(why) => Err(ProviderUnavailable(why)),
        };
        (found, tally.metrics())
    }

    /// The newest PaymentIntent of `find`'s attempt (and try), by its metadata, with the calls'
    /// metrics. Proof of none needs both reads: the customer's list since the try's first claim
    /// (strongly consistent) AND the search by metadata (which covers a customer changed since
    /// the claim; Stripe's search lags writes by about a minute, hours after the claim it has
    /// them). A list longer than [`MAX_LIST_PAGES`] pages proves nothing.
    pub async fn find_measured(
        &self,
        find: &Find,
    ) -> (
        Result<Option<ChargeReply>, ProviderUnavailable>,
        Vec<Metric>,
    ) {
        let mut tally = Tally::default();
        let found = self.find_in(find, &mut tally).await.map(|intent| {
            intent.map(|intent| {
                let read = answer::intent(&intent);
                ChargeReply {
                    outcome: read.outcome,
                    provider_ref: read.intent,
                    replayed: false,
                    requests: tally.requests,
                }
            })
        });
        (found, tally.metrics())
    }

    async fn find_in(
        &self,
        find: &Find,
        tally: &mut Tally,
    ) -> Result<Option<serde_json::Value>, ProviderUnavailable> {
        let mut found = Vec::new();
        let search = form::search_attempt(&find.tenant, &find.attempt);
        let searched = self.page(&search, tally).await?;
        found.extend(searched.0);
        if !find.customer.is_empty() {
            let mut after: Option<String> = None;
            let mut complete = false;
            for _ in 0..MAX_LIST_PAGES {
                let request = form::list_intents(&find.customer, find.since_secs, after.as_deref());
                let (data, more) = self.page(&request, tally).await?;
                after = data
                    .last()
                    .and_then(|i| i["id"].as_str())
                    .map(str::to_owned);
                found.extend(data);
                if !more || after.is_none() {
                    complete = true;
                    break;
                }
            }
            if !complete {
                return Err(ProviderUnavailable(format!(
                    "customer {} has more than {MAX_LIST_PAGES} pages of PaymentIntents since the \
                     try: no proof either way",
                    find.customer
                )));
            }
        }
        Ok(found
            .into_iter()
            .filter(|i| of_try(i, find))
            .max_by_key(|i| i["created"].as_i64().unwrap_or(0)))
    }

    /// One page of a list or search: its `data` and `has_more`.
    async fn page(
        &self,
        request: &crate::transport::Request,
        tally: &mut Tally,
    ) -> Result<(Vec<serde_json::Value>, bool), ProviderUnavailable> {
        match self.client.call(request, tally).await {
            Ended::Answer(a) if a.status == 200 => {
                let json: serde_json::Value = serde_json::from_slice(&a.body)
                    .map_err(|e| ProviderUnavailable(format!("{}: {e}", request.path)))?;
                let data = json["data"].as_array().cloned().ok_or_else(|| {
                    ProviderUnavailable(format!("{} answered no list", request.path))
                })?;
                Ok((data, json["has_more"].as_bool().unwrap_or(false)))
            }
            Ended::Answer(a) => Err(ProviderUnavailable(format!(
                "{} answered HTTP {} {}",
                request.path.split('?').next().unwrap_or_default(),
                a.status,
                answer::error_code(&a.body).unwrap_or_default()
            ))),
            Ended::GaveUp(why) => Err(ProviderUnavailable(why)),
        }
    }
}

/// The most pages of a customer's intents read for one find (100 each).
pub const MAX_LIST_PAGES: usize = 10;

/// Whether `intent` is a charge of `find`'s tenant, attempt and (when given) try, by the metadata
/// autopay sets on it.
fn of_try(intent: &serde_json::Value, find: &Find) -> bool {
    let m = &intent["metadata"];
    m["attempt"].as_str() == Some(find.attempt.as_str())
        && m["tenant"].as_str() == Some(find.tenant.as_str())
        && find
            .try_no
            .is_none_or(|t| m["try"].as_str() == Some(t.to_string().as_str()))
}

impl<B: SharedBucket> StripeCharger<HttpTransport, B> {
    /// The charger the charging function's `main` builds: [`StripeClient::from_config`].
    pub fn from_config(config: &StripeConfig, bucket: B) -> Result<Self, rustls::Error> {
        Ok(Self::on(StripeClient::from_config(config, bucket)?))
    }
}

impl<T: Transport, B: SharedBucket> Charger for StripeCharger<T, B> {
    async fn charge(&self, request: &ChargeRequest) -> ChargeReply {
        let (reply, metrics) = self.charge_measured(request).await;
        self.client.keep(metrics);
        reply
    }

    async fn lookup(&self, provider_ref: &str) -> Result<ChargeReply, ProviderUnavailable> {
        let (found, metrics) = self.lookup_measured(provider_ref).await;
        self.client.keep(metrics);
        found
    }

    async fn find(&self, find: &Find) -> Result<Option<ChargeReply>, ProviderUnavailable> {
        let (found, metrics) = self.find_measured(find).await;
        self.client.keep(metrics);
        found
    }

    fn take_metrics(&self) -> Vec<Metric> {
        self.client.take_metrics()
    }
}

#[cfg(test)]
mod tests;
