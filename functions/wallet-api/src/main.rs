//! Wallet API Lambda: holds before a send, their release, balances, hosted top-ups.

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    inbox_core::logging::init();
    let service = wallet_api_function::build().await.inspect_err(
        |e| tracing::error!(error = %e, "configuration error; the function cannot start"),
    )?;
    run(service_fn(|event: LambdaEvent<_>| {
        wallet_api_function::handle(&service, event)
    }))
    .await
}
