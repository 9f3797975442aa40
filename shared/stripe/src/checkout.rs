//! [`StripeCheckout`]: the wallet's [`Checkout`] on Stripe, over the crate's call loop
//! ([`StripeClient`]: the account's token bucket, retries with the same key, the pinned
//! `Stripe-Version`). A top-up is one hosted Checkout Session in payment mode
//! ([`crate::form::checkout_session`]: the tenant in the session's metadata AND the
//! PaymentIntent's, so whichever of their events arrives first names it) sent with the request's
//! idempotency key: a caller retrying after a timeout gets the same session, not a second one.
//! The answer is read by [`crate::answer::session`]: a refusal (`invalid_request_error`) is
//! [`CheckoutError::Refused`] with Stripe's message; nothing decisive after the retries is
//! [`CheckoutError::Unavailable`]. Metrics are counted per call and kept until
//! [`StripeCheckout::take_metrics`].

use crate::answer;
use crate::client::{Ended, StripeClient};
use crate::config::StripeConfig;
use crate::form;
use crate::http::HttpTransport;
use crate::metrics::Tally;
use crate::transport::Transport;
use inbox_core::metrics::Metric;
use inbox_core::outbox::bucket::shared::SharedBucket;
use wallet_ledger::payments::checkout::{
    Checkout, CheckoutError, CheckoutRequest, CheckoutSession,
};

/// Hosted top-ups on a Stripe account.
#[derive(Debug)]
pub struct StripeCheckout<T, B> {
    client: StripeClient<T, B>,
}

impl<T: Transport, B: SharedBucket> StripeCheckout<T, B> {
    /// Creates sessions through `client`.
    pub fn on(client: StripeClient<T, B>) -> Self {
        Self { client }
    }

    /// Creates the session of `request` and returns it with the call's metrics (not kept).
    pub async fn create_measured(
        &self,
        request: &CheckoutRequest,
    ) -> (Result<CheckoutSession, CheckoutError>, Vec<Metric>) {
        let mut tally = Tally::default();
        let created = match self
            .client
            .call(&form::checkout_session(request), &mut tally)
            .await
        {
            Ended::Answer(a) => answer::session(a.status, &a.body),
            Ended::GaveUp(why) => Err(CheckoutError::Unavailable(why)),
        };
        if let Err(e) = &created {
            // The reason only: a refusal's message may quote the caller's input.
            let reason = match e {
                CheckoutError::Refused(_) => "refused",
                CheckoutError::Unavailable(_) => "unavailable",
            };
            tracing::warn!(tenant = %request.tenant, reason, requests = tally.requests,
                "no Checkout Session was created");
        }
        tally.checkout(&created);
        (created, tally.metrics())
    }

    /// The metrics of the calls made since the last take, for the caller to emit.
    pub fn take_metrics(&self) -> Vec<Metric> {
        self.client.take_metrics()
    }
}

impl<B: SharedBucket> StripeCheckout<HttpTransport, B> {
    /// The checkout a composition root builds (the wallet API's `main`):
    /// [`StripeClient::from_config`] with the same [`StripeConfig`] and the account's bucket in
    /// the table as the charging function's, so both keep to one rate.
    pub fn from_config(config: &StripeConfig, bucket: B) -> Result<Self, rustls::Error> {
        Ok(Self::on(StripeClient::from_config(config, bucket)?))
    }
}

impl<T: Transport, B: SharedBucket> Checkout for StripeCheckout<T, B> {
    async fn create_session(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CheckoutSession, CheckoutError> {
        let (created, metrics) = self.create_measured(request).await;
        self.client.keep(metrics);
        created
    }
}

#[cfg(test)]
mod tests;
