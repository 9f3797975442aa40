//! Catch-up Lambda: Stripe's events the inbox lacks, stored every 15 minutes.

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    inbox_core::logging::init();
    let service = catch_up_function::build().await.inspect_err(
        |e| tracing::error!(error = %e, "configuration error; the function cannot start"),
    )?;
    run(service_fn(|event: LambdaEvent<_>| {
        catch_up_function::handle(&service, event)
    }))
    .await
}
