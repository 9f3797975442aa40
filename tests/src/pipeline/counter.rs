//! Counting the requests an AWS SDK client sends, by operation, with an interceptor.

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Counts the requests a client sends, by operation (every attempt, retries included).
#[derive(Debug, Default, Clone)]
pub struct RequestCounter(Arc<Mutex<BTreeMap<String, usize>>>);

impl RequestCounter {
    pub fn counts(&self) -> BTreeMap<String, usize> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    pub fn reset(&self) {
        if let Ok(mut m) = self.0.lock() {
            m.clear();
        }
    }

    /// Requests that write (PutItem, UpdateItem, DeleteItem, TransactWriteItems, BatchWriteItem).
    pub fn writes(&self) -> usize {
        self.counts()
            .iter()
            .filter(|(op, _)| {
                matches!(
                    op.as_str(),
                    "PutItem"
                        | "UpdateItem"
                        | "DeleteItem"
                        | "TransactWriteItems"
                        | "BatchWriteItem"
                )
            })
            .map(|(_, n)| n)
            .sum()
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let (Some(meta), Ok(mut counts)) = (cfg.load::<Metadata>(), self.0.lock()) {
            *counts.entry(meta.name().to_string()).or_default() += 1;
        }
        Ok(())
    }
}
