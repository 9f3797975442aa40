//! The deliver function's per-record functions: a stream record (a new delivery or fan-out item:
//! the event source mapping passes only INSERTs of `sk` `OUT` and `FAN`) and a delivery-queue
//! message (work to do again). The lifting over a batch (concurrency, spans, batch item failures)
//! is [`crate::invocation`]'s. Only infrastructure errors (store or queue unreachable) fail a
//! record, so one failing destination never holds up the others. The bodies of a batch's
//! deliveries are read ahead, in one request where the store can (`body.rs`).

use super::delivery::{FanoutItem, OutboundDelivery};
use super::queue::Work;
use super::schema::{DELIVERY_SK, FANOUT_SK};
use super::worker::{Deliverer, DeliveryOutcome, DeliveryPorts};
use crate::invocation::{self, Summary, Task};
use crate::process::InfraError;
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use std::future::Future;

/// What a stream record asks for.
enum StreamWork {
    Deliver(Box<OutboundDelivery>),
    Expand(FanoutItem),
}

fn stream_work(record: &EventRecord) -> Option<Result<StreamWork, String>> {
    let image = &record.change.new_image;
    let sk = match image.get("sk") {
        Some(serde_dynamo::AttributeValue::S(s)) => s.as_str(),
        _ => return None,
    };
    if record.event_name != "INSERT" {
        return None;
    }
    match sk {
        DELIVERY_SK => Some(
            serde_dynamo::from_item::<_, OutboundDelivery>(image.clone())
                .map(|d| StreamWork::Deliver(Box::new(d)))
                .map_err(|e| e.to_string()),
        ),
        FANOUT_SK => Some(
            serde_dynamo::from_item::<_, FanoutItem>(image.clone())
                .map(StreamWork::Expand)
                .map_err(|e| e.to_string()),
        ),
        _ => None,
    }
}

fn log_result(result: &Result<DeliveryOutcome, InfraError>) {
    match result {
        Ok(DeliveryOutcome::Retrying { attempt, delay }) => {
            tracing::warn!(
                outcome = "retrying",
                attempt,
                delay_ms = delay.as_millis() as u64,
                "attempt failed; retry scheduled"
            )
        }
        Ok(DeliveryOutcome::Failed { attempts }) => {
            tracing::error!(outcome = "failed", attempts, "delivery failed")
        }
        Ok(o) => tracing::info!(outcome = o.as_str(), "delivery done"),
        Err(e) => {
            tracing::error!(error = %crate::error::one_line(e), "infrastructure error; the record will be delivered again")
        }
    }
}

impl<P: DeliveryPorts> Deliverer<P> {
    /// A stream batch, up to `concurrency` records at once: the first record (in stream order)
    /// that hit an infrastructure error is reported ([`invocation::lift`], [`invocation::Batch`]).
    pub async fn handle_stream_batch(
        &self,
        event: StreamEvent,
    ) -> (DynamoDbEventResponse, Summary) {
        let keys: Vec<_> = event
            .records
            .iter()
            .filter_map(|r| match stream_work(r) {
                Some(Ok(StreamWork::Deliver(d))) => Some(d.key()),
                _ => None,
            })
            .collect();
        let _bodies = self.bodies.read_ahead(&self.store, &keys).await;
        invocation::lift(&event, self.config.concurrency, |r| self.stream_record(r)).await
    }

    /// A delivery-queue batch, up to `concurrency` messages at once; each that hit an
    /// infrastructure error is reported and comes back after the visibility timeout.
    pub async fn handle_sqs_batch(&self, event: SqsEvent) -> (SqsBatchResponse, Summary) {
        let keys: Vec<_> = event
            .records
            .iter()
            .filter_map(
                |m| match m.body.as_deref().map(serde_json::from_str::<Work>) {
                    Some(Ok(Work::Attempt(d))) => Some(d.key()),
                    Some(Ok(Work::Delivery(r))) => Some(r.key()),
                    _ => None,
                },
            )
            .collect();
        let _bodies = self.bodies.read_ahead(&self.store, &keys).await;
        invocation::lift(&event, self.config.concurrency, |m| self.queue_record(m)).await
    }

    /// A stream record: a delivery to attempt, or a fan-out item to expand.
    fn stream_record(
        &self,
        record: &EventRecord,
    ) -> Task<impl Future<Output = Result<&'static str, InfraError>> + '_> {
        let work = match stream_work(record) {
            Some(Ok(w)) => w,
            Some(Err(e)) => {
                tracing::error!(error = %e, "a stream image is not a readable outbox item; skipped (the sweep reads it by key)");
                return Task::Skip("unreadable");
            }
            None => return Task::Skip("not_outbox_work"),
        };
        let span = match &work {
            StreamWork::Deliver(d) => {
                tracing::info_span!("delivery", destination = %d.destination, source = %d.source, event_id = %d.event_id, origin = "stream")
            }
            StreamWork::Expand(f) => {
                tracing::info_span!("fanout", source = %f.source, event_id = %f.event_id, origin = "stream")
            }
        };
        Task::Run(span, async move {
            let result = match work {
                StreamWork::Deliver(d) => self.deliver_item(*d).await,
                StreamWork::Expand(f) => self.expand(&f.key()).await,
            };
            log_result(&result);
            result.map(|o| o.as_str())
        })
    }

    /// A delivery-queue message: a delivery or a fan-out to do (again).
    fn queue_record(
        &self,
        message: &SqsMessage,
    ) -> Task<impl Future<Output = Result<&'static str, InfraError>> + '_> {
        let Some(Ok(work)) = message.body.as_deref().map(serde_json::from_str::<Work>) else {
            tracing::error!(
                message_id = message.message_id.as_deref(),
                "delivery-queue message is not outbox work; dropped"
            );
            return Task::Skip("unreadable");
        };
        let span = match &work {
            Work::Delivery(r) => {
                tracing::info_span!("delivery", destination = %r.destination, source = %r.source, event_id = %r.event_id, origin = "queue")
            }
            Work::Attempt(d) => {
                tracing::info_span!("delivery", destination = %d.destination, source = %d.source, event_id = %d.event_id, origin = "queue")
            }
            Work::Fanout { source, event_id } => {
                tracing::info_span!("fanout", source = %source, event_id = %event_id, origin = "queue")
            }
        };
        Task::Run(span, async move {
            let result = self.work(&work).await;
            log_result(&result);
            result.map(|o| o.as_str())
        })
    }
}
