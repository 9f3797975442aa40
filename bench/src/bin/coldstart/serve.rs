//! A served run: the ingest binary started as in the cloud (secrets from "Secrets Manager", the
//! table on an AWS endpoint), then fed signed webhooks through a Runtime API until its memory
//! settles.
//!
//! A fake AWS endpoint on 127.0.0.1 answers the two requests the ingest function makes:
//! Secrets Manager's `GetSecretValue` (after a configurable delay, standing for the round trip,
//! so the init's overlap shows) and DynamoDB's `PutItem` (`{}`: stored). The Runtime API serves
//! `count` invocations, each a new signed 2 KB Stripe event in an API Gateway v2 envelope, one
//! after the other as Lambda does, and records when the first response is posted. After the
//! last one it reads the process's peak resident set (`VmHWM` in `/proc/<pid>/status`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a served run measured.
pub struct Served {
    /// Spawn → the first `next` (the init).
    pub init: Duration,
    /// Spawn → the first response posted.
    pub first_response: Duration,
    /// Invocations answered, and how long they took after the first.
    pub answered: usize,
    pub elapsed: Duration,
    /// Peak resident set after the last one, bytes.
    pub peak_rss: u64,
    /// `statusCode`s other than 200 among the responses.
    pub not_ok: usize,
}

/// One HTTP/1.1 request: its first line, headers and body.
struct Request {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        line: line.trim_end().to_owned(),
        headers,
        body,
    })
}

fn respond(writer: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) -> bool {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes()).is_ok() && writer.write_all(body).is_ok()
}

fn serve(
    listener: TcpListener,
    handle: impl Fn(Request, &mut TcpStream) -> bool + Send + Sync + 'static,
) {
    let handle = Arc::new(handle);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let handle = handle.clone();
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let Ok(mut writer) = stream.try_clone() else {
                    return;
                };
                let mut reader = BufReader::new(stream);
                while let Some(req) = read_request(&mut reader) {
                    if !handle(req, &mut writer) {
                        return;
                    }
                }
            });
        }
    });
}

fn bind() -> Result<(TcpListener, SocketAddr), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    Ok((listener, addr))
}

/// The fake AWS endpoint: Secrets Manager after `delay`, DynamoDB at once.
pub fn aws_endpoint(secrets_json: String, delay: Duration) -> Result<SocketAddr, String> {
    let (listener, addr) = bind()?;
    serve(listener, move |req, w| {
        let target = req
            .headers
            .iter()
            .find(|(k, _)| k == "x-amz-target")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        let body = if target.starts_with("secretsmanager.") {
            std::thread::sleep(delay);
            serde_json::json!({"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:inbox",
                               "Name": "inbox", "SecretString": secrets_json})
            .to_string()
        } else {
            "{}".to_owned()
        };
        respond(
            w,
            "200 OK",
            &[("content-type", "application/x-amz-json-1.1".into())],
            body.as_bytes(),
        )
    });
    Ok(addr)
}

/// A signed Stripe `checkout.session.completed` of about 2 KB in an API Gateway v2 event.
fn invocation(n: usize, secret: &str) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let padding = "x".repeat(1500);
    let body = serde_json::json!({"id": format!("evt_served_{n:012}"), "object": "event",
        "type": "checkout.session.completed", "created": 1_795_000_000, "livemode": false,
        "data": {"object": {"id": "cs_test_1", "object": "checkout.session", "amount_total": 2000,
                 "currency": "usd", "metadata": {"tenant": "acme", "padding": padding}}}})
    .to_string();
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut mac =
        Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap_or_else(|_| unreachable!());
    mac.update(format!("{t}.{body}").as_bytes());
    let signature = format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()));
    serde_json::json!({"version": "2.0", "routeKey": "POST /webhooks/{source}",
        "rawPath": "/webhooks/stripe", "rawQueryString": "",
        "headers": {"content-type": "application/json", "stripe-signature": signature},
        "requestContext": {"http": {"method": "POST", "path": "/webhooks/stripe",
            "protocol": "HTTP/1.1", "sourceIp": "54.187.174.169", "userAgent": "Stripe/1.0"},
            "requestId": format!("r{n}"), "routeKey": "POST /webhooks/{source}", "stage": "$default"},
        "pathParameters": {"source": "stripe"}, "body": body, "isBase64Encoded": false})
    .to_string()
}

enum Event {
    FirstNext(Instant),
    Response(Instant, bool),
}

/// A Runtime API serving `count` invocations; events on the channel.
fn runtime_api(count: usize, secret: String) -> Result<(SocketAddr, Receiver<Event>), String> {
    let (listener, addr) = bind()?;
    let (tx, rx): (Sender<Event>, Receiver<Event>) = mpsc::channel();
    let served = Arc::new(AtomicUsize::new(0));
    let tx = std::sync::Mutex::new(tx);
    serve(listener, move |req, w| {
        let send = |e| tx.lock().map(|t| t.send(e)).ok();
        if req.line.starts_with("GET") && req.line.contains("/invocation/next") {
            let n = served.fetch_add(1, Ordering::SeqCst);
            if n == 0 {
                send(Event::FirstNext(Instant::now()));
            }
            if n >= count {
                // No more events: hold the long poll until the process is killed.
                std::thread::sleep(Duration::from_secs(3600));
                return false;
            }
            let body = invocation(n, &secret);
            return respond(
                w,
                "200 OK",
                &[
                    ("content-type", "application/json".into()),
                    ("lambda-runtime-aws-request-id", format!("req-{n}")),
                    ("lambda-runtime-deadline-ms", "99999999999999".into()),
                    (
                        "lambda-runtime-invoked-function-arn",
                        "arn:aws:lambda:us-east-1:123456789012:function:ingest".into(),
                    ),
                ],
                body.as_bytes(),
            );
        }
        if req.line.starts_with("POST") && req.line.contains("/response") {
            let ok = serde_json::from_slice::<serde_json::Value>(&req.body)
                .map(|v| v["statusCode"] == 200)
                .unwrap_or(false);
            send(Event::Response(Instant::now(), ok));
        }
        respond(w, "202 Accepted", &[], b"{}")
    });
    Ok((addr, rx))
}

/// Peak resident set of `pid`, bytes.
fn peak_rss(pid: u32) -> Result<u64, String> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or("no VmHWM".into())
}

/// Spawns `binary` as Lambda would, against the Runtime API at `api`, at log level `log`.
fn spawn(
    binary: &std::path::Path,
    env: &[(String, String)],
    api: SocketAddr,
    log: &str,
    stdout: Stdio,
) -> Result<Child, String> {
    Command::new(binary)
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", "ingest")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("RUST_LOG", log)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))
}

/// Starts `binary` against a Runtime API serving `count` events and the fake AWS endpoint.
pub fn run(
    binary: &std::path::Path,
    env: &[(String, String)],
    count: usize,
    secret: &str,
) -> Result<Served, String> {
    let (api, events) = runtime_api(count, secret.to_owned())?;
    let started = Instant::now();
    let mut child = spawn(binary, env, api, "warn", Stdio::null())?;
    let result = collect(&events, started, count, &mut child);
    let rss = peak_rss(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let mut served = result?;
    served.peak_rss = rss?;
    Ok(served)
}

/// One more start of the ingest at log level `info`: the fields of its `init timeline` log line
/// (`key=value` pairs, ms), read from its stdout, with a deadline.
pub fn init_timeline(
    binary: &std::path::Path,
    env: &[(String, String)],
    secret: &str,
) -> Result<String, String> {
    let (api, _events) = runtime_api(1, secret.to_owned())?;
    let mut child = spawn(binary, env, api, "info", Stdio::piped())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("init timeline") {
                let _ = tx.send(line);
                return;
            }
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(10));
    let _ = child.kill();
    let _ = child.wait();
    let line = line.map_err(|_| "no `init timeline` line within 10 s".to_owned())?;
    let fields: Vec<String> = line
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| {
            let v = v.trim_matches('"');
            let v = v
                .parse::<f64>()
                .map_or(v.to_owned(), |ms| format!("{ms:.2}"));
            format!("{} {v} ms", k.trim_end_matches("_ms").replace('_', " "))
        })
        .collect();
    Ok(fields.join(", "))
}

fn collect(
    events: &Receiver<Event>,
    started: Instant,
    count: usize,
    child: &mut Child,
) -> Result<Served, String> {
    let deadline = started + Duration::from_secs(600);
    let mut s = Served {
        init: Duration::ZERO,
        first_response: Duration::ZERO,
        answered: 0,
        elapsed: Duration::ZERO,
        peak_rss: 0,
        not_ok: 0,
    };
    let mut first_at = None;
    while s.answered < count {
        let now = Instant::now();
        if now >= deadline {
            return Err(format!("only {} of {count} answered in time", s.answered));
        }
        match events.recv_timeout((deadline - now).min(Duration::from_millis(200))) {
            Ok(Event::FirstNext(at)) => s.init = at - started,
            Ok(Event::Response(at, ok)) => {
                if first_at.is_none() {
                    first_at = Some(at);
                    s.first_response = at - started;
                }
                s.answered += 1;
                s.not_ok += usize::from(!ok);
                s.elapsed = at - first_at.unwrap_or(at);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("exited ({status}) after {} answers", s.answered));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err("runtime API stopped".into()),
        }
    }
    Ok(s)
}
