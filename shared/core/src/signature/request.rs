//! What [`super::Scheme::verify`] and [`super::Scheme::sign`] work on and answer: the request to
//! verify ([`Request`]), the verdict ([`Verdict`], ready or after I/O), the message to sign
//! ([`Unsigned`]) and what signing produced ([`Signed`]). None of their `Debug` output shows a
//! header value or a body.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::SignatureError;

/// A request to verify, as received. Build it with [`Request::new`] and the `with_*` methods:
/// fields may be added without changing [`super::Scheme`].
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    pub headers: &'a HeaderMap,
    /// The exact raw body bytes.
    pub body: &'a [u8],
    /// Now, in seconds since the epoch (the caller's injectable clock).
    pub now_unix: i64,
    /// The client's address, when the transport gives it (for schemes with an IP allow-list).
    pub source_ip: Option<IpAddr>,
    /// The public URL the request was sent to, query string included, when known (for schemes
    /// that sign it).
    pub url: Option<&'a str>,
}

impl<'a> Request<'a> {
    pub fn new(headers: &'a HeaderMap, body: &'a [u8], now_unix: i64) -> Self {
        Self {
            headers,
            body,
            now_unix,
            source_ip: None,
            url: None,
        }
    }

    pub fn with_source_ip(self, source_ip: IpAddr) -> Self {
        Self {
            source_ip: Some(source_ip),
            ..self
        }
    }

    pub fn with_url(self, url: &'a str) -> Self {
        Self {
            url: Some(url),
            ..self
        }
    }
}

/// Header names and the body length only: values are signatures, the body is the payload.
impl fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("body_len", &self.body.len())
            .field("now_unix", &self.now_unix)
            .field("source_ip", &self.source_ip)
            .field("url", &self.url)
            .finish()
    }
}

/// A verification that may need I/O first.
pub type PendingVerification<'a> =
    Pin<Box<dyn Future<Output = Result<(), SignatureError>> + Send + 'a>>;

/// The answer of [`super::Scheme::verify`]: decided now (no allocation, no await), or after I/O.
#[must_use]
pub enum Verdict<'a> {
    Ready(Result<(), SignatureError>),
    Pending(PendingVerification<'a>),
}

impl Verdict<'_> {
    /// The outcome, awaiting the I/O if there is any.
    pub async fn resolve(self) -> Result<(), SignatureError> {
        match self {
            Self::Ready(result) => result,
            Self::Pending(future) => future.await,
        }
    }

    /// The outcome if it was decided without I/O (every HMAC scheme); `None` if it must be
    /// awaited ([`Verdict::resolve`]).
    pub fn ready(self) -> Option<Result<(), SignatureError>> {
        match self {
            Self::Ready(result) => Some(result),
            Self::Pending(_) => None,
        }
    }
}

impl From<Result<(), SignatureError>> for Verdict<'_> {
    fn from(result: Result<(), SignatureError>) -> Self {
        Self::Ready(result)
    }
}

impl fmt::Debug for Verdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ready(result) => f.debug_tuple("Ready").field(result).finish(),
            Self::Pending(_) => f.write_str("Pending"),
        }
    }
}

/// A message to sign. Build it with [`Unsigned::new`] (and `with_url`): fields may be added
/// without changing [`super::Scheme`].
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Unsigned<'a> {
    pub body: &'a [u8],
    /// Unix seconds (non-negative for the timestamped schemes).
    pub timestamp: i64,
    /// Signed where the scheme signs an id (Standard Webhooks `webhook-id`) and sent as the id
    /// header where the scheme has one (GitHub `X-GitHub-Delivery`, Shopify
    /// `X-Shopify-Webhook-Id`); ignored otherwise. An id that is not a valid header value is left
    /// out of the headers.
    pub msg_id: &'a str,
    /// The public URL the message goes to (for schemes that sign it).
    pub url: Option<&'a str>,
}

impl<'a> Unsigned<'a> {
    pub fn new(body: &'a [u8], timestamp: i64, msg_id: &'a str) -> Self {
        Self {
            body,
            timestamp,
            msg_id,
            url: None,
        }
    }

    pub fn with_url(self, url: &'a str) -> Self {
        Self {
            url: Some(url),
            ..self
        }
    }
}

impl fmt::Debug for Unsigned<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unsigned")
            .field("body_len", &self.body.len())
            .field("timestamp", &self.timestamp)
            .field("msg_id", &self.msg_id)
            .field("url", &self.url)
            .finish()
    }
}

/// What [`super::Scheme::sign`] produced.
#[derive(Clone)]
#[non_exhaustive]
pub struct Signed {
    /// The headers to send (the signature and what the scheme signs with it).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body to send instead of the given one, for schemes that sign inside the body.
    pub body: Option<Vec<u8>>,
}

impl Signed {
    /// Headers only; the body is sent as given.
    pub fn headers(headers: Vec<(HeaderName, HeaderValue)>) -> Self {
        Self {
            headers,
            body: None,
        }
    }

    /// The headers as a map.
    pub fn header_map(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            map.append(name.clone(), value.clone());
        }
        map
    }
}

/// Header names only: the values are signatures.
impl fmt::Debug for Signed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signed")
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("body_len", &self.body.as_ref().map(Vec::len))
            .finish()
    }
}
