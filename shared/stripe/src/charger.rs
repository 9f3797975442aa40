//! [`StripeCharger`]: the wallet's [`Charger`] on Stripe, over the crate's call loop
//! ([`StripeClient`]). A charge is one off-session PaymentIntent ([`crate::form::payment_intent`])
//! sent with the attempt's idempotency key (stored before the call); a find is a search of the
//! attempt's intents. When the call gives up (retries spent, no token in time) the charge is
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
    ChargeOutcome, ChargeReply, ChargeRequest, Charger, ProviderUnavailable,
};
use wallet_ledger::tenant::TenantId;

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

    /// The latest PaymentIntent of `attempt` (by its metadata), with the call's metrics.
    pub async fn find_measured(
        &self,
        tenant: &TenantId,
        attempt: &str,
    ) -> (
        Result<Option<ChargeReply>, ProviderUnavailable>,
        Vec<Metric>,
    ) {
        let mut tally = Tally::default();
        let found = match self
            .client
            .call(&form::search_attempt(tenant, attempt), &mut tally)
            .await
        {
            Ended::Answer(a) if a.status == 200 => Ok(latest(&a.body).map(|intent| {
                let read = answer::intent(&intent);
                ChargeReply {
                    outcome: read.outcome,
                    provider_ref: read.intent,
                    replayed: false,
                    requests: tally.requests,
                }
            })),
            Ended::Answer(a) => Err(ProviderUnavailable(format!(
                "the search answered HTTP {} {}",
                a.status,
                answer::error_code(&a.body).unwrap_or_default()
            ))),
            Ended::GaveUp(why) => Err(ProviderUnavailable(why)),
        };
        (found, tally.metrics())
    }
}

impl<B: SharedBucket> StripeCharger<HttpTransport, B> {
    /// The charger the charging function's `main` builds: [`StripeClient::from_config`].
    pub fn from_config(config: &StripeConfig, bucket: B) -> Result<Self, rustls::Error> {
        Ok(Self::on(StripeClient::from_config(config, bucket)?))
    }
}

/// The newest intent of a list or search answer (`data`, by `created`).
fn latest(body: &[u8]) -> Option<serde_json::Value> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    json["data"]
        .as_array()?
        .iter()
        .max_by_key(|i| i["created"].as_i64().unwrap_or(0))
        .cloned()
}

impl<T: Transport, B: SharedBucket> Charger for StripeCharger<T, B> {
    async fn charge(&self, request: &ChargeRequest) -> ChargeReply {
        let (reply, metrics) = self.charge_measured(request).await;
        self.client.keep(metrics);
        reply
    }

    async fn find(
        &self,
        tenant: &TenantId,
        attempt: &str,
    ) -> Result<Option<ChargeReply>, ProviderUnavailable> {
        let (found, metrics) = self.find_measured(tenant, attempt).await;
        self.client.keep(metrics);
        found
    }

    fn take_metrics(&self) -> Vec<Metric> {
        self.client.take_metrics()
    }
}

#[cfg(test)]
mod tests;
