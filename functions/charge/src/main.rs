//! Charge Lambda: autopay's charging pass, every minute.

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    inbox_core::logging::init();
    let service = charge_function::build().await.inspect_err(
        |e| tracing::error!(error = %e, "configuration error; the function cannot start"),
    )?;
    run(service_fn(|event: LambdaEvent<_>| {
        charge_function::handle(&service, event)
    }))
    .await
}
