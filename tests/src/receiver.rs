//! A programmable local HTTP receiver for deliveries (127.0.0.1, a free port): records every
//! request (arrival time, headers, body) and answers as a closure says (status, headers, delay).
//! Each connection is served as its own task, so a slow answer never holds up another.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Hit {
    pub at: Instant,
    pub path: String,
    /// Lower-case names.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Hit {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or("")
    }
}

/// The answer to a request.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub delay: Duration,
    /// The response body (`None`: `{"ok":true}`).
    pub body: Option<Vec<u8>>,
}

impl Answer {
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            delay: Duration::ZERO,
            body: None,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn with_body(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }

    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

type Behaviour = Arc<dyn Fn(usize, &Hit) -> Answer + Send + Sync>;

/// A running receiver; stops when dropped (its open connections are closed with it).
pub struct Receiver {
    pub url: String,
    pub port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Receiver {
    /// Answers every request with `status`.
    pub fn always(status: u16) -> Self {
        Self::start(move |_, _| Answer::status(status))
    }

    /// Answers the `n`-th request (1-based) as `behaviour` says.
    ///
    /// Served by hyper on a runtime of its own (one thread, every connection a task, keep-alive as
    /// a receiver in the field does), so a test's own runtime never starves it. (It was
    /// `tiny_http`, whose thread pool can leave a new connection unserved while a notified thread
    /// has not woken yet: under load a POST hung until the deliverer's 10 s timeout.)
    pub fn start(behaviour: impl Fn(usize, &Hit) -> Answer + Send + Sync + 'static) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let port = listener.local_addr().expect("an address").port();
        let hits: Arc<Mutex<Vec<Hit>>> = Arc::default();
        let behaviour: Behaviour = Arc::new(behaviour);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let h = hits.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the receiver's runtime");
            runtime.block_on(serve(listener, h, behaviour, stopped));
        });
        Self {
            url: format!("http://127.0.0.1:{port}/hooks"),
            port,
            hits,
            stop: Some(stop),
        }
    }

    /// Every request so far, in arrival order.
    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().expect("hits").clone()
    }

    pub fn count(&self) -> usize {
        self.hits.lock().expect("hits").len()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Accepts connections until `stopped`; each is served as its own task.
async fn serve(
    listener: std::net::TcpListener,
    hits: Arc<Mutex<Vec<Hit>>>,
    behaviour: Behaviour,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let (hits, behaviour) = (hits.clone(), behaviour.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                answer(request, hits.clone(), behaviour.clone())
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Records one request and answers it as the behaviour says.
async fn answer(
    request: hyper::Request<hyper::body::Incoming>,
    hits: Arc<Mutex<Vec<Hit>>>,
    behaviour: Behaviour,
) -> Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, std::convert::Infallible> {
    use http_body_util::BodyExt as _;
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let hit = Hit {
        at: Instant::now(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let n = {
        let mut all = hits.lock().expect("hits");
        all.push(hit.clone());
        all.len()
    };
    let answer = behaviour(n, &hit);
    if !answer.delay.is_zero() {
        tokio::time::sleep(answer.delay).await;
    }
    let body = answer.body.unwrap_or_else(|| b"{\"ok\":true}".to_vec());
    let mut response = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(body)));
    *response.status_mut() =
        hyper::StatusCode::from_u16(answer.status).expect("a status code the receiver can send");
    for (k, v) in &answer.headers {
        response.headers_mut().append(
            hyper::header::HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
            hyper::header::HeaderValue::from_str(v).expect("a header value"),
        );
    }
    Ok(response)
}
