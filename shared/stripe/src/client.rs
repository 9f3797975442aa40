//! [`StripeClient`]: the call loop every Stripe request of this crate goes through (a charge, a
//! search, a Checkout Session). One call is one request repeated as [`crate::retry`] says, each
//! repeat with the SAME idempotency key (the caller's, never a new one), each send first taking
//! a token from the account's shared bucket ([`inbox_core::outbox::bucket::shared`]); a 429 holds
//! that bucket for every worker for the backoff. A call ends with the last answer
//! ([`Ended::Answer`], read by the caller through [`crate::answer`]) or, when the retries are
//! spent or the bucket has no token within [`StripeClient::max_wait`], with why
//! ([`Ended::GaveUp`]). Requests, retries and 429s are counted per call ([`Tally`]); a caller
//! that has no other way to hand its metrics over keeps them here ([`StripeClient::keep`])
//! until [`StripeClient::take_metrics`].
//!
//! The callers: [`crate::charger::StripeCharger`] (autopay's charges) and
//! [`crate::checkout::StripeCheckout`] (the wallet API's hosted top-ups). Time, waiting and the
//! jitter's draw are injected ([`StripeClient::with_pause`]): tests never sleep.

use crate::answer;
use crate::config::StripeConfig;
use crate::http::HttpTransport;
use crate::metrics::Tally;
use crate::retry::{self, Next, Observed, RetryPolicy};
use crate::transport::{Answer, Failure, Request, Transport};
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::metrics::Metric;
use inbox_core::outbox::bucket::shared::{self, BucketKey, SharedBucket};
use inbox_core::outbox::bucket::Rate;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The item of the account's token bucket (one for every worker of the account).
pub const BUCKET_PK: &str = "PROVIDER#stripe";
pub const BUCKET_SK: &str = "BUCKET";
pub const BUCKET_KIND: &str = "provider_bucket";

/// The bucket item of the Stripe account.
pub fn bucket_key() -> BucketKey {
    BucketKey {
        pk: BUCKET_PK.into(),
        sk: BUCKET_SK.into(),
        kind: BUCKET_KIND,
    }
}

/// The wait and the jitter's draw between tries (core's).
pub use inbox_core::clock::{Draw, Pause};

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The final answer (or the last one when [`Next::Final`] said so), for the caller to read.
    Answer(Answer),
    /// Retries spent, or no token in time, or the bucket's store failed: why.
    GaveUp(String),
}

/// Requests to one Stripe account, through its bucket.
pub struct StripeClient<T, B> {
    transport: T,
    bucket: B,
    key: BucketKey,
    rate: Rate,
    retry: RetryPolicy,
    /// The longest one send waits for a token.
    pub max_wait: Duration,
    clock: Arc<dyn Clock>,
    pause: Pause,
    draw: Draw,
    guess: Mutex<Option<i64>>,
    pending: Mutex<Vec<Metric>>,
}

impl<T, B> std::fmt::Debug for StripeClient<T, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeClient")
            .field("rate", &self.rate)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl<T: Transport, B: SharedBucket> StripeClient<T, B> {
    /// A client sending through `transport`, at `rate` on `bucket`, retrying as `retry` says,
    /// with the system clock, tokio's sleep and a random jitter.
    pub fn new(transport: T, bucket: B, rate: Rate, retry: RetryPolicy) -> Self {
        Self {
            transport,
            bucket,
            key: bucket_key(),
            rate,
            retry,
            max_wait: Duration::from_secs(10),
            clock: Arc::new(SystemClock),
            pause: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
            draw: Arc::new(fastrand::f64),
            guess: Mutex::new(None),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// The same with another clock, wait and draw (tests).
    pub fn with_pause(mut self, clock: Arc<dyn Clock>, pause: Pause, draw: Draw) -> Self {
        self.clock = clock;
        self.pause = pause;
        self.draw = draw;
        self
    }

    /// One call: `request` sent until its answer is final or the retries are spent.
    pub async fn call(&self, request: &Request, tally: &mut Tally) -> Ended {
        let mut last = String::new();
        for retries in 0..=self.retry.max_retries {
            if let Err(why) = self.token().await {
                return Ended::GaveUp(why);
            }
            tally.requests += 1;
            let sent = self.transport.send(request).await;
            let observed = match &sent {
                Ok(a) => Observed::Answered {
                    status: a.status,
                    should_retry: a.should_retry,
                },
                Err(Failure::TimedOut) => Observed::TimedOut,
                Err(Failure::Broken(_)) => Observed::Broken,
            };
            let limited = matches!(sent, Ok(Answer { status: 429, .. }));
            tally.rate_limited += u32::from(limited);
            last = match &sent {
                Ok(a) => format!(
                    "HTTP {} {}",
                    a.status,
                    answer::error_code(&a.body).unwrap_or_default()
                ),
                Err(f) => f.to_string(),
            };
            match retry::next(self.retry, observed, retries, (self.draw)()) {
                Next::Final => {
                    return match sent {
                        Ok(a) => Ended::Answer(a),
                        Err(f) => Ended::GaveUp(f.to_string()),
                    }
                }
                Next::Exhausted => break,
                Next::Retry(wait) => {
                    tally.retries += 1;
                    if limited {
                        self.hold(wait).await;
                    }
                    tracing::info!(path = %request.path.split('?').next().unwrap_or_default(),
                        retry = retries + 1, wait_ms = wait.as_millis() as u64, last = %last,
                        "the Stripe request is repeated with the same idempotency key");
                    (self.pause)(wait).await;
                }
            }
        }
        Ended::GaveUp(format!(
            "{} retries spent; last: {last}",
            self.retry.max_retries
        ))
    }

    /// A token of the account's bucket, or why there is none.
    async fn token(&self) -> Result<(), String> {
        let mut guess = *self.guess.lock().unwrap_or_else(|p| p.into_inner());
        let pause = |d| (self.pause)(d);
        let got = shared::acquire(
            &self.bucket,
            &self.key,
            self.rate,
            &mut guess,
            &*self.clock,
            self.max_wait,
            pause,
        )
        .await;
        *self.guess.lock().unwrap_or_else(|p| p.into_inner()) = guess;
        match got {
            Ok(None) => Ok(()),
            Ok(Some(w)) => Err(format!(
                "the account's rate: no token within {:?} (next in {w:?})",
                self.max_wait
            )),
            Err(e) => Err(format!("the account's bucket could not be read: {e}")),
        }
    }

    /// Holds the account's bucket for `wait` (a 429): best effort.
    async fn hold(&self, wait: Duration) {
        let until = self
            .clock
            .now_millis()
            .saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX));
        let mut guess = *self.guess.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = shared::hold(&self.bucket, &self.key, self.rate, &mut guess, until).await {
            tracing::warn!(error = %e, "a Stripe 429 could not hold the account's bucket");
        }
        *self.guess.lock().unwrap_or_else(|p| p.into_inner()) = guess;
    }
}

impl<T, B> StripeClient<T, B> {
    /// Keeps a call's metrics until [`Self::take_metrics`].
    pub fn keep(&self, metrics: Vec<Metric>) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(metrics);
    }

    /// The metrics kept since the last take (for the caller to emit after it committed).
    pub fn take_metrics(&self) -> Vec<Metric> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl<B: SharedBucket> StripeClient<HttpTransport, B> {
    /// The client a composition root builds: HTTP to `config`'s API base with its key, at its
    /// rate on `bucket` (the table, for every worker of the account), retrying as it says.
    pub fn from_config(config: &StripeConfig, bucket: B) -> Result<Self, rustls::Error> {
        Ok(Self::new(
            HttpTransport::new(config)?,
            bucket,
            config.rate,
            config.retry,
        ))
    }
}
