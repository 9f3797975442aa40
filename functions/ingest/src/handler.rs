//! The ingest Lambda's handler: maps an API Gateway HTTP API (payload 2.0) or Function URL event
//! to the ingest command in `shared`, and its outcome back to an HTTP response, logging one
//! structured line per request (source, event id, outcome, status, latency; never the secret,
//! the signature header or the body).
//!
//! It takes `aws_lambda_events`' raw request type rather than `lambda_http`'s `Request`:
//! `lambda_http` panics on a body flagged base64 that is not valid base64, and this function
//! must answer every bad input with a JSON error instead.

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::config::{ConfigError, Env};
use inbox_core::ingest::IngestConfig;
use inbox_core::ingest::{ErrorBody, IngestError, IngestRequest, Ingestor, Reply};
use inbox_core::metrics::EmfWriter;
use inbox_core::store::dynamo::body::BodyConfig;
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use inbox_core::store::Inbox;
use lambda_runtime::LambdaEvent;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

/// The source names the deployment's applications publish their own events under: no inbound
/// source may take one (a `WEBHOOK_SOURCES` naming one fails at start).
pub const PUBLISHED: [&str; 1] = wallet_ledger::PUBLISHED_SOURCES;

/// The ingest service as deployed: DynamoDB and the system clock.
pub type Service = Ingestor<DynamoTable, SystemClock>;

/// Builds the service once per cold start from the environment: secrets from Secrets Manager
/// are re-read on their TTL, refusals and failures counted as CloudWatch metrics (EMF on stdout,
/// with the stage as dimension).
///
/// The AWS clients trust the compiled-in roots (`inbox_core::tls`), and the secrets (a Secrets
/// Manager round trip in the cloud) are fetched while the clients are built: the init is the
/// longer of the two, not their sum. One log line gives the init's timeline.
pub async fn build() -> Result<Service, ConfigError> {
    let started = Instant::now();
    let env = Env::process();
    let sdk = inbox_core::tls::sdk_config(&env).await?;
    let sdk_ms = ms_since(started);
    let secrets = async {
        let config = IngestConfig::from_env(&sdk, &PUBLISHED).await;
        (config, ms_since(started))
    };
    let clients = async {
        let dynamodb = fail_fast_client(&sdk);
        let bodies = BodyConfig::read(&env).map(|b| b.s3(&sdk));
        (dynamodb, bodies, ms_since(started))
    };
    let ((config, secrets_ms), (dynamodb, bodies, clients_ms)) = tokio::join!(secrets, clients);
    let (config, bodies) = (config?, bodies?);
    let store = DynamoTable::new(dynamodb, config.table_name).with_bodies(bodies);
    tracing::info!(
        sdk_config_ms = sdk_ms,
        configuration_and_secrets_ms = secrets_ms,
        clients_ms,
        total_ms = ms_since(started),
        "init timeline"
    );
    let service = Ingestor::new(
        config.sources,
        store,
        SystemClock,
        config.max_body_bytes,
        config.retention_days,
    )
    .with_max_batch_events(config.max_batch_events)
    .with_metrics(Arc::new(EmfWriter::stdout()));
    Ok(match config.reloader {
        Some(reloader) => service.with_reload(reloader, config.secrets_ttl),
        None => service,
    })
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// The Lambda entry point: never fails the invocation, every outcome is an HTTP answer.
pub async fn handle<S: Inbox, C: Clock>(
    service: &Ingestor<S, C>,
    event: LambdaEvent<ApiGatewayV2httpRequest>,
) -> Result<ApiGatewayV2httpResponse, Infallible> {
    Ok(respond(service, &event.payload).await)
}

/// The `{source}` of `/webhooks/{source}`: API Gateway's path parameter, else the raw path
/// (Function URLs and `cargo lambda watch` have no path parameters).
pub fn source_of(req: &ApiGatewayV2httpRequest) -> &str {
    if let Some(s) = req.path_parameters.get("source") {
        return s;
    }
    let path = req.raw_path.as_deref().unwrap_or_default();
    match path.rfind("/webhooks/") {
        Some(i) => path[i + "/webhooks/".len()..].trim_end_matches('/'),
        None => "",
    }
}

/// Handles one request and builds its response.
pub async fn respond<S: Inbox, C: Clock>(
    service: &Ingestor<S, C>,
    req: &ApiGatewayV2httpRequest,
) -> ApiGatewayV2httpResponse {
    let started = Instant::now();
    let source = source_of(req);
    let request = IngestRequest {
        method: req.request_context.http.method.as_str(),
        source,
        headers: &req.headers,
        body: req.body.as_deref(),
        body_is_base64: req.is_base64_encoded,
        source_ip: req
            .request_context
            .http
            .source_ip
            .as_deref()
            .and_then(|ip| ip.parse().ok()),
    };
    let result = service.receive(request).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1e3;
    match result {
        Ok(reply) => {
            log_reply(source, &reply, latency_ms);
            reply_response(&reply)
        }
        Err(err) => {
            let status = err.status();
            let source = if matches!(err, IngestError::UnknownSource(_) | IngestError::NoSource) {
                ""
            } else {
                source
            };
            if status.is_server_error() {
                // The cause chain goes to the log; the client gets the code and a fixed message.
                tracing::error!(source, error = err.code(), status = status.as_u16(), latency_ms, cause = %inbox_core::error::one_line(&err), "webhook not stored");
            } else {
                tracing::info!(
                    source,
                    error = err.code(),
                    status = status.as_u16(),
                    latency_ms,
                    "webhook refused"
                );
            }
            response(status, err.body().to_json(), &err.headers())
        }
    }
}

/// The one log line of an answered request: the event stored, the batch stored (its counts), or
/// the handshake answered (the journal of handshakes: nothing else records them).
fn log_reply(source: &str, reply: &Reply, latency_ms: f64) {
    let status = reply.status().as_u16();
    match reply {
        Reply::Event(ack) => tracing::info!(
            source = %ack.key.source,
            event_id = %ack.key.event_id,
            event_type = ack.event_type.as_ref().map(|t| t.as_str()),
            outcome = ack.outcome.as_str(),
            body_differs = ack.body_differs,
            repeated = ack.repeated,
            status,
            latency_ms,
            "webhook stored"
        ),
        Reply::Batch(batch) => tracing::info!(
            source,
            events = batch.events.len(),
            accepted = batch.accepted(),
            duplicates = batch.duplicates(),
            status,
            latency_ms,
            "webhook batch stored"
        ),
        Reply::Handshake(h) => tracing::info!(
            source,
            handshake = h.kind,
            note = h.note.as_deref(),
            status,
            latency_ms,
            "endpoint handshake answered; nothing stored"
        ),
    }
}

/// The HTTP response of an answered request (a handshake's may have another type, or no body).
fn reply_response(reply: &Reply) -> ApiGatewayV2httpResponse {
    let mut resp = response(reply.status(), reply.body(), &[]);
    match reply.content_type() {
        Some(kind) => {
            resp.headers
                .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(kind));
        }
        None => {
            resp.headers.remove(http::header::CONTENT_TYPE);
            resp.body = None;
        }
    }
    resp
}

fn response(
    status: StatusCode,
    body: String,
    extra: &[(&'static str, String)],
) -> ApiGatewayV2httpResponse {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    let mut resp = ApiGatewayV2httpResponse::default();
    resp.status_code = i64::from(status.as_u16());
    resp.headers = headers;
    resp.body = Some(Body::Text(body));
    resp
}

/// The answer to a failure outside the ingest command (kept opaque).
pub fn internal_error() -> ApiGatewayV2httpResponse {
    response(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorBody::internal().to_json(),
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_source_named_as_the_wallets_own_fails_at_start() {
        assert!(PUBLISHED.contains(&"wallet"), "{PUBLISHED:?}");
        let env = Env::from_pairs([
            ("TABLE_NAME", "t"),
            ("WEBHOOK_SOURCES", r#"{"wallet":{"scheme":"github"}}"#),
        ]);
        let e = IngestConfig::read(&env, Some(r#"{"wallet": "k"}"#.into()), &PUBLISHED)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("WEBHOOK_SOURCES") && e.contains("\"wallet\"") && e.contains("reserved"),
            "{e}"
        );
    }
}
