//! The HTTP client of the deliveries: hyper (the stack the AWS SDK already builds) with rustls on
//! aws-lc-rs and the webpki roots, behind the SSRF guard ([`GuardedConnector`]): the connector
//! resolves the host itself, checks EVERY resolved address with [`AddressPolicy`] and connects
//! only to checked addresses (TLS then verifies the certificate for the original host name). An
//! IP literal is checked the same way. `https://` only; `http://` only with the local setting,
//! and then only to loopback. Redirects are not followed.

use crate::ssrf::{AddressPolicy, Refusal};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use inbox_core::outbox::attempt::AttemptResult;
use inbox_core::outbox::delivery::BODY_HEAD_BYTES;
use inbox_core::outbox::transport::{Outgoing, Transport};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Resolves a host and port to addresses (the system resolver by default; tests inject one).
pub type Resolve = Arc<dyn Fn(String, u16) -> BoxFuture<io::Result<Vec<SocketAddr>>> + Send + Sync>;

/// The system resolver (`getaddrinfo` through tokio).
pub fn system_resolver() -> Resolve {
    Arc::new(|host, port| {
        Box::pin(async move {
            tokio::net::lookup_host((host.as_str(), port))
                .await
                .map(Iterator::collect)
        })
    })
}

/// A connection refused by the guard (found again in the error chain to report it as such).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Blocked(pub String);

/// The guarded TCP connector (a `tower::Service<Uri>` for hyper).
#[derive(Clone)]
pub struct GuardedConnector {
    policy: AddressPolicy,
    resolve: Resolve,
    connect_timeout: Duration,
}

impl GuardedConnector {
    pub fn new(policy: AddressPolicy, resolve: Resolve, connect_timeout: Duration) -> Self {
        Self {
            policy,
            resolve,
            connect_timeout,
        }
    }

    /// The addresses `uri` may be reached at, each checked; an error names the first refused one.
    pub async fn addresses(&self, uri: &http::Uri) -> Result<Vec<SocketAddr>, BoxError> {
        let plain = match uri.scheme_str() {
            Some("https") => false,
            Some("http") if self.policy.allow_loopback => true,
            Some("http") => {
                return Err(Box::new(Blocked(
                    "plain http:// is refused: deliveries use https://".into(),
                )))
            }
            _ => {
                return Err(Box::new(Blocked(
                    "only https:// destinations are allowed".into(),
                )))
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| Blocked("the URL has no host".into()))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(if plain { 80 } else { 443 });
        let addrs = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => (self.resolve)(host.to_owned(), port).await?,
        };
        if addrs.is_empty() {
            return Err(Box::new(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host} resolves to no address"),
            )));
        }
        for a in &addrs {
            self.policy
                .check(a.ip())
                .map_err(|r: Refusal| Blocked(format!("{host} resolves to {r}")))?;
            if plain && !a.ip().to_canonical().is_loopback() {
                return Err(Box::new(Blocked(format!(
                    "plain http:// is allowed to loopback only, not {}",
                    a.ip()
                ))));
            }
        }
        Ok(addrs)
    }
}

impl tower_service::Service<http::Uri> for GuardedConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.addresses(&uri).await?;
            let mut last: Option<io::Error> = None;
            for addr in addrs {
                match tokio::time::timeout(this.connect_timeout, TcpStream::connect(addr)).await {
                    Ok(Ok(stream)) => {
                        stream.set_nodelay(true)?;
                        return Ok(TokioIo::new(stream));
                    }
                    Ok(Err(e)) => last = Some(e),
                    Err(_) => {
                        last = Some(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("connecting to {addr} timed out"),
                        ))
                    }
                }
            }
            Err(
                Box::new(last.unwrap_or_else(|| io::Error::other("no address to connect to")))
                    as BoxError,
            )
        })
    }
}

/// The deliveries' HTTP client.
#[derive(Clone)]
pub struct HttpTransport {
    client: Client<hyper_rustls::HttpsConnector<GuardedConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport").finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// A client with the system resolver.
    pub fn new(policy: AddressPolicy) -> Result<Self, rustls::Error> {
        Self::with_resolver(policy, system_resolver())
    }

    /// A client with `resolve` (tests).
    pub fn with_resolver(policy: AddressPolicy, resolve: Resolve) -> Result<Self, rustls::Error> {
        let tls = inbox_core::tls::web_client_config()?;
        let guarded = GuardedConnector::new(policy, resolve, Duration::from_secs(5));
        let https = hyper_rustls::HttpsConnector::from((guarded, Arc::new(tls)));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(16)
            .build(https);
        Ok(Self { client })
    }

    async fn send(&self, request: Outgoing<'_>) -> Result<AttemptResult, BoxError> {
        let mut builder = http::Request::post(request.url);
        for (name, value) in request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder = builder.header("user-agent", "webhook-ingestor-outbox/1");
        let req = builder.body(Full::new(request.body.clone()))?;
        let response = self.client.request(req).await?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = response.into_body();
        let mut head = Vec::new();
        while head.len() < BODY_HEAD_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        head.extend_from_slice(&data);
                    }
                }
                Some(Err(_)) | None => break,
            }
        }
        head.truncate(BODY_HEAD_BYTES);
        Ok(AttemptResult::Answered {
            status,
            retry_after,
            body: head,
        })
    }
}

/// The guard's refusal in an error's cause chain, if any.
fn blocked(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    inbox_core::error::chain(e).find_map(|err| err.downcast_ref::<Blocked>().map(|b| b.0.clone()))
}

/// An error's cause chain on one line, cut to 500 characters for the attempt's journal.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    inbox_core::error::one_line(e).chars().take(500).collect()
}

impl Transport for HttpTransport {
    async fn post<'a>(&'a self, request: Outgoing<'a>) -> AttemptResult {
        match tokio::time::timeout(request.timeout, self.send(request)).await {
            Err(_) => AttemptResult::Timeout,
            Ok(Ok(result)) => result,
            Ok(Err(e)) => match blocked(e.as_ref()) {
                Some(why) => AttemptResult::Refused(why),
                None => AttemptResult::Connect(chain(e.as_ref())),
            },
        }
    }
}
