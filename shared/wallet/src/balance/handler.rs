//! The balance's part of the wallet handler, shared by every slice that moves money: the wallet
//! a movement decides on (read, or viewed when sharded), the writes of one event's movements (the
//! wallet's adjustment and notices, their metrics and entries), why a message was not handled
//! ([`Unhandled`]), and how a failed read becomes that (a store error retried, an unreadable item
//! permanent).

use crate::balance::items::{adjust_wallet, notice_writes};
use crate::balance::ledger::{self, LedgerError};
use crate::balance::model::{Entry, Wallet};
use crate::balance::rules::{self, Flags, Movement};
use crate::balance::views::{self, Viewed, WalletViews};
use crate::tenant::TenantId;
use crate::METRICS_NAMESPACE;
use inbox_core::message::StoredMessage;
use inbox_core::metrics::Metric;
use inbox_core::process::registry::HandlerOutcome;
use inbox_core::store::{Effect, ItemStore};

/// A wallet's hold took `available` below its floor (recorded all the same).
fn overdrawn(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "WalletOverdrawn", 1)
        .with_property("Tenant", tenant)
        .with_note("hold takes the wallet below its floor; recorded and flagged overdrawn")
}

/// A tenant's monthly debits passed its review threshold.
fn review_flagged(tenant: &TenantId) -> Metric {
    Metric::count(METRICS_NAMESPACE, "WalletReviewFlagged", 1)
        .with_property("Tenant", tenant)
        .with_note("monthly debits passed the review threshold")
}

/// Why a message was not handled (nothing written): the processor retries it, fails it
/// permanently, or refuses it (quarantined, its metrics counted), each with the reason. What a
/// slice's handling returns as its error; the handler answers it as the matching
/// [`HandlerOutcome`].
#[derive(Debug)]
pub(crate) enum Unhandled {
    /// A passing failure (a store error): tried again.
    Retry(String),
    /// The message can never be handled as it is (unreadable, refused by the rules).
    Permanent(String),
    /// A message its records contradict: refused, quarantined, `metrics` counted once.
    Refused {
        reason: String,
        metrics: Vec<Metric>,
    },
}

impl From<Unhandled> for HandlerOutcome {
    fn from(u: Unhandled) -> Self {
        match u {
            Unhandled::Retry(reason) => Self::Retry(reason),
            Unhandled::Permanent(reason) => Self::Permanent(reason),
            Unhandled::Refused { reason, metrics } => Self::Refused { reason, metrics },
        }
    }
}

/// A read failed: a store error is retried, an unreadable item fails permanently with its reason.
pub(crate) fn read_failed(what: &str) -> impl FnOnce(LedgerError) -> Unhandled + '_ {
    move |e| match e {
        LedgerError::Store(e) => Unhandled::Retry(format!("reading {what}: {e}")),
        LedgerError::Unreadable(reason) => Unhandled::Permanent(reason),
    }
}

/// A movement of a tenant that has no wallet: permanent, until one is created and it replayed.
fn no_wallet(tenant: &TenantId) -> Unhandled {
    Unhandled::Permanent(format!(
        "no wallet for tenant {tenant:?}; create it (inboxctl wallet create), then replay this message"
    ))
}

/// What the movements of one event write and raise ([`money`]): the wallet's adjustment and
/// notices, their metrics, and the movements' entries.
pub(crate) type MoneyWrites = (Vec<Effect>, Vec<Metric>, Vec<Entry>);

/// The wallet as read (its shards at once, see [`ledger::read_wallet`]: what a movement decides
/// on; its amounts are commutative adds).
pub(crate) async fn wallet<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Wallet, Unhandled> {
    match ledger::read_wallet(store, tenant).await {
        Ok(Some((wallet, _))) => Ok(wallet),
        Ok(None) => Err(no_wallet(tenant)),
        Err(e) => Err(read_failed("the wallet")(e)),
    }
}

/// The wallet an email's movement starts from ([`views::viewed`]: a sharded wallet's view when
/// one is fresh, else every shard read strongly).
pub(crate) async fn viewed<S: ItemStore>(
    store: &S,
    views: &WalletViews,
    tenant: &TenantId,
) -> Result<Viewed, Unhandled> {
    match views::viewed(store, tenant, views).await {
        Ok(Some(viewed)) => Ok(viewed),
        Ok(None) => Err(no_wallet(tenant)),
        Err(e) => Err(read_failed("the wallet")(e)),
    }
}

/// The wallet adjustment (on shard `shard`) for the movements of one event, the metrics they
/// raise, and their entries (the caller writes them: a payment's as entry items, an email's in
/// its row). Refused (permanently, with the reason) if the wallet's figures would overflow.
pub(crate) fn money(
    m: &StoredMessage,
    wallet: &Wallet,
    subject: &str,
    shard: u32,
    moves: &[Movement],
) -> Result<MoneyWrites, Unhandled> {
    let refuse = |e: crate::money::Overflow| {
        Unhandled::Permanent(format!(
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
    let notices = crate::balance::notices::notices(wallet, moves, m.received_at).map_err(refuse)?;
    let mut effects = adjust_wallet(&wallet.tenant, shard, moves, m.received_at, flags, &notices)
        .map_err(refuse)?;
    effects.extend(notice_writes(&notices, m.received_at).map_err(refuse)?);
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
