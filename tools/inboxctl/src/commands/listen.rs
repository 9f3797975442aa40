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
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::destination::SecretText;
use inbox_core::signature::{self, Request, Scheme, Secret, Spec};
use serde_json::json;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    let server = tiny_http::Server::http(("127.0.0.1", args.port))
        .map_err(|e| failed(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let json = ctx.json();
    if !json {
        eprintln!(
            "listening on http://127.0.0.1:{} (Ctrl-C to stop); answering {}",
            args.port, args.status
        );
    }
    let count = Arc::new(AtomicU64::new(0));
    let out = Arc::new(Mutex::new(()));
    let mut handlers = Vec::new();
    for mut request in server.incoming_requests() {
        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
        let (scheme, args2, out) = (scheme.clone(), args.clone(), out.clone());
        handlers.push(std::thread::spawn(move || {
            let mut body = Vec::new();
            let read = request.as_reader().read_to_end(&mut body);
            let mut headers = http::HeaderMap::new();
            for h in request.headers() {
                if let (Ok(name), Ok(value)) = (
                    http::HeaderName::from_bytes(h.field.as_str().as_str().as_bytes()),
                    http::HeaderValue::from_str(h.value.as_str()),
                ) {
                    headers.append(name, value);
                }
            }
            let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
            let now = SystemClock.now_millis();
            let verdict = match read {
                Ok(_) => scheme.verify(Request::new(&headers, &body, now.div_euclid(1000))).ready().unwrap_or(Ok(())),
                Err(_) => Ok(()),
            };
            let error = match (&read, &verdict) {
                (Err(e), _) => Some(format!("unreadable body: {e}")),
                (_, Err(e)) => Some(e.to_string()),
                _ => None,
            };
            let (status, retry_after) = answer(&args2, n, error.is_none());
            let line = if json {
                let mut v = json!({
                    "n": n, "at_ms": now, "method": request.method().as_str(), "path": request.url(),
                    "webhook_id": header("webhook-id"), "timestamp": header("webhook-timestamp"),
                    "source": header("webhook-source"), "event_type": header("webhook-event-type"),
                    "verified": error.is_none(), "error": error, "answered": status, "bytes": body.len(),
                });
                if args2.show_body {
                    v["body"] = json!(String::from_utf8_lossy(&body));
                }
                v.to_string()
            } else {
                let mut line = format!(
                    "#{n} {} {} {}/{} webhook-id={} {} → {status}",
                    crate::when::human(now),
                    request.url(),
                    header("webhook-source"),
                    header("webhook-event-type"),
                    header("webhook-id"),
                    error.as_deref().map_or_else(|| "signature ok".to_owned(), |e| format!("SIGNATURE INVALID ({e})")),
                );
                if args2.show_body {
                    line.push('\n');
                    line.push_str(&String::from_utf8_lossy(&body));
                }
                line
            };
            if let Ok(_guard) = out.lock() {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
            }
            if args2.delay_ms > 0 {
                std::thread::sleep(Duration::from_millis(args2.delay_ms));
            }
            let mut response = tiny_http::Response::from_string(json!({"received": error.is_none()}).to_string()).with_status_code(status);
            if let Some(secs) = retry_after {
                if let Ok(h) = tiny_http::Header::from_bytes("Retry-After", secs.to_string()) {
                    response.add_header(h);
                }
            }
            let _ = request.respond(response);
        }));
        handlers.retain(|h| !h.is_finished());
        if args.max.is_some_and(|max| n >= max) {
            break;
        }
    }
    for h in handlers {
        let _ = h.join();
    }
    Ok(())
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
