//! Deliver Lambda: the outbox's deliveries to their HTTP destinations.

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    inbox_core::logging::init();
    let service = deliver_function::build().await.inspect_err(
        |e| tracing::error!(error = %e, "configuration error; the function cannot start"),
    )?;
    run(service_fn(|event: LambdaEvent<_>| {
        deliver_function::handle_service(&service, event)
    }))
    .await
}
