//! Deliver Lambda: the outbox's deliveries to their HTTP destinations.

// The handler's future nests the batch, the delivery and its store calls deeply enough to pass
// the compiler's default layout depth (128).
#![recursion_limit = "256"]

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
