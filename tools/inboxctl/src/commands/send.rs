//! `inboxctl send`: sign an event now with the source's first secret and POST it to an ingest
//! endpoint, like `stripe trigger`. Prints the response, never a secret or a signature value.
//!
//! Sources and secrets: `--sources`/`--secrets` files, else the `WEBHOOK_SOURCES` /
//! `WEBHOOK_SECRETS` variables when set, else `local/sources.json` / `local/secrets.json`.

use crate::cli::SendArgs;
use crate::context::Context;
use crate::error::{failed, usage, Context as _, Result};
use crate::output::{print_json, say};
use crate::sample;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::config::{catalog, vars, Env, Var};
use inbox_core::signature::SchemeError;
use inbox_core::sources::{parse_secrets, Sources};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the local `cargo lambda watch` serves the ingest function.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:9000/lambda-url/ingest/webhooks";

#[derive(Serialize)]
struct Response {
    attempt: u32,
    status: u16,
    body: Value,
}

#[derive(Serialize)]
struct Report<'a> {
    source: &'a str,
    event_id: Option<String>,
    event_type: Option<String>,
    url: &'a str,
    body_bytes: usize,
    /// Names only: the values are signatures.
    headers: Vec<String>,
    responses: Vec<Response>,
}

/// A config document: the file given, else the variable when set, else the default file.
fn config_text(
    file: Option<&Path>,
    env: &Env,
    doc: &Var,
    default: &str,
) -> Result<(String, String)> {
    let var = doc.name;
    let path = match (file, env.optional(doc)) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(text)) => return Ok((text, format!("${var}"))),
        (None, None) => PathBuf::from(default),
    };
    let text = std::fs::read_to_string(&path).context(format!(
        "reading {} (pass --{} FILE or set {var})",
        path.display(),
        if var == vars::WEBHOOK_SOURCES {
            "sources"
        } else {
            "secrets"
        }
    ))?;
    Ok((text, path.display().to_string()))
}

/// The sources (and their secrets) from the files given, else the variables, else the local
/// files; `stripe catch-up` reads them the same way (it needs the source's identity rules).
pub(crate) fn load_sources(
    env: &Env,
    sources: Option<&Path>,
    secrets: Option<&Path>,
) -> Result<Sources> {
    let (sources, _) = config_text(
        sources,
        env,
        &catalog::WEBHOOK_SOURCES,
        "local/sources.json",
    )?;
    let (secrets, secrets_from) = config_text(
        secrets,
        env,
        &catalog::WEBHOOK_SECRETS,
        "local/secrets.json",
    )?;
    // Neither error can contain a secret (inbox_core::sources guarantees it).
    let secrets = parse_secrets(&secrets, vars::WEBHOOK_SECRETS)
        .context(format!("secrets from {secrets_from}"))?;
    Ok(Sources::from_json(&sources, &secrets)?)
}

pub async fn run(ctx: &Context, args: SendArgs) -> Result<()> {
    let sources = load_sources(ctx.env(), args.sources.as_deref(), args.secrets.as_deref())?;
    let source = sources.get(&args.source).ok_or_else(|| {
        usage(format!(
            "unknown source {:?}; configured: {}",
            args.source,
            sources.names().join(", ")
        ))
    })?;
    let url = args
        .url
        .clone()
        .unwrap_or_else(|| format!("{DEFAULT_BASE_URL}/{}", args.source));
    let now = SystemClock.now_secs();
    let unbuilt = |e: SchemeError| usage(format!("source {:?}: its samples: {e}", args.source));
    let event = match &args.file {
        None => sample::sample(
            source,
            args.event_id.as_deref(),
            args.event_type.as_deref(),
            now,
        )
        .map_err(unbuilt)?,
        Some(path) => sample::from_file(
            source,
            std::fs::read(path).context(format!("reading {}", path.display()))?,
            args.event_id.as_deref(),
            args.event_type.as_deref(),
        )
        .map_err(unbuilt)?,
    };
    let sign = |now| {
        sample::sign(source, &event, now)
            .map_err(|e| usage(format!("source {:?}: {e}", args.source)))
    };

    // TLS (an https URL) uses rustls on the aws-lc-rs provider the AWS SDK builds anyway.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();

    let first = sign(now)?;
    let mut report = Report {
        source: &args.source,
        event_id: sample::event_id(source, &first.body, &first.headers),
        event_type: sample::event_type(source, &first.body, &first.headers),
        url: &url,
        body_bytes: first.body.len(),
        headers: first
            .headers
            .iter()
            .map(|(k, _)| k.as_str().to_owned())
            .collect(),
        responses: Vec::new(),
    };
    if !ctx.json() {
        say(format!(
            "{} event {} ({}), {} bytes, headers: {}",
            args.source,
            report.event_id.as_deref().unwrap_or("?"),
            report.event_type.as_deref().unwrap_or("no type"),
            report.body_bytes,
            report.headers.join(", ")
        ))?;
    }
    for attempt in 1..=args.repeat {
        // Signed at the moment of sending, like a provider's retry.
        let outgoing = if attempt == 1 {
            first.clone()
        } else {
            sign(SystemClock.now_secs())?
        };
        let mut request = agent.post(&url).header(
            "user-agent",
            concat!("inboxctl/", env!("CARGO_PKG_VERSION")),
        );
        for (name, value) in &outgoing.headers {
            request = request.header(name.clone(), value.clone());
        }
        let mut response = request.send(&outgoing.body[..]).context(format!(
            "POST {url} (is the ingest endpoint running? `make dev` serves it)"
        ))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .context("reading the response")?;
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if !ctx.json() {
            let shown = match &body {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            say(format!("POST {url} → {status} {shown}"))?;
        }
        report.responses.push(Response {
            attempt,
            status,
            body,
        });
    }
    if ctx.json() {
        print_json(&report)?;
    }
    let refused = report
        .responses
        .iter()
        .filter(|r| !(200..300).contains(&r.status))
        .count();
    if refused > 0 {
        return Err(failed(format!(
            "{refused} of {} request(s) were not accepted",
            report.responses.len()
        )));
    }
    Ok(())
}
