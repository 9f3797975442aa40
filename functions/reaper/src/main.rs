//! Reaper Lambda: re-drives due, stuck and never-delivered messages.

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    inbox_core::logging::init();
    let service = reaper_function::build().await.inspect_err(
        |e| tracing::error!(error = %e, "configuration error; the function cannot start"),
    )?;
    run(service_fn(|event: LambdaEvent<_>| {
        reaper_function::handle(&service, event)
    }))
    .await
}
