//! Email, one slice: each email provider's delivery events mapped onto the wallet's email events,
//! and the holds placed before a send (the wallet API) with their items. It builds on
//! [`crate::balance`].
//!
//! - [`providers`]: each email provider's delivery events (SES, SendGrid, Mailgun, Postmark,
//!   Resend, the mailer) mapped onto the wallet's email events, with their tenant and message id.
//! - [`parse`]: the mailer's own delivery events, and the [`parse::EmailNotice`] every
//!   provider's event becomes.
//! - [`handler`]: the wallet handler's email events (the row's state, the money moved with it).
//! - [`holds`]: holds placed before a send, exact under concurrency, and their release.

pub mod handler;
pub mod holds;
pub mod parse;
pub mod providers;
