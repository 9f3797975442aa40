//! The [`WalletHandler`] the processor runs: it dispatches each message by its source (and
//! type) to the slice that handles it, and returns what that slice decided: the writes that the
//! processor commits in ONE transaction with the message's `processed` transition — a row
//! `Replace`d at the version read (a concurrent event on the same email or payment conflicts and
//! is re-run), the wallet `Adjust`ed by commutative adds (events on different emails never
//! conflict), the entries `Create`d, the events the movement announces
//! ([`crate::balance::notices`]: `wallet.low_balance`, `wallet.review_threshold_reached`, their
//! wallet attributes in the wallet's own write) — and the metrics (`WalletOverdrawn`,
//! `WalletReviewFlagged`, the notices') the processor emits once, after that transaction
//! committed. An event that is not the wallet's business (another Stripe mode, a payment of no
//! wallet's) is declined with the reason (`ignored`, no alarm).
//!
//! Where each is handled: an email provider's delivery events in [`crate::email::handler`];
//! Stripe payments in [`crate::payments::handler`]; autopay (the attempt a hold or debit at the
//! threshold writes with it, `AutopayAttemptMade`, and the cap's `AutopayLimitReached`; the
//! credit that closes an attempt; saved methods) in [`crate::autopay::handler`]; the wallet's own
//! `wallet.autopay_reconciled`, credited only as the attempt it names says (anything else is
//! refused, quarantined and counted, `ForgedInternalEvent`), in `handler/reconciled.rs`; what they
//! share (the wallet a movement decides on, the writes of its money) in
//! [`crate::balance::handler`].

use crate::autopay::handler as autopay;
use crate::balance::handler::Unhandled;
use crate::balance::views::WalletViews;
use crate::config::WalletConfig;
use crate::email::handler::email;
use crate::parse;
use crate::payments::handler::payment;
use crate::payments::parse::{stripe, StripeNotice};
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome, Registry};
use inbox_core::store::ItemStore;
use std::sync::Arc;

mod reconciled;

pub use crate::config::WalletSources;
pub use reconciled::FORGED_INTERNAL_EVENT;

/// The Stripe event types the wallet handles.
pub const STRIPE_TYPES: [&str; 9] = [
    "checkout.session.completed",
    "checkout.session.async_payment_succeeded",
    "checkout.session.async_payment_failed",
    "payment_intent.succeeded",
    "charge.refunded",
    "payment_intent.payment_failed",
    "payment_intent.canceled",
    "setup_intent.succeeded",
    "payment_method.detached",
];

/// Handles money-moving events for every tenant.
#[derive(Debug)]
pub struct WalletHandler<S> {
    pub(crate) store: S,
    pub(crate) config: WalletConfig,
    /// The instance's view of sharded wallets (none unless [`WalletHandler::with_views`]).
    pub(crate) views: WalletViews,
}

impl<S: ItemStore> WalletHandler<S> {
    /// A handler with `config` (or just its sources, the rest as documented by default).
    pub fn new(store: S, config: impl Into<WalletConfig>) -> Self {
        Self {
            store,
            config: config.into(),
            views: WalletViews::disabled(),
        }
    }

    /// The same deciding a sharded wallet's movements on `views` (shared with the instance's
    /// other users): each reads only its own shard strongly, see [`crate::balance::views`].
    pub fn with_views(mut self, views: WalletViews) -> Self {
        self.views = views;
        self
    }

    /// Routes this handler for its events into `registry`.
    pub fn register(self, registry: Registry) -> Registry
    where
        S: 'static,
    {
        let sources = self.config.sources.clone();
        let me: Arc<dyn Handler> = Arc::new(self);
        let registry = STRIPE_TYPES
            .iter()
            .fold(registry, |r, t| r.on(&sources.stripe, t, me.clone()))
            .on(
                crate::balance::events::SOURCE,
                crate::balance::events::RECONCILED,
                me.clone(),
            );
        sources
            .email_sources()
            .fold(registry, |r, source| r.on_any(source, me.clone()))
    }

    async fn run(&self, m: &StoredMessage) -> Result<HandlerOutcome, Unhandled> {
        let body = m
            .json()
            .map_err(|e| Unhandled::Permanent(format!("the body is not JSON: {e}")))?;
        let event_type = m
            .event_type
            .as_ref()
            .map(|t| t.as_str())
            .unwrap_or_default();
        let unusable = |e: parse::Unusable| Unhandled::Permanent(e.0);
        let nothing = || Ok(HandlerOutcome::commit(Vec::new()));
        let sources = &self.config.sources;
        if m.source.as_str() == sources.stripe {
            // The mode first: an event of the other mode is not ours, whatever else it says.
            let mode = self.config.stripe_mode;
            match parse::livemode(&body).map(parse::StripeMode::of) {
                Some(of) if of == mode => {}
                Some(of) => {
                    return Ok(HandlerOutcome::Ignore(format!(
                        "a {} mode event (livemode); this source moves money for {} mode events only (WALLET_STRIPE_MODE)",
                        of.as_str(),
                        mode.as_str()
                    )))
                }
                None => {
                    return Ok(HandlerOutcome::Ignore(format!(
                        "the event does not say its mode (no livemode); this source moves money for {} mode events only",
                        mode.as_str()
                    )))
                }
            }
            match stripe(event_type, &body, self.config.max_amount).map_err(unusable)? {
                Some(StripeNotice::Payment(notice)) => {
                    payment(&self.store, self.config.retention, m, notice).await
                }
                Some(StripeNotice::NoMoney(reason)) => Ok(HandlerOutcome::Ignore(reason)),
                Some(StripeNotice::Method(notice)) => {
                    autopay::saved_method(&self.store, m, notice).await
                }
                Some(StripeNotice::Detached(pm)) => autopay::detached(&self.store, m, pm).await,
                Some(StripeNotice::Unsettled(notice)) => {
                    autopay::unsettled(&self.store, m, notice).await
                }
                None => nothing(),
            }
        } else if m.source.as_str() == crate::balance::events::SOURCE
            && event_type == crate::balance::events::RECONCILED
        {
            // A charge the charging pass found confirmed at the provider, its webhook missing:
            // credited only as the attempt it names was recorded.
            reconciled::reconciled(&self.store, self.config.retention, m, &body).await
        } else if let Some(provider) = sources.email_provider(m.source.as_str()) {
            match provider.notice(event_type, &body).map_err(unusable)? {
                Some(notice) => {
                    let expires_in = self.config.hold_expires_in;
                    email(&self.store, &self.views, expires_in, m, notice).await
                }
                None => nothing(),
            }
        } else {
            nothing()
        }
    }
}

impl<S: ItemStore> Handler for WalletHandler<S> {
    fn name(&self) -> &str {
        "wallet"
    }

    fn handle<'a>(&'a self, message: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            match self.run(message).await {
                Ok(outcome) => outcome,
                Err(unhandled) => unhandled.into(),
            }
        })
    }
}
