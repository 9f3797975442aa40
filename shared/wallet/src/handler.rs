//! The [`WalletHandler`]: reads the rows an event concerns, applies [`crate::rules`], and returns
//! the writes that the processor commits in ONE transaction with the message's `processed`
//! transition — a row `Replace`d at the version read (a concurrent event on the same email or
//! payment conflicts and is re-run), the wallet `Adjust`ed by commutative adds (events on
//! different emails never conflict), the entry `Create`d — and the metrics (`WalletOverdrawn`,
//! `WalletReviewFlagged`) the processor emits once, after that transaction committed.

use crate::items::{adjust_wallet, email_sk, index_payment, payment_sk};
use crate::ledger::{Ledger, LedgerError};
use crate::model::{EmailRow, Entry, PaymentRow, Wallet};
use crate::parse::{self, EmailNotice, PaymentNotice};
use crate::rules::{self, EmailState, Movement, PaymentState};
use crate::METRICS_NAMESPACE;
use inbox_core::message::StoredMessage;
use inbox_core::metrics::Metric;
use inbox_core::process::registry::{Commit, Handler, HandlerFuture, HandlerOutcome, Registry};
use inbox_core::store::{Effect, ItemStore, StoreError};
use std::sync::Arc;

/// Which sources carry which events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletSources {
    /// The Stripe source (top-ups and refunds).
    pub stripe: String,
    /// The messaging provider's source (email delivery events).
    pub mailer: String,
}

impl Default for WalletSources {
    fn default() -> Self {
        Self {
            stripe: "stripe".into(),
            mailer: "mailer".into(),
        }
    }
}

/// The Stripe event types the wallet handles.
pub const STRIPE_TYPES: [&str; 3] = [
    "checkout.session.completed",
    "payment_intent.succeeded",
    "charge.refunded",
];

/// A wallet's hold took `available` below its floor (recorded all the same).
fn overdrawn(tenant: &str) -> Metric {
    Metric::count(METRICS_NAMESPACE, "WalletOverdrawn", 1)
        .with_property("Tenant", tenant)
        .with_note("hold takes the wallet below its floor; recorded and flagged overdrawn")
}

/// A tenant's monthly debits passed its review threshold.
fn review_flagged(tenant: &str) -> Metric {
    Metric::count(METRICS_NAMESPACE, "WalletReviewFlagged", 1)
        .with_property("Tenant", tenant)
        .with_note("monthly debits passed the review threshold")
}

fn retry(what: &str) -> impl FnOnce(StoreError) -> HandlerOutcome + '_ {
    move |e| HandlerOutcome::Retry(format!("reading {what}: {e}"))
}

/// Handles money-moving events for every tenant.
#[derive(Debug)]
pub struct WalletHandler<S> {
    store: S,
    sources: WalletSources,
}

impl<S: ItemStore> WalletHandler<S> {
    pub fn new(store: S, sources: WalletSources) -> Self {
        Self { store, sources }
    }

    /// Routes this handler for its events into `registry`.
    pub fn register(self, registry: Registry) -> Registry
    where
        S: 'static,
    {
        let sources = self.sources.clone();
        let me: Arc<dyn Handler> = Arc::new(self);
        let registry = STRIPE_TYPES
            .iter()
            .fold(registry, |r, t| r.on(&sources.stripe, t, me.clone()));
        registry.on_any(&sources.mailer, me)
    }

    fn ledger(&self) -> Ledger<'_, S> {
        Ledger::new(&self.store)
    }

    async fn wallet(&self, tenant: &str) -> Result<Wallet, HandlerOutcome> {
        match self.ledger().wallet(tenant).await {
            Ok(Some(wallet)) => Ok(wallet),
            Ok(None) => Err(HandlerOutcome::Permanent(format!(
                "no wallet for tenant {tenant:?}; create it (inboxctl wallet create), then replay this message"
            ))),
            Err(LedgerError::Unreadable(_)) => Err(HandlerOutcome::Permanent(format!(
                "the wallet item of tenant {tenant:?} is unreadable"
            ))),
            Err(LedgerError::Store(e)) => Err(HandlerOutcome::Retry(format!("reading the wallet: {e}"))),
        }
    }

    /// The wallet adjustment and the entry for a movement, and the metrics it raises.
    fn money(
        &self,
        m: &StoredMessage,
        wallet: &Wallet,
        subject: &str,
        mv: Movement,
        now: i64,
    ) -> (Vec<Effect>, Vec<Metric>) {
        let flags = rules::flags(&wallet.view(m.received_at), &mv);
        let mut metrics = Vec::new();
        if flags.overdrawn {
            metrics.push(overdrawn(&wallet.tenant));
        }
        if flags.review {
            metrics.push(review_flagged(&wallet.tenant));
        }
        let money = |minor| wallet.currency.amount(minor);
        let entry = Entry {
            id: uuid::Uuid::new_v4().to_string(),
            tenant: wallet.tenant.clone(),
            kind: mv.kind,
            amount: money(mv.amount),
            balance_delta: money(mv.balance_delta),
            held_delta: money(mv.held_delta),
            subject: subject.to_owned(),
            event_source: m.source.to_string(),
            event_id: m.event_id.to_string(),
            at: now,
        };
        let effects = vec![
            adjust_wallet(&wallet.tenant, &mv, m.received_at, flags),
            Effect::Create(entry.to_item()),
        ];
        (effects, metrics)
    }

    async fn email(
        &self,
        m: &StoredMessage,
        notice: EmailNotice,
    ) -> Result<HandlerOutcome, HandlerOutcome> {
        let wallet = self.wallet(&notice.tenant).await?;
        let sk = email_sk(&notice.message_id);
        let row = self
            .ledger()
            .email_row(&notice.tenant, &notice.message_id)
            .await
            .map_err(retry(&sk))?
            .unwrap_or_else(|| EmailRow {
                message_id: notice.message_id.clone(),
                ..Default::default()
            });
        let amount = if row.state == EmailState::New {
            wallet.message_price.minor()
        } else {
            row.amount
        };
        let (state, movement) = rules::email(row.state, notice.event, amount);
        let now = m.received_at;
        let mut next = row.clone();
        next.state = state;
        next.amount = amount;
        next.updated_at = Some(now);
        if state == EmailState::Held && row.state != EmailState::Held {
            next.held_at = Some(now);
        }
        if !next.events.contains(&m.event_id.to_string()) {
            next.events.push(m.event_id.to_string());
        }
        let mut commit = Commit::new(vec![next.replace(&notice.tenant, row.version)]);
        if let Some(mv) = movement {
            let (effects, metrics) = self.money(m, &wallet, &notice.message_id, mv, now);
            commit.effects.extend(effects);
            commit.metrics.extend(metrics);
        }
        Ok(HandlerOutcome::Commit(commit))
    }

    async fn payment(
        &self,
        m: &StoredMessage,
        notice: PaymentNotice,
    ) -> Result<HandlerOutcome, HandlerOutcome> {
        let tenant = match notice.tenant.clone() {
            Some(t) => t,
            None => match self
                .ledger()
                .payment_tenant(&notice.payment_key)
                .await
                .map_err(retry("PAYMENT"))?
            {
                Some(tenant) => tenant,
                // A refund may arrive before its payment's event was processed (any order): retry
                // with backoff, quarantined after the last attempt. A credit without a tenant
                // never will be.
                None if matches!(notice.event, rules::PaymentEvent::Refunded { .. }) => {
                    return Err(HandlerOutcome::Retry(format!(
                        "no tenant yet: data.object.metadata.tenant is missing and payment {} is not known (yet)",
                        notice.payment_key
                    )))
                }
                None => {
                    return Err(HandlerOutcome::Permanent(
                        "no tenant: data.object.metadata.tenant is missing".to_string(),
                    ))
                }
            },
        };
        let wallet = self.wallet(&tenant).await?;
        if let Some(currency) = &notice.currency {
            if currency != wallet.currency.as_str() {
                return Err(HandlerOutcome::Permanent(format!(
                    "currency {currency} does not match the wallet of {tenant:?} ({})",
                    wallet.currency.as_str()
                )));
            }
        }
        let sk = payment_sk(&notice.payment_key);
        let row = self
            .ledger()
            .payment_row(&tenant, &notice.payment_key)
            .await
            .map_err(retry(&sk))?
            .unwrap_or_else(|| PaymentRow {
                payment_key: notice.payment_key.clone(),
                ..Default::default()
            });
        let (state, movement) = rules::payment(
            PaymentState {
                credited: row.credited,
                refunded: row.refunded,
            },
            notice.event,
        );
        let now = m.received_at;
        let mut next = row.clone();
        next.credited = state.credited;
        next.refunded = state.refunded;
        next.updated_at = Some(now);
        if !next.events.contains(&m.event_id.to_string()) {
            next.events.push(m.event_id.to_string());
        }
        let mut commit = Commit::new(vec![next.replace(&tenant, row.version)]);
        if row.version.is_none() {
            commit
                .effects
                .push(index_payment(&notice.payment_key, &tenant));
        }
        if let Some(mv) = movement {
            let (effects, metrics) = self.money(m, &wallet, &notice.payment_key, mv, now);
            commit.effects.extend(effects);
            commit.metrics.extend(metrics);
        }
        Ok(HandlerOutcome::Commit(commit))
    }

    async fn run(&self, m: &StoredMessage) -> Result<HandlerOutcome, HandlerOutcome> {
        let body = m
            .json()
            .map_err(|e| HandlerOutcome::Permanent(format!("the body is not JSON: {e}")))?;
        let event_type = m
            .event_type
            .as_ref()
            .map(|t| t.as_str())
            .unwrap_or_default();
        let unusable = |e: parse::Unusable| HandlerOutcome::Permanent(e.0);
        let nothing = || Ok(HandlerOutcome::commit(Vec::new()));
        if m.source.as_str() == self.sources.stripe {
            match parse::stripe(event_type, &body).map_err(unusable)? {
                Some(notice) => self.payment(m, notice).await,
                None => nothing(),
            }
        } else if m.source.as_str() == self.sources.mailer {
            match parse::email(event_type, &body).map_err(unusable)? {
                Some(notice) => self.email(m, notice).await,
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
                Ok(outcome) | Err(outcome) => outcome,
            }
        })
    }
}
