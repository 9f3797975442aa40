//! Fetching key material the provider publishes (the SNS signing certificates): the
//! [`Fetcher`] trait, injectable through [`super::Spec::with_fetcher`] (tests serve certificates
//! they created), and the production [`HttpsFetcher`]: one HTTPS `GET` (TLS by rustls on aws-lc-rs
//! with the system's root certificates, as the AWS SDK), `200` only, a 5 s deadline and a 64 KiB
//! cap on the answer. Its TLS configuration is built on first use, so a cold start that never
//! fetches pays nothing.
//!
//! The request is plain HTTP/1.1 with `Connection: close`, read to the end and parsed here
//! (status line, `Content-Length` or chunked body): a full HTTP client (hyper's pool and
//! dispatcher, instantiated once more for this one request type) would add 150 KB to the ingest
//! binary for a document fetched once per cold start.
//!
//! A fetcher does not decide what may be fetched: the scheme checks the URL first (SNS: only
//! `https://sns.<region>.amazonaws.com/….pem`), and caches what it fetched.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The most bytes a fetched document may have.
pub const MAX_FETCH_BYTES: usize = 64 * 1024;
/// The most bytes of response headers read.
const MAX_HEAD_BYTES: usize = 16 * 1024;
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
    /// The server answered that it has no such document (403, 404, 410): a decision, not an
    /// outage.
    absent: bool,
}

impl FetchError {
    /// The document could not be fetched now (an outage, a timeout, an unexpected answer).
    pub fn new(reason: &'static str) -> Self {
        Self {
            reason,
            absent: false,
        }
    }

    /// The server has no such document.
    pub fn absent(reason: &'static str) -> Self {
        Self {
            reason,
            absent: true,
        }
    }

    /// Whether the server answered that it has no such document.
    pub fn is_absent(&self) -> bool {
        self.absent
    }
}

/// The production fetcher: `GET` over HTTPS, 200 only, bounded in time and size.
#[derive(Default)]
pub struct HttpsFetcher {
    config: OnceLock<Result<Arc<rustls::ClientConfig>, FetchError>>,
}

impl HttpsFetcher {
    /// A shared instance.
    pub fn shared() -> Arc<dyn Fetcher> {
        Arc::new(Self::default())
    }

    /// TLS with the functions' roots (`crate::tls`), on aws-lc-rs, built once.
    fn config(&self) -> Result<Arc<rustls::ClientConfig>, FetchError> {
        self.config
            .get_or_init(|| {
                // The roots AWS endpoints chain to (SNS's certificate host is one), or the
                // system's with `TRUST_SYSTEM_ROOTS` (crate::tls).
                let system =
                    crate::tls::system_roots(&crate::config::Env::process()).unwrap_or(true);
                let roots = crate::tls::root_store(system);
                if roots.is_empty() {
                    return Err(FetchError::new(
                        "no usable root certificates on this system",
                    ));
                }
                let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
                rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
                    .map_err(|_| FetchError::new("TLS cannot be configured"))
            })
            .clone()
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        let (host, port, path) = split_url(url)?;
        let server_name = ServerName::try_from(host.to_owned())
            .map_err(|_| FetchError::new("the URL's host is not a valid name"))?;
        let tcp = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|_| FetchError::new("the connection failed"))?;
        let mut tls = tokio_rustls::TlsConnector::from(self.config()?)
            .connect(server_name, tcp)
            .await
            .map_err(|_| FetchError::new("the TLS handshake failed"))?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: webhook-inbox\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        tls.write_all(request.as_bytes())
            .await
            .map_err(|_| FetchError::new("the request could not be sent"))?;
        let mut response = Vec::with_capacity(8 * 1024);
        let limit = (MAX_HEAD_BYTES + MAX_FETCH_BYTES) as u64;
        match (&mut tls).take(limit + 1).read_to_end(&mut response).await {
            Ok(_) => {}
            // A server that closes without TLS's close_notify: the framing below decides
            // whether the answer is complete.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
            Err(_) => return Err(FetchError::new("the answer could not be read")),
        }
        if response.len() as u64 > limit {
            return Err(FetchError::new("the answer is too large"));
        }
        parse_response(&response)
    }
}

/// `https://host[:port]/path` → (host, port, path). Nothing else is fetched.
fn split_url(url: &str) -> Result<(&str, u16, &str), FetchError> {
    let invalid = || FetchError::new("only https://host/path URLs are fetched");
    let rest = url.strip_prefix("https://").ok_or_else(invalid)?;
    let slash = rest.find('/').ok_or_else(invalid)?;
    let (authority, path) = rest.split_at(slash);
    if authority.is_empty()
        || authority.contains(['@', '['])
        || !path.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(invalid());
    }
    match authority.split_once(':') {
        None => Ok((authority, 443, path)),
        Some((host, port)) => Ok((host, port.parse().map_err(|_| invalid())?, path)),
    }
}

/// The body of a complete `200` answer: framed by `Content-Length`, chunked, or by the close.
fn parse_response(response: &[u8]) -> Result<Vec<u8>, FetchError> {
    let malformed = || FetchError::new("the answer is not valid HTTP");
    let head_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .filter(|&at| at <= MAX_HEAD_BYTES)
        .ok_or_else(malformed)?;
    let head = std::str::from_utf8(&response[..head_end]).map_err(|_| malformed())?;
    let body = &response[head_end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().ok_or_else(malformed)?;
    let mut parts = status.split(' ');
    let (version, code) = (parts.next(), parts.next());
    if !matches!(version, Some("HTTP/1.1" | "HTTP/1.0")) {
        return Err(malformed());
    }
    match code {
        Some("200") => {}
        Some("403" | "404" | "410") => {
            return Err(FetchError::absent("the server has no such document"))
        }
        _ => return Err(FetchError::new("the server did not answer 200")),
    }
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let (name, value) = line.split_once(':').ok_or_else(malformed)?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| malformed())?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
            if !chunked {
                return Err(malformed());
            }
        }
    }
    let body = match (chunked, length) {
        (true, _) => dechunk(body)?,
        (false, Some(n)) => body
            .get(..n)
            .ok_or(FetchError::new("the answer is incomplete"))?
            .to_vec(),
        (false, None) => body.to_vec(),
    };
    if body.len() > MAX_FETCH_BYTES {
        return Err(FetchError::new("the answer is too large"));
    }
    Ok(body)
}

/// Decodes a chunked body (extensions ignored, trailers not read); it must end with the last
/// (empty) chunk.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, FetchError> {
    let incomplete = || FetchError::new("the answer is incomplete");
    let mut out = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(incomplete)?;
        let size_text = std::str::from_utf8(&rest[..line_end]).map_err(|_| incomplete())?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| incomplete())?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if size > MAX_FETCH_BYTES || out.len() + size > MAX_FETCH_BYTES {
            return Err(FetchError::new("the answer is too large"));
        }
        let chunk = rest.get(..size).ok_or_else(incomplete)?;
        out.extend_from_slice(chunk);
        rest = rest
            .get(size..)
            .and_then(|r| r.strip_prefix(b"\r\n"))
            .ok_or_else(incomplete)?;
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
            "https://u@h/x",
            "https://h",
        ] {
            assert!(f.fetch(url).await.is_err(), "{url}");
        }
        assert_eq!(format!("{f:?}"), "HttpsFetcher");
        assert_eq!(
            split_url("https://sns.us-east-1.amazonaws.com/a.pem").unwrap(),
            ("sns.us-east-1.amazonaws.com", 443, "/a.pem")
        );
        assert_eq!(
            split_url("https://127.0.0.1:8443/a").unwrap(),
            ("127.0.0.1", 8443, "/a")
        );
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

    #[tokio::test]
    async fn a_server_that_speaks_no_tls_fails() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
                .await;
        });
        let result = HttpsFetcher::default()
            .fetch(&format!("https://localhost:{port}/cert.pem"))
            .await;
        assert!(result.is_err(), "{result:?}");
        server.await.unwrap();
    }

    #[test]
    fn responses() {
        let ok = |r: &[u8]| parse_response(r);
        assert_eq!(
            ok(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello").unwrap(),
            b"hello"
        );
        assert_eq!(
            ok(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello, trailing").unwrap(),
            b"hello"
        );
        assert_eq!(
            ok(b"HTTP/1.0 200 OK\r\n\r\nuntil close").unwrap(),
            b"until close"
        );
        assert_eq!(
            ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").unwrap(),
            b"hello world"
        );
        for status in ["403 Forbidden", "404 Not Found", "410 Gone"] {
            let answer = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
            let e = ok(answer.as_bytes()).unwrap_err();
            assert!(e.is_absent(), "{status}");
            assert_eq!(e.reason, "the server has no such document");
        }
        for (bad, reason) in [
            (
                &b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"[..],
                "the server did not answer 200",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello",
                "the answer is incomplete",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                "the answer is incomplete",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nx",
                "the answer is not valid HTTP",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                "the answer is not valid HTTP",
            ),
            (b"SSH-2.0 200\r\n\r\n", "the answer is not valid HTTP"),
            (
                b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
                "the answer is not valid HTTP",
            ),
            (b"HTTP/1.1 200 OK", "the answer is not valid HTTP"),
        ] {
            assert_eq!(
                ok(bad),
                Err(FetchError::new(reason)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let big = format!("HTTP/1.1 200 OK\r\n\r\n{}", "x".repeat(MAX_FETCH_BYTES + 1));
        assert_eq!(
            ok(big.as_bytes()),
            Err(FetchError::new("the answer is too large"))
        );
        let big_chunk = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            MAX_FETCH_BYTES + 1
        );
        assert_eq!(
            ok(big_chunk.as_bytes()),
            Err(FetchError::new("the answer is too large"))
        );
    }
}
