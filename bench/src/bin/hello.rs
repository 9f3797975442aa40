//! The cold-start baseline: the smallest Lambda that the Rust runtime can run (it echoes its
//! event). `coldstart` compares the ingest function's start-up against this one.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<Value, Error>(event.payload)
    }))
    .await
}
