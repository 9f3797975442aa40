//! The HTTP [`Transport`] to Stripe: hyper (the stack the AWS SDK and the deliver function
//! already build) with rustls on aws-lc-rs and the webpki roots ([`inbox_core::tls::web_client_config`],
//! shared with the deliver function). Every request carries `Authorization: Bearer <key>`, the
//! pinned [`STRIPE_VERSION`] (answers keep the shape this module reads whatever the account's
//! default version), its `Idempotency-Key`, and ends within the configured timeout. The key is
//! never logged; errors name the failure, not the request.

use crate::config::{SecretKey, StripeConfig};
use crate::transport::{Answer, Failure, Request, Transport};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::Duration;

/// The API version every request pins (what the local stand-in answers with, too).
pub const STRIPE_VERSION: &str = "2026-10-28.endive";

/// The largest answer read (a PaymentIntent or a page of them is a few KB).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Requests to the configured Stripe API.
#[derive(Clone)]
pub struct HttpTransport {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    base: Arc<str>,
    key: SecretKey,
    timeout: Duration,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    pub fn new(config: &StripeConfig) -> Result<Self, rustls::Error> {
        let tls = inbox_core::tls::web_client_config()?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(5)));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnector::from((http, Arc::new(tls)));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        Ok(Self {
            client,
            base: config.api_base.as_str().into(),
            key: config.key.clone(),
            timeout: config.timeout,
        })
    }

    async fn exchange(&self, request: &Request) -> Result<Answer, Failure> {
        let mut builder = http::Request::builder()
            .method(request.method.clone())
            .uri(format!("{}{}", self.base, request.path))
            .header(http::header::AUTHORIZATION, self.key.bearer())
            .header("stripe-version", STRIPE_VERSION)
            .header(http::header::USER_AGENT, "webhook-ingestor-autopay/1");
        if let Some(key) = &request.idempotency_key {
            builder = builder.header("idempotency-key", key);
        }
        if request.method == http::Method::POST {
            builder = builder.header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            );
        }
        let req = builder
            .body(Full::new(Bytes::from(request.body.clone())))
            .map_err(|e| Failure::Broken(format!("the request could not be built: {e}")))?;
        let response = self
            .client
            .request(req)
            .await
            .map_err(|e| Failure::Broken(inbox_core::error::one_line(&e)))?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let should_retry = header("stripe-should-retry").map(|v| v.eq_ignore_ascii_case("true"));
        let replayed =
            header("idempotent-replayed").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let request_id = header("request-id");
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| Failure::Broken(format!("the answer broke off: {e}")))?
            .to_bytes()
            .to_vec();
        Ok(Answer {
            status,
            should_retry,
            replayed,
            request_id,
            body,
        })
    }
}

impl Transport for HttpTransport {
    async fn send(&self, request: &Request) -> Result<Answer, Failure> {
        match tokio::time::timeout(self.timeout, self.exchange(request)).await {
            Ok(result) => result,
            Err(_) => Err(Failure::TimedOut),
        }
    }
}
