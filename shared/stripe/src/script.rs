//! Tests' Stripe: a [`Transport`] answering from a script and recording what was sent (with the
//! manual clock's time), and a [`Rig`] of a [`StripeClient`] on it whose waits are recorded and
//! advance the clock instead of sleeping.

use crate::client::{Pause, StripeClient};
use crate::retry::RetryPolicy;
use crate::transport::{Answer, Failure, Request, Transport};
use inbox_core::clock::{Clock as _, ManualClock};
use inbox_core::outbox::bucket::shared::LocalBucket;
use inbox_core::outbox::bucket::Rate;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
pub struct Script {
    pub answers: Mutex<VecDeque<Result<Answer, Failure>>>,
    pub sent: Mutex<Vec<(Request, i64)>>,
    pub clock: Arc<ManualClock>,
}

impl Transport for Arc<Script> {
    async fn send(&self, request: &Request) -> Result<Answer, Failure> {
        self.sent
            .lock()
            .unwrap()
            .push((request.clone(), self.clock.now_millis()));
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .expect("the script has an answer for every request")
    }
}

impl Script {
    /// The idempotency keys of the requests sent, in order.
    pub fn keys(&self) -> Vec<Option<String>> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|(r, _)| r.idempotency_key.clone())
            .collect()
    }
}

/// An answer with `status` and a JSON `body`, no headers.
pub fn answer(status: u16, body: serde_json::Value) -> Result<Answer, Failure> {
    Ok(Answer {
        status,
        should_retry: None,
        replayed: false,
        request_id: None,
        body: serde_json::to_vec(&body).unwrap(),
    })
}

/// The same with `Stripe-Should-Retry`.
pub fn answer_retry(
    status: u16,
    body: serde_json::Value,
    should_retry: Option<bool>,
) -> Result<Answer, Failure> {
    answer(status, body).map(|a| Answer { should_retry, ..a })
}

/// Requests a second enough for nothing to wait.
pub fn fast() -> Rate {
    Rate {
        per_sec: 1000.0,
        burst: 10,
    }
}

pub type TestClient = StripeClient<Arc<Script>, Arc<LocalBucket>>;

/// What a test drives (`it`) and looks at.
pub struct Rig<S> {
    pub script: Arc<Script>,
    pub waits: Arc<Mutex<Vec<Duration>>>,
    pub bucket: Arc<LocalBucket>,
    pub it: S,
}

/// A client on `answers` at `rate` (default retries, a draw of 0.5), made into `it` by `wrap`.
pub fn rig<S>(
    answers: Vec<Result<Answer, Failure>>,
    rate: Rate,
    wrap: impl FnOnce(TestClient) -> S,
) -> Rig<S> {
    let clock = Arc::new(ManualClock::at_millis(1_000_000));
    let script = Arc::new(Script {
        answers: Mutex::new(answers.into()),
        sent: Mutex::default(),
        clock: clock.clone(),
    });
    let waits = Arc::new(Mutex::new(Vec::new()));
    let (w, c) = (waits.clone(), clock.clone());
    let pause: Pause = Arc::new(move |d| {
        w.lock().unwrap().push(d);
        c.advance_millis(d.as_millis() as i64);
        Box::pin(async {})
    });
    let bucket = Arc::new(LocalBucket::default());
    let client = StripeClient::new(script.clone(), bucket.clone(), rate, RetryPolicy::default())
        .with_pause(clock, pause, Arc::new(|| 0.5));
    Rig {
        script,
        waits,
        bucket,
        it: wrap(client),
    }
}
