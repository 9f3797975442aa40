//! The [`WalletHandler`]: reads the rows an event concerns, applies [`crate::balance::rules`], and returns
//! the writes that the processor commits in ONE transaction with the message's `processed`
//! transition — a row `Replace`d at the version read (a concurrent event on the same email or
//! payment conflicts and is re-run), the wallet `Adjust`ed by commutative adds (events on
//! different emails never conflict), the entries `Create`d, the events the movement announces
//! ([`crate::balance::notices`]: `wallet.low_balance`, `wallet.review_threshold_reached`, their wallet
//! attributes in the wallet's own write) — and the metrics (`WalletOverdrawn`,
//! `WalletReviewFlagged`, the notices') the processor emits once, after that transaction committed. The
//! wallet's own `wallet.autopay_reconciled` credits only what the attempt it names says
//! (`handler::reconciled`: anything else is refused, quarantined and counted, `ForgedInternalEvent`). An event
//! that is not the wallet's business (another Stripe mode, a payment of no wallet's) is declined
//! with the reason (`ignored`, no alarm). Stripe payments are in [`crate::payments::handler`]; autopay (the
//! attempt a hold or debit at the threshold writes with it, `AutopayAttemptMade`, and the cap's
//! `AutopayLimitReached`; the credit that closes an attempt; saved methods) in
//! [`crate::autopay::handler`].

use crate::balance::items::adjust_wallet;
use crate::balance::items::shards::pick;
use crate::balance::ledger::{self, LedgerError};
use crate::balance::model::{EmailRow, Entry, Wallet};
use crate::balance::rules::{self, EmailState, Flags, Movement};
use crate::balance::views::{self, Viewed, WalletViews};
use crate::ledger::Ledger;
use crate::config::WalletConfig;
use crate::email::holds::expiry;
use crate::parse::{self, EmailNotice, StripeNotice};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::message::StoredMessage;
use inbox_core::metrics::Metric;
use inbox_core::process::registry::{Commit, Handler, HandlerFuture, HandlerOutcome, Registry};
use inbox_core::store::{Effect, ItemStore};
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

/// A read failed: a store error is retried, an unreadable item fails permanently with its reason.
pub(crate) fn read_failed(what: &str) -> impl FnOnce(LedgerError) -> HandlerOutcome + '_ {
    move |e| match e {
        LedgerError::Store(e) => HandlerOutcome::Retry(format!("reading {what}: {e}")),
        LedgerError::Unreadable(reason) => HandlerOutcome::Permanent(reason),
    }
}

/// A movement of a tenant that has no wallet: permanent, until one is created and it replayed.
fn no_wallet(tenant: &TenantId) -> HandlerOutcome {
    HandlerOutcome::Permanent(format!(
        "no wallet for tenant {tenant:?}; create it (inboxctl wallet create), then replay this message"
    ))
}

/// What the movements of one event write and raise ([`WalletHandler::money`]): the wallet's
/// adjustment and notices, their metrics, and the movements' entries.
pub(crate) type MoneyWrites = (Vec<Effect>, Vec<Metric>, Vec<Entry>);

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

    pub(crate) fn ledger(&self) -> Ledger<'_, S> {
        Ledger::new(&self.store)
    }

    /// The wallet as read (its shards at once, see [`ledger::read_wallet`]: what a movement
    /// decides on; its amounts are commutative adds).
    pub(crate) async fn wallet(&self, tenant: &TenantId) -> Result<Wallet, HandlerOutcome> {
        match ledger::read_wallet(&self.store, tenant).await {
            Ok(Some((wallet, _))) => Ok(wallet),
            Ok(None) => Err(no_wallet(tenant)),
            Err(e) => Err(read_failed("the wallet")(e)),
        }
    }

    /// The wallet an email's movement starts from ([`views::viewed`]: a sharded wallet's view
    /// when one is fresh, else every shard read strongly).
    async fn viewed(&self, tenant: &TenantId) -> Result<Viewed, HandlerOutcome> {
        match views::viewed(&self.store, tenant, &self.views).await {
            Ok(Some(viewed)) => Ok(viewed),
            Ok(None) => Err(no_wallet(tenant)),
            Err(e) => Err(read_failed("the wallet")(e)),
        }
    }

    /// The wallet adjustment (on shard `shard`) for the movements of one event, the metrics they
    /// raise, and their entries (the caller writes them: a payment's as entry items, an email's in
    /// its row). Refused (permanently, with the reason) if the wallet's figures would overflow.
    pub(crate) fn money(
        &self,
        m: &StoredMessage,
        wallet: &Wallet,
        subject: &str,
        shard: u32,
        moves: &[Movement],
    ) -> Result<MoneyWrites, HandlerOutcome> {
        let refuse = |e: crate::money::Overflow| {
            HandlerOutcome::Permanent(format!(
                "refused: in the wallet of {:?}, {e}",
                wallet.tenant
            ))
        };
        let mut view = wallet.view(m.received_at);
        let mut flags = Flags::default();
        for mv in moves {
            flags = flags | rules::flags(&view, mv).map_err(refuse)?;
            view = view.after(mv).map_err(refuse)?;
        }
        let mut metrics = Vec::new();
        if flags.overdrawn {
            metrics.push(overdrawn(&wallet.tenant));
        }
        if flags.review {
            metrics.push(review_flagged(&wallet.tenant));
        }
        // What the movements announce: its wallet attributes join the wallet's own write.
        let notices =
            crate::balance::notices::notices(wallet, moves, m.received_at).map_err(refuse)?;
        let mut effects =
            adjust_wallet(&wallet.tenant, shard, moves, m.received_at, flags, &notices)
                .map_err(refuse)?;
        effects.extend(notices.effects);
        metrics.extend(notices.metrics);
        // One id per event; its second movement's entry sorts right after the first (same time).
        let id = uuid::Uuid::new_v4().to_string();
        let entries = moves
            .iter()
            .enumerate()
            .map(|(i, mv)| {
                Entry::of(
                    if i == 0 {
                        id.clone()
                    } else {
                        format!("{id}.{i}")
                    },
                    &wallet.tenant,
                    mv,
                    subject,
                    (m.source.as_str(), m.event_id.as_str()),
                    m.received_at,
                )
            })
            .collect();
        Ok((effects, metrics, entries))
    }

    async fn email(
        &self,
        m: &StoredMessage,
        notice: EmailNotice,
    ) -> Result<HandlerOutcome, HandlerOutcome> {
        let viewed = self.viewed(&notice.tenant).await?;
        let row = self
            .ledger()
            .email_row(&notice.tenant, &notice.message_id)
            .await
            .map_err(read_failed("the email's row"))?
            .unwrap_or_else(|| EmailRow {
                message_id: notice.message_id.clone(),
                ..Default::default()
            });
        // The shard its hold is on (a capture or release), else the one its message hashes to
        // (of the count of shards as read: only ever raised, so one that exists).
        let shard = if row.state == EmailState::Held {
            row.shard
        } else {
            pick(&notice.message_id, viewed.wallet.shard_count())
        };
        // That shard read strongly, the others as viewed (all of them strongly without a view).
        let wallet = views::own_shard(&self.store, viewed, shard, &self.views)
            .await
            .map_err(read_failed("the wallet's shard"))?;
        let amount = if row.state == EmailState::New {
            wallet.message_price.minor()
        } else {
            row.amount
        };
        let (state, movement) =
            rules::email(row.state, notice.event, wallet.currency.amount(amount));
        let now = m.received_at;
        let mut next = row.clone();
        next.state = state;
        next.amount = amount;
        next.updated_at = Some(now);
        if state == EmailState::Held && row.state != EmailState::Held {
            next.held_at = Some(now);
            next.expires_at = Some(now + expiry::millis(self.config.hold_expires_in));
        }
        if !next.events.contains(&m.event_id.to_string()) {
            next.events.push(m.event_id.to_string());
        }
        if state == EmailState::Held && row.state != EmailState::Held {
            next.shard = shard;
        }
        // The row first, with the movement's entry in it (one item for both).
        let mut commit = Commit::new(Vec::new());
        if let Some(mv) = movement {
            let (effects, metrics, entries) =
                self.money(m, &wallet, &notice.message_id, shard, &[mv])?;
            next.entries.extend(entries.iter().map(Entry::in_row));
            commit.effects.extend(effects);
            commit.metrics.extend(metrics);
            if matches!(mv.kind, rules::EntryKind::Hold | rules::EntryKind::Debit) {
                // The wallet as read plus this movement: level-triggered, so a stale read delays
                // an attempt to the next hold or debit, never skips it.
                let available = wallet
                    .view(now)
                    .after(&mv)
                    .and_then(|v| v.available())
                    .map_err(|e| HandlerOutcome::Permanent(format!("refused: {e}")))?;
                let (effects, metrics) = self.at_threshold(m, &wallet, available).await?;
                commit.effects.extend(effects);
                commit.metrics.extend(metrics);
            }
        }
        if row.state == EmailState::Expired && state == EmailState::Debited {
            commit
                .metrics
                .push(expiry::late_capture_metric(&notice.tenant));
        }
        commit
            .effects
            .insert(0, next.replace(&notice.tenant, row.version));
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
            match parse::stripe(event_type, &body, self.config.max_amount).map_err(unusable)? {
                Some(StripeNotice::Payment(notice)) => self.payment(m, notice).await,
                Some(StripeNotice::NoMoney(reason)) => Ok(HandlerOutcome::Ignore(reason)),
                Some(StripeNotice::Method(notice)) => self.saved_method(m, notice).await,
                Some(StripeNotice::Detached(pm)) => self.detached(m, pm).await,
                Some(StripeNotice::Unsettled(notice)) => self.unsettled(m, notice).await,
                None => nothing(),
            }
        } else if m.source.as_str() == crate::balance::events::SOURCE
            && event_type == crate::balance::events::RECONCILED
        {
            // A charge the charging pass found confirmed at the provider, its webhook missing:
            // credited only as the attempt it names was recorded.
            self.reconciled(m, &body).await
        } else if let Some(provider) = sources.email_provider(m.source.as_str()) {
            match provider.notice(event_type, &body).map_err(unusable)? {
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
