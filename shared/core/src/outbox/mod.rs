//! The transactional outbox: every event that becomes terminal (`processed`, `ignored`) is
//! delivered to the HTTP destinations subscribed to it, signed (Standard Webhooks), rate-limited,
//! retried, each delivery visible with its attempt journal.
//!
//! - [`destination`], [`pattern`], [`admin`]: destinations (data in the table), the events they
//!   want, and their journaled management.
//! - [`fanout`]: the processor's hook: one delivery item per matching active destination in the
//!   SAME transaction as the terminal transition (or one fan-out item when they do not fit).
//! - [`delivery`], [`schema`], [`store`]: delivery items, the table layout, the storage capability.
//! - Pure policies, each with an injectable time and random draw: [`schedule`] (retry schedule,
//!   jitter, `Retry-After`), [`bucket`] (the shared token bucket), [`breaker`] (the circuit
//!   breaker), [`attempt`] (what an attempt came back with and what that means for the delivery),
//!   `deferral` (a deferral's time, spread).
//! - [`worker`] (one delivery: rate, circuit, lease, POST, record; `throttle`, `send` and `record`
//!   hold its steps, `deadline` the invocation's deadline it waits against), `body` (the body of an
//!   event, read once for its deliveries in flight and shared), `sweep` (the scheduled sweep,
//!   fan-out expansion), `records` (a stream record and a queue message, lifted over a batch by
//!   [`crate::invocation`]), [`queue`], [`sign`], [`transport`] (the capability the deliver
//!   function's SSRF-guarded HTTP client implements), [`cache`];
//!   [`config`]: the deliver function's configuration, read from the environment.
//! - [`resend`]: the operator's resends (retry a delivery, replay an event), for `inboxctl` and
//!   the tests.
//!
//! The contract a receiver relies on is in `docs/outbound.md`.

pub mod admin;
pub mod attempt;
mod body;
pub mod breaker;
pub mod bucket;
pub mod cache;
pub mod config;
mod deadline;
mod deferral;
pub mod delivery;
pub mod destination;
pub mod fanout;
pub mod parking;
pub mod pattern;
pub mod queue;
mod record;
mod records;
pub mod resend;
pub mod schedule;
pub mod schema;
mod send;
pub mod sign;
pub mod store;
mod sweep;
mod throttle;
pub mod transport;
pub mod worker;

pub use sweep::{work_of, SweepReport};
