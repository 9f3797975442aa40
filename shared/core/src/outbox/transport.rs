//! How a delivery leaves: the [`Transport`] capability (one POST, its result as an
//! [`AttemptResult`]). The deployed one is the deliver function's HTTP client with its SSRF guard;
//! tests may use anything that answers.

use super::policy::AttemptResult;
use std::future::Future;
use std::time::Duration;

/// One request to send.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub url: &'a str,
    /// Header names in lower case; values are signatures and ids (never logged).
    pub headers: &'a [(String, String)],
    /// The event's original payload bytes.
    pub body: &'a [u8],
    /// The whole request's deadline (connect, send, answer, first bytes of the body).
    pub timeout: Duration,
}

/// Sends deliveries.
pub trait Transport: Send + Sync {
    /// POSTs and reports what came back: the status with `Retry-After` and at most
    /// [`super::delivery::BODY_HEAD_BYTES`] of the body, or why there is no answer.
    fn post<'a>(&'a self, request: Outgoing<'a>)
        -> impl Future<Output = AttemptResult> + Send + 'a;
}

impl<T: Transport> Transport for std::sync::Arc<T> {
    fn post<'a>(
        &'a self,
        request: Outgoing<'a>,
    ) -> impl Future<Output = AttemptResult> + Send + 'a {
        (**self).post(request)
    }
}
