//! The wallet API Lambda's handler: maps an API Gateway HTTP API (payload 2.0) event (or a
//! Function URL's, as `cargo lambda watch` serves it locally) to the wallet API in
//! `shared/wallet-api`, and its answer back to an HTTP response. Never fails the invocation:
//! every outcome is an HTTP answer, every error JSON.
//!
//! It takes `aws_lambda_events`' raw request type rather than `lambda_http`'s `Request`, as the
//! ingest function does: `lambda_http` panics on a body flagged base64 that is not valid base64,
//! and this function must answer every bad input with a JSON 400 instead.
//!
//! [`build`] is the composition root: the table (DynamoDB), the payment provider's hosted
//! checkout ([`checkout`]), the system clock, `WALLET_API_IDEMPOTENCY_HOURS`, the instance's view
//! of sharded wallets (`WALLET_VIEW_MS`).

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use http::{HeaderMap, HeaderName, HeaderValue};
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::config::{catalog, ConfigError, Env};
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use inbox_core::store::{ItemStore, ItemWriter};
use lambda_runtime::LambdaEvent;
use std::convert::Infallible;
use stripe_charges::{HttpTransport, StripeCheckout, StripeConfig};
use wallet_api::{ApiConfig, ApiRequest, ApiResponse, WalletApi};
use wallet_ledger::payments::checkout::Checkout;
use wallet_ledger::WalletViews;

/// The payment provider's hosted checkout as deployed: Stripe's Checkout Sessions, its calls
/// drawing on the account's token bucket in the table (shared with autopay's charges).
pub type DeployedCheckout = StripeCheckout<HttpTransport, DynamoTable>;

/// The function as deployed: the table, the provider's checkout, the system clock.
pub type Deployed = WalletApi<DynamoTable, DeployedCheckout, SystemClock>;

/// Builds the service once per cold start from the environment.
pub async fn build() -> Result<Deployed, ConfigError> {
    let env = Env::process();
    let config = ApiConfig::read(&env)?;
    let table_name = env.required(&catalog::TABLE_NAME)?;
    let sdk = inbox_core::tls::sdk_config(&env).await?;
    let table = DynamoTable::new(fail_fast_client(&sdk), table_name);
    let checkout = checkout(&env, &sdk, &table).await?;
    // One view of sharded wallets per instance: a hold reads its own shard alone.
    let views = WalletViews::system(wallet_ledger::config::view_ttl(&env)?);
    Ok(WalletApi::new(table, checkout, SystemClock, config).with_views(views))
}

/// The payment provider's hosted checkout (Stripe's, `stripe_charges`, reading its
/// `STRIPE_*` variables): the one place that picks it.
pub async fn checkout(
    env: &Env,
    sdk: &aws_config::SdkConfig,
    table: &DynamoTable,
) -> Result<DeployedCheckout, ConfigError> {
    let stripe = StripeConfig::read(env, sdk).await?;
    StripeCheckout::from_config(&stripe, table.clone()).map_err(|e| ConfigError::Invalid {
        var: "STRIPE_API_BASE",
        reason: format!("no TLS configuration for the Stripe client: {e}"),
    })
}

/// The Lambda entry point: never fails the invocation.
pub async fn handle<S, K, C>(
    service: &WalletApi<S, K, C>,
    event: LambdaEvent<ApiGatewayV2httpRequest>,
) -> Result<ApiGatewayV2httpResponse, Infallible>
where
    S: ItemStore + ItemWriter,
    K: Checkout,
    C: Clock + Clone + 'static,
{
    Ok(respond(service, &event.payload).await)
}

/// Answers one event.
pub async fn respond<S, K, C>(
    service: &WalletApi<S, K, C>,
    req: &ApiGatewayV2httpRequest,
) -> ApiGatewayV2httpResponse
where
    S: ItemStore + ItemWriter,
    K: Checkout,
    C: Clock + Clone + 'static,
{
    let request = ApiRequest {
        method: req.request_context.http.method.as_str(),
        // `cargo lambda watch` leaves `rawPath` unset on some versions: the context's path then.
        path: req
            .raw_path
            .as_deref()
            .or(req.request_context.http.path.as_deref())
            .unwrap_or_default(),
        headers: &req.headers,
        body: req.body.as_deref(),
        body_is_base64: req.is_base64_encoded,
    };
    response(service.handle(&request).await)
}

fn response(answer: ApiResponse) -> ApiGatewayV2httpResponse {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (name, value) in &answer.headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    let mut resp = ApiGatewayV2httpResponse::default();
    resp.status_code = i64::from(answer.status.as_u16());
    resp.headers = headers;
    resp.body = Some(Body::Text(answer.body));
    resp
}
