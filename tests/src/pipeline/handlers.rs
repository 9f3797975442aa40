//! The test handlers: a counter whose effect is a DynamoDB item (so "exactly once" is a number
//! that can be read back), which fails on request, and a handler that never finishes.

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A handler whose effect is `ADD n 1` on a counter item `EFFECT#{event id}` in the same table,
/// committed with the message's transition. The body may ask it to fail: `"fail_times": k` fails
/// the first k calls transiently (until `fix()`), `"permanent": true` fails permanently.
#[derive(Debug)]
pub struct CounterHandler {
    table: String,
    calls: Mutex<HashMap<String, u32>>,
    fixed: AtomicBool,
    claim: bool,
}

impl CounterHandler {
    pub fn new(table: &str, claim: bool) -> Arc<Self> {
        Arc::new(Self {
            table: table.to_owned(),
            calls: Mutex::default(),
            fixed: AtomicBool::new(false),
            claim,
        })
    }

    /// From now on, never fail ("the bug is fixed").
    pub fn fix(&self) {
        self.fixed.store(true, Ordering::SeqCst);
    }

    /// How often the handler ran for an event.
    pub fn calls(&self, event_id: &str) -> u32 {
        self.calls
            .lock()
            .map(|c| c.get(event_id).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    fn effect(&self, m: &StoredMessage) -> inbox_core::store::Effect {
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("EFFECT#{}", m.event_id)))
            .key("sk", AttributeValue::S("COUNTER".into()))
            .update_expression("ADD #n :one")
            .expression_attribute_names("#n", "n")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .build()
            .expect("a complete update");
        inbox_core::store::Effect::Raw(Box::new(
            TransactWriteItem::builder().update(update).build(),
        ))
    }
}

impl Handler for CounterHandler {
    fn name(&self) -> &str {
        "counter"
    }

    fn needs_claim(&self) -> bool {
        self.claim
    }

    fn handle<'a>(&'a self, m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            let call = {
                let mut calls = self.calls.lock().expect("lock");
                let c = calls.entry(m.event_id.to_string()).or_default();
                *c += 1;
                *c
            };
            let body = m.json().unwrap_or_default();
            let fixed = self.fixed.load(Ordering::SeqCst);
            if !fixed && body["permanent"].as_bool() == Some(true) {
                return HandlerOutcome::Permanent("the payload says it can never work".into());
            }
            let fail_times = body["fail_times"].as_u64().unwrap_or(0) as u32;
            if !fixed && call <= fail_times {
                return HandlerOutcome::Retry(format!("simulated upstream timeout on call {call}"));
            }
            HandlerOutcome::commit(vec![self.effect(m)])
        })
    }
}

/// Never finishes: stands for an invocation that crashes after claiming.
pub struct Hangs;

impl Handler for Hangs {
    fn name(&self) -> &str {
        "hangs"
    }
    fn needs_claim(&self) -> bool {
        true
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(std::future::pending())
    }
}
