//! How a delivery leaves: the [`Transport`] capability (one POST, its result as an
//! [`AttemptResult`]). The deployed one is the deliver function's HTTP client with its SSRF guard;
//! tests use [`ScriptedTransport`], which answers what it is told and keeps what was sent.

use super::attempt::AttemptResult;
pub use bytes::Bytes;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One request to send.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub url: &'a str,
    /// Header names in lower case; values are signatures and ids (never logged).
    pub headers: &'a [(String, String)],
    /// The event's original payload bytes, shared by the deliveries of the event (sent as they
    /// are: never copied).
    pub body: &'a bytes::Bytes,
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

/// A request as [`ScriptedTransport`] received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
}

impl Sent {
    /// The value of header `name` (lower case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A transport for tests: answers with the results it was given, in order (a 200 once they run
/// out), and keeps every request. With [`Self::gated`], every request waits until that many are in
/// flight at once: concurrent workers then all read the destination's state before any records.
#[derive(Debug, Default)]
pub struct ScriptedTransport {
    answers: Mutex<VecDeque<AttemptResult>>,
    sent: Mutex<Vec<Sent>>,
    gate: Option<tokio::sync::Barrier>,
}

impl ScriptedTransport {
    /// Answers every request with 200.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers with `answers`, in order, then 200.
    pub fn answering(answers: impl IntoIterator<Item = AttemptResult>) -> Self {
        Self {
            answers: Mutex::new(answers.into_iter().collect()),
            ..Self::default()
        }
    }

    /// An HTTP answer with `status` (and `Retry-After`), no body.
    pub fn status(status: u16, retry_after: Option<&str>) -> AttemptResult {
        AttemptResult::Answered {
            status,
            retry_after: retry_after.map(str::to_owned),
            body: Vec::new(),
        }
    }

    /// Holds each request until `n` are waiting, then answers them all.
    pub fn gated(mut self, n: usize) -> Self {
        self.gate = Some(tokio::sync::Barrier::new(n));
        self
    }

    /// Every request received, in order.
    pub fn sent(&self) -> Vec<Sent> {
        lock(&self.sent).clone()
    }
}

impl Transport for ScriptedTransport {
    async fn post<'a>(&'a self, request: Outgoing<'a>) -> AttemptResult {
        lock(&self.sent).push(Sent {
            url: request.url.to_owned(),
            headers: request.headers.to_vec(),
            body: request.body.to_vec(),
            timeout: request.timeout,
        });
        if let Some(gate) = &self.gate {
            gate.wait().await;
        }
        lock(&self.answers)
            .pop_front()
            .unwrap_or_else(|| Self::status(200, None))
    }
}

/// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
