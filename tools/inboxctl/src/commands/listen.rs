//! `inboxctl listen`: a local receiver of deliveries (like `stripe listen`): verifies each
//! delivery's Standard Webhooks signature with the given secret(s) (the core's own scheme),
//! prints one line per delivery (`--json`: one JSON object per line), and answers as told:
//! 200, or `--status`, with `--retry-after` on a 429/503, a 500 on every `--fail-every`-th, after
//! `--delay-ms`. A delivery whose signature does not verify gets a 401. For demos, `make dev`, and
//! tests. The secret comes from `INBOXCTL_SECRET` or a prompt rather than the command line
//! ([`crate::secret_input`]); a payload is printed only with `--show-body`.

use crate::cli::ListenArgs;
use crate::context::Context;
use crate::error::{failed, usage, Result};
use crate::secret_input;
use crate::server::{self, BodyError};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::destination::SecretText;
use inbox_core::signature::{self, Request, Scheme, Secret, Spec};
use serde_json::json;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The most a delivery's body may be: above anything the ingest path accepts (6 MiB).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// How long a delivery's body may take to arrive.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The answer to the `n`-th delivery (1-based): its status and `Retry-After`.
pub fn answer(args: &ListenArgs, n: u64, verified: bool) -> (u16, Option<u64>) {
    if !verified {
        return (401, None);
    }
    let status = match args.fail_every {
        Some(k) if n.is_multiple_of(k) => 500,
        _ => args.status,
    };
    let retry_after = args.retry_after.filter(|_| status == 429 || status == 503);
    (status, retry_after)
}

pub async fn run(ctx: &Context, args: ListenArgs) -> Result<()> {
    let given = secret_input::secrets_from(
        &args.secrets,
        ctx.env(),
        secret_input::Ask::Required,
        secret_input::ask_stdin,
    )?;
    let secrets = given
        .iter()
        .map(|s| {
            SecretText::parse(s)
                .map(|t| Secret::from(t.expose()))
                .map_err(|e| usage(e.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    let settings = serde_json::Map::new();
    let scheme: Arc<dyn Scheme> = signature::build(
        "standard-webhooks",
        &Spec::new(&settings, &secrets, Duration::from_secs(300)),
    )
    .map_err(|e| usage(e.to_string()))?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| failed(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = listener.local_addr().map_or(args.port, |a| a.port());
    let json = ctx.json();
    if !json {
        eprintln!(
            "listening on http://127.0.0.1:{port} (Ctrl-C to stop); answering {}",
            args.status
        );
    }
    let (stop, stopped) = watch::channel(false);
    let listener_state = Arc::new(Listener {
        scheme,
        args,
        json,
        count: AtomicU64::new(0),
        out: Mutex::new(()),
        stop,
    });
    server::serve(
        listener,
        move |request| receive(listener_state.clone(), request),
        stopped,
    )
    .await;
    Ok(())
}

/// What every delivery is received with.
struct Listener {
    scheme: Arc<dyn Scheme>,
    args: ListenArgs,
    json: bool,
    /// Deliveries so far.
    count: AtomicU64,
    /// One line at a time on standard output.
    out: Mutex<()>,
    /// Told once `--max` deliveries have arrived.
    stop: watch::Sender<bool>,
}

/// Receives one delivery: reads its body, verifies its signature, prints it, and answers.
async fn receive(
    state: Arc<Listener>,
    request: hyper::Request<hyper::body::Incoming>,
) -> server::Reply {
    let args = &state.args;
    let n = state.count.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(max) = args.max {
        if n > max {
            // Arrived with the last one: not received (the listener is stopping).
            return server::reply(
                503,
                "application/json",
                json!({"received": false}).to_string(),
            );
        }
        if n == max {
            // No new connection; those open end once their requests are answered.
            let _ = state.stop.send(true);
        }
    }
    let (parts, body) = request.into_parts();
    let read = server::read_body(body, MAX_BODY_BYTES, BODY_TIMEOUT).await;
    let mut headers = http::HeaderMap::new();
    for (name, value) in &parts.headers {
        if value.to_str().is_ok() {
            headers.append(name.clone(), value.clone());
        }
    }
    let header = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let now = SystemClock.now_millis();
    let body = read.as_deref().unwrap_or_default();
    let error = match &read {
        Ok(body) => state
            .scheme
            .verify(Request::new(&headers, body, now.div_euclid(1000)))
            .ready()
            .unwrap_or(Ok(()))
            .err()
            .map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    };
    let (mut status, retry_after) = answer(args, n, error.is_none());
    // A body too large or too slow is answered as such (413, 408); an unreadable one as before (401).
    let refused = read
        .as_ref()
        .err()
        .filter(|e| !matches!(e, BodyError::Unreadable(_)));
    if let Some(e) = refused {
        status = e.status();
    }
    let url = server::target(&parts);
    let line = if state.json {
        let mut v = json!({
            "n": n, "at_ms": now, "method": parts.method.as_str(), "path": url,
            "webhook_id": header("webhook-id"), "timestamp": header("webhook-timestamp"),
            "source": header("webhook-source"), "event_type": header("webhook-event-type"),
            "verified": error.is_none(), "error": error, "answered": status, "bytes": body.len(),
        });
        if args.show_body {
            v["body"] = json!(String::from_utf8_lossy(body));
        }
        v.to_string()
    } else {
        let mut line = format!(
            "#{n} {} {} {}/{} webhook-id={} {} → {status}",
            crate::when::human(now),
            url,
            header("webhook-source"),
            header("webhook-event-type"),
            header("webhook-id"),
            error.as_deref().map_or_else(
                || "signature ok".to_owned(),
                |e| format!("SIGNATURE INVALID ({e})")
            ),
        );
        if args.show_body {
            line.push('\n');
            line.push_str(&String::from_utf8_lossy(body));
        }
        line
    };
    if let Ok(_guard) = state.out.lock() {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    }
    if args.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(args.delay_ms)).await;
    }
    let mut reply = json!({"received": error.is_none()});
    if let Some(e) = refused {
        reply["error"] = json!(e.to_string());
    }
    let mut response = server::reply(status, "application/json", reply.to_string());
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(status: u16, retry_after: Option<u64>, fail_every: Option<u64>) -> ListenArgs {
        ListenArgs {
            port: 0,
            secrets: Vec::new(),
            status,
            retry_after,
            fail_every,
            delay_ms: 0,
            show_body: false,
            max: None,
        }
    }

    #[test]
    fn answers() {
        assert_eq!(answer(&args(200, None, None), 1, true), (200, None));
        assert_eq!(
            answer(&args(200, None, None), 1, false),
            (401, None),
            "a bad signature is refused"
        );
        assert_eq!(answer(&args(429, Some(7), None), 1, true), (429, Some(7)));
        assert_eq!(
            answer(&args(500, Some(7), None), 1, true),
            (500, None),
            "Retry-After only with 429/503"
        );
        let every3 = args(200, None, Some(3));
        let got: Vec<u16> = (1..=6).map(|n| answer(&every3, n, true).0).collect();
        assert_eq!(got, vec![200, 200, 500, 200, 200, 500]);
    }
}
