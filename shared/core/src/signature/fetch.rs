//! Fetching key material the provider publishes (the SNS signing certificates): the
//! [`Fetcher`] trait, injectable through [`super::Spec::with_fetcher`] (tests serve certificates
//! they created), and the production [`HttpsFetcher`]: HTTPS only (hyper + rustls on aws-lc-rs
//! with the system's root certificates, as the AWS SDK), a 5 s deadline and a 64 KiB cap on the
//! answer. Its client is built on first use, so a cold start that never fetches pays nothing.
//!
//! A fetcher does not decide what may be fetched: the scheme checks the URL first (SNS: only
//! `https://sns.<region>.amazonaws.com/….pem`), and caches what it fetched.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// The most bytes a fetched document may have.
pub const MAX_FETCH_BYTES: usize = 64 * 1024;
/// How long a fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// What [`Fetcher::fetch`] returns.
pub type FetchFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>>;

/// Fetches a document by URL (already checked by the scheme). `Send + Sync`: one per source,
/// shared by every request.
pub trait Fetcher: fmt::Debug + Send + Sync {
    fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a>;
}

/// Why a document could not be fetched (the reason never quotes the document).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct FetchError {
    pub reason: &'static str,
}

impl FetchError {
    pub fn new(reason: &'static str) -> Self {
        Self { reason }
    }
}

type HttpsClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// The production fetcher: `GET` over HTTPS, 200 only, bounded in time and size.
#[derive(Default)]
pub struct HttpsFetcher {
    client: OnceLock<Result<HttpsClient, FetchError>>,
}

impl HttpsFetcher {
    /// A shared instance.
    pub fn shared() -> Arc<dyn Fetcher> {
        Arc::new(Self::default())
    }

    fn client(&self) -> Result<&HttpsClient, FetchError> {
        self.client
            .get_or_init(|| {
                let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
                let https = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_provider_and_native_roots(provider)
                    .map_err(|_| FetchError::new("no usable root certificates on this system"))?
                    .https_only()
                    .enable_http1()
                    .build();
                Ok(Client::builder(TokioExecutor::new()).build(https))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|_| FetchError::new("the URL is not valid"))?;
        if uri.scheme_str() != Some("https") {
            return Err(FetchError::new("only HTTPS URLs are fetched"));
        }
        let response = self
            .client()?
            .get(uri)
            .await
            .map_err(|_| FetchError::new("the request failed"))?;
        if response.status() != http::StatusCode::OK {
            return Err(FetchError::new("the server did not answer 200"));
        }
        let body = Limited::new(response.into_body(), MAX_FETCH_BYTES)
            .collect()
            .await
            .map_err(|_| FetchError::new("the answer could not be read or is too large"))?;
        Ok(body.to_bytes().to_vec())
    }
}

impl Fetcher for HttpsFetcher {
    fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a> {
        Box::pin(async move {
            tokio::time::timeout(FETCH_TIMEOUT, self.get(url))
                .await
                .map_err(|_| FetchError::new("the request timed out"))?
        })
    }
}

impl fmt::Debug for HttpsFetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HttpsFetcher")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_https_urls_are_fetched() {
        let f = HttpsFetcher::default();
        for url in [
            "http://127.0.0.1:1/x.pem",
            "not a url",
            "ftp://example.com/x",
        ] {
            assert!(f.fetch(url).await.is_err(), "{url}");
        }
        assert_eq!(format!("{f:?}"), "HttpsFetcher");
    }

    #[tokio::test]
    async fn an_unreachable_host_fails_within_the_deadline() {
        // Port 1 on loopback refuses at once: an error, not a hang.
        let started = std::time::Instant::now();
        let result = HttpsFetcher::default()
            .fetch("https://127.0.0.1:1/cert.pem")
            .await;
        assert!(result.is_err());
        assert!(started.elapsed() < FETCH_TIMEOUT + Duration::from_secs(1));
    }
}
