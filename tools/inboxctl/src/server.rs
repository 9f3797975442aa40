//! The HTTP/1.1 server under `inboxctl listen` and `inboxctl console`: hyper on the command's
//! tokio runtime, every connection its own task (keep-alive kept), so a slow client, a slow body
//! or a slow answer never holds up another request. (It was `tiny_http`, whose thread pool can
//! leave a new connection queued while every thread serves a keep-alive connection, and whose
//! console loop read one form body at a time.)
//!
//! A request's head must arrive within [`HEAD_TIMEOUT`]; its body is read by the handler with
//! [`read_body`], bounded in size and time.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Body as _, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long a client may take to send a request's head (also how long an idle keep-alive
/// connection waits for the next one).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// What a handler answers.
pub type Reply = Response<Full<Bytes>>;

/// Why a body was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// Longer than the bound (said by `Content-Length`, or found while reading).
    TooLarge { max: usize },
    /// Not all there within the time allowed.
    TimedOut { after: Duration },
    /// The connection failed or the framing was wrong.
    Unreadable(String),
}

impl BodyError {
    /// The status that answers it: 413, 408 or 400.
    pub fn status(&self) -> u16 {
        match self {
            Self::TooLarge { .. } => 413,
            Self::TimedOut { .. } => 408,
            Self::Unreadable(_) => 400,
        }
    }
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { max } => write!(f, "the body is larger than {max} bytes"),
            Self::TimedOut { after } => write!(
                f,
                "the body did not arrive within {} s",
                after.as_secs_f64()
            ),
            Self::Unreadable(e) => write!(f, "unreadable body: {e}"),
        }
    }
}

/// Reads `body` whole: at most `max` bytes (a larger `Content-Length` is refused before anything
/// is read), all of it within `within`.
pub async fn read_body(
    mut body: Incoming,
    max: usize,
    within: Duration,
) -> Result<Vec<u8>, BodyError> {
    let too_large = BodyError::TooLarge { max };
    if body.size_hint().lower() > max as u64 {
        return Err(too_large);
    }
    let read = async {
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| BodyError::Unreadable(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                if out.len() + data.len() > max {
                    return Err(too_large);
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(out)
    };
    tokio::time::timeout(within, read)
        .await
        .unwrap_or(Err(BodyError::TimedOut { after: within }))
}

/// Resolves once `stop` says so (never if its sender is gone without saying it).
async fn stopped(mut stop: watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Serves `listener` until `stop` says so, each connection as its own task answered by `handle`;
/// then lets every request under way finish (keep-alive ends), closes idle connections, and
/// returns once every connection is closed.
pub async fn serve<H, F>(listener: TcpListener, handle: H, stop: watch::Receiver<bool>)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let mut connections = tokio::task::JoinSet::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT);
    loop {
        let stream = tokio::select! {
            () = stopped(stop.clone()) => break,
            // Finished connections are reaped as they end (a panicking handler ends only its own).
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors or the like: give the open connections a moment to end.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let connection = http.serve_connection(
            TokioIo::new(stream),
            hyper::service::service_fn({
                let handle = handle.clone();
                move |request| {
                    let answer = handle(request);
                    async move { Ok::<_, Infallible>(answer.await) }
                }
            }),
        );
        let stop = stop.clone();
        connections.spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = stopped(stop) => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// A response with `status`, `content_type` and `body`.
pub fn reply(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    response
}

/// The request-target as the client sent it (`/path?query`).
pub fn target(request: &http::request::Parts) -> String {
    request.uri.to_string()
}

/// The first `name` header, if it is visible ASCII.
pub fn header(request: &http::request::Parts, name: &str) -> Option<String> {
    request
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};
    use std::net::{SocketAddr, TcpStream};

    /// Serves on a free port, on a runtime of its own, answering every request with its body's
    /// size or why it was not read (`max` bytes within `within`). Stops when the sender drops.
    fn start(max: usize, within: Duration) -> (SocketAddr, watch::Sender<bool>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = watch::channel(false);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                let handle = move |request: Request<Incoming>| async move {
                    match read_body(request.into_body(), max, within).await {
                        Ok(body) => reply(200, "text/plain", format!("{} bytes", body.len())),
                        Err(e) => reply(e.status(), "text/plain", e.to_string()),
                    }
                };
                serve(listener, handle, stopped).await;
            });
        });
        (addr, stop)
    }

    /// Sends `request` on a new connection and reads the answer until the server closes it.
    fn exchange(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        // Generous for a loaded machine: each of these is answered at once.
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out)
            .unwrap_or_else(|e| panic!("no answer to {request:?}: {e} (got {out:?})"));
        out
    }

    #[test]
    fn a_stalled_body_holds_up_no_other_connection() {
        let (addr, _stop) = start(64 * 1024, Duration::from_secs(60));
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\nhello")
            .unwrap();
        let answer = exchange(
            addr,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        );
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("3 bytes"), "{answer}");
        slow.set_nonblocking(true).unwrap();
        let pending = slow.read(&mut [0u8; 1]);
        assert!(
            matches!(&pending, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the stalled one is still being read: {pending:?}"
        );
    }

    #[test]
    fn bodies_are_bounded_in_size_and_time() {
        let (addr, _stop) = start(10, Duration::from_secs(1));
        let declared = exchange(
            addr,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nConnection: close\r\n\r\n",
        );
        assert!(declared.starts_with("HTTP/1.1 413"), "{declared}");
        assert!(declared.ends_with("larger than 10 bytes"), "{declared}");
        let chunked = exchange(
            addr,
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
             6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n",
        );
        assert!(chunked.starts_with("HTTP/1.1 413"), "{chunked}");
        // Sent in part, then nothing: a 408 once the time is up, and the connection closed.
        let slow = exchange(
            addr,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\nabc",
        );
        assert!(slow.starts_with("HTTP/1.1 408"), "{slow}");
        assert!(slow.ends_with("did not arrive within 1 s"), "{slow}");
        let fits = exchange(
            addr,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789",
        );
        assert!(fits.ends_with("10 bytes"), "{fits}");
    }

    #[test]
    fn a_stop_lets_the_request_under_way_finish_then_returns() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = watch::channel(false);
        let stop = std::sync::Arc::new(stop);
        let server = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                let handle = move |_: Request<Incoming>| {
                    let stop = stop.clone();
                    async move {
                        // Told to stop while this request is under way: it is still answered.
                        stop.send(true).unwrap();
                        tokio::task::yield_now().await;
                        reply(200, "text/plain", "answered")
                    }
                };
                serve(listener, handle, stopped).await;
            });
        });
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // Keep-alive asked for: the connection is closed because the server stops.
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        assert!(out.ends_with("answered"), "{out}");
        // And `serve` returned: no new connection is taken.
        server.join().unwrap();
    }
}
