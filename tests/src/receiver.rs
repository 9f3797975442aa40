//! A programmable local HTTP receiver for deliveries (127.0.0.1, a free port): records every
//! request (arrival time, headers, body) and answers as a closure says (status, headers, delay).
//! Each request is answered on its own thread, so a slow answer never holds up another.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// A running receiver; stops when dropped.
pub struct Receiver {
    pub url: String,
    pub port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    /// Answers every request with `status`.
    pub fn always(status: u16) -> Self {
        Self::start(move |_, _| Answer::status(status))
    }

    /// Answers the `n`-th request (1-based) as `behaviour` says.
    pub fn start(behaviour: impl Fn(usize, &Hit) -> Answer + Send + Sync + 'static) -> Self {
        let server = tiny_http::Server::http("127.0.0.1:0").expect("bind a local port");
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let hits: Arc<Mutex<Vec<Hit>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let behaviour: Behaviour = Arc::new(behaviour);
        let (h, s) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let Ok(Some(mut request)) = server.recv_timeout(Duration::from_millis(50)) else {
                    continue;
                };
                let mut body = Vec::new();
                let _ = request.as_reader().read_to_end(&mut body);
                let hit = Hit {
                    at: Instant::now(),
                    path: request.url().to_owned(),
                    headers: request
                        .headers()
                        .iter()
                        .map(|x| {
                            (
                                x.field.as_str().as_str().to_ascii_lowercase(),
                                x.value.as_str().to_owned(),
                            )
                        })
                        .collect(),
                    body,
                };
                let n = {
                    let mut all = h.lock().expect("hits");
                    all.push(hit.clone());
                    all.len()
                };
                let answer = behaviour(n, &hit);
                std::thread::spawn(move || {
                    std::thread::sleep(answer.delay);
                    let body = answer
                        .body
                        .clone()
                        .unwrap_or_else(|| b"{\"ok\":true}".to_vec());
                    let mut response =
                        tiny_http::Response::from_data(body).with_status_code(answer.status);
                    for (k, v) in &answer.headers {
                        response.add_header(
                            tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes())
                                .expect("a header"),
                        );
                    }
                    let _ = request.respond(response);
                });
            }
        });
        Self {
            url: format!("http://127.0.0.1:{port}/hooks"),
            port,
            hits,
            stop,
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
        self.stop.store(true, Ordering::SeqCst);
    }
}
