//! Process Lambda: stream and retry-queue batches through the handlers, exactly once per effect.

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    inbox_core::logging::init();
    let service = process_function::build().await.inspect_err(
        |e| tracing::error!(error = %e, "configuration error; the function cannot start"),
    )?;
    run(service_fn(|event: LambdaEvent<_>| {
        process_function::handle(&service, event)
    }))
    .await
}
