//! The wallet handler's Stripe payments, as Stripe sends them: in any order, with the tenant only
//! where the integration put it.
//!
//! - The tenant is the payment index's (`PAYMENT#{payment intent}`: written with the payment's
//!   first row, by the first event that named a tenant), else the event's own `metadata.tenant`
//!   (a Checkout Session's; a payment intent's only when `payment_intent_data.metadata` set it).
//!   A refund's own metadata is never read: refunds find their tenant through the index.
//! - A payment that succeeded (a paid session, `async_payment_succeeded`, `payment_intent.succeeded`)
//!   naming no tenant, of no payment the index knows, is kept as unmatched ([`crate::payments::unmatched`]):
//!   listed for a human, and resolved by the transaction of the first later event that names the
//!   tenant (a card's session usually arrives a moment after its intent), or bound by an operator
//!   ([`crate::Ledger::bind`]). A session or intent without a tenant that moves no money (unpaid,
//!   failed) is declined (`ignored`) with the reason.
//! - A refund of a payment no wallet knows (yet) is recorded on the payment's index (the largest
//!   cumulative `amount_refunded`, expiring after the retention) and settled by the payment's
//!   credit if it comes later — so a refund processed before its payment is never lost, and one
//!   of another business's payment moves nothing and never alarms. A payment intent that saved
//!   its method for later (`setup_future_usage`) and names no tenant parks the method there the
//!   same way: its session, which names the tenant, saves it for autopay.
//! - [`crate::balance::rules::payment`] decides the money: credited once per payment, a delayed payment
//!   awaiting its funds, refunds never beyond what was credited.

use crate::autopay::handler::{close_attempt, method_effects};
use crate::autopay::SavedMethod;
use crate::balance::handler::{money, read_failed, wallet, Unhandled};
use crate::balance::ledger;
use crate::balance::model::{PaymentIndex, PaymentRow};
use crate::balance::rules::{self, PaymentEvent};
use crate::money::Minor;
use crate::payments::ledger::unmatched_payment;
use crate::payments::parse::PaymentNotice;
use crate::payments::unmatched::{payer, Resolution, UnmatchedPayment};
use crate::tenant::TenantId;
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Commit, HandlerOutcome};
use inbox_core::store::{Effect, ItemStore};
use std::time::Duration;

/// Adds `event_id` to `events` unless it is there.
fn link(events: &mut Vec<String>, event_id: &str) {
    if !events.iter().any(|e| e == event_id) {
        events.push(event_id.to_owned());
    }
}

/// A Stripe payment's event `notice` (of message `m`): credited, refunded, parked or kept as
/// unmatched as the module says; what is kept for it expires `retention` after it.
pub(crate) async fn payment<S: ItemStore>(
    store: &S,
    retention: Duration,
    m: &StoredMessage,
    notice: PaymentNotice,
) -> Result<HandlerOutcome, Unhandled> {
    let key = notice.payment_key.clone();
    let index = ledger::payment_index(store, &key)
        .await
        .map_err(read_failed("the payment index"))?;
    let known = index.as_ref().and_then(|i| i.tenant.clone());
    let tenant = match (known, notice.tenant.clone()) {
        (Some(known), Some(named)) if known != named => {
            return Err(Unhandled::Permanent(format!(
                "payment {key} belongs to tenant {known:?}, but this event names {named:?} \
                 (metadata.tenant); nothing moved"
            )))
        }
        (Some(known), _) => known,
        (None, Some(named)) => named,
        (None, None) => {
            return match notice.event {
                PaymentEvent::Refunded { total } => {
                    Ok(park(retention, m, &key, index, Some(total), None))
                }
                // Money received for nobody we know: kept for a human, never ignored.
                PaymentEvent::Paid { amount } => unmatched(store, m, &notice, amount, index).await,
                // A method saved for later, before its session named the tenant: kept for it.
                _ if notice.method.is_some() => {
                    Ok(park(retention, m, &key, index, None, notice.method.clone()))
                }
                _ => Ok(HandlerOutcome::Ignore(format!(
                    "not ours: payment {key} names no tenant (metadata.tenant), no wallet's \
                     checkout recorded it, and this event moves no money; if it succeeds \
                     without naming one, it is kept as unmatched (inboxctl wallet unmatched)"
                ))),
            };
        }
    };
    let wallet = wallet(store, &tenant).await?;
    if let Some(currency) = &notice.currency {
        if currency != wallet.currency.as_str() {
            return Err(Unhandled::Permanent(format!(
                "currency {currency} does not match the wallet of {tenant:?} ({})",
                wallet.currency.as_str()
            )));
        }
    }
    let row = ledger::payment_row(store, &tenant, &key)
        .await
        .map_err(read_failed("the payment's row"))?
        .unwrap_or_else(|| PaymentRow {
            payment_key: key.clone(),
            ..Default::default()
        });
    let mut state = row.state();
    if row.version.is_none() {
        // Refunds reported before the payment was known are settled now.
        if let Some(parked) = &index {
            state.refund_total = state.refund_total.max(parked.refund_total.get());
        }
    }
    let paid = matches!(notice.event, PaymentEvent::Paid { .. });
    let method = notice
        .method
        .clone()
        .or_else(|| index.as_ref().and_then(|i| i.method.clone()));
    let (state, moves) = rules::payment(state, notice.event, wallet.currency)
        .map_err(|e| Unhandled::Permanent(format!("refused: payment {key}: {e}")))?;
    let event_id = m.event_id.to_string();
    let mut next = row.clone().with_state(state);
    next.updated_at = Some(m.received_at);
    link(&mut next.events, &event_id);
    let mut commit = Commit::new(vec![next.replace(&tenant, row.version)]);
    if index.as_ref().is_none_or(|i| i.tenant.is_none()) {
        // The index names the tenant from now on. A conditional write: a refund parked on it
        // meanwhile conflicts, and this event is re-run on fresh state.
        let read = index.is_some();
        let mut named = index.unwrap_or_else(|| PaymentIndex {
            payment_key: key.clone(),
            ..Default::default()
        });
        if named.unmatched {
            // The payment kept as unmatched is this tenant's: resolved in this transaction.
            commit
                .effects
                .extend(matched(store, retention, m, &key, &tenant).await?);
            named.unmatched = false;
        }
        named.tenant = Some(tenant.clone());
        link(&mut named.events, &event_id);
        commit.effects.push(named.replace(read, None));
    }
    if !moves.is_empty() {
        let shard = crate::balance::items::shards::pick(&key, wallet.shard_count());
        let (effects, metrics, entries) = money(m, &wallet, &key, shard, &moves)?;
        commit.effects.extend(effects);
        commit
            .effects
            .extend(entries.iter().map(|e| Effect::Create(e.to_item())));
        commit.metrics.extend(metrics);
    }
    let credited = wallet.currency.amount(state.credited);
    match (&notice.attempt, &method) {
        // One write of the autopay settings per transaction: an attempt's own charge saves
        // no method.
        (Some(attempt), _) if paid => commit
            .effects
            .extend(close_attempt(store, m, &tenant, attempt, &key, credited).await?),
        (None, Some(method)) => commit
            .effects
            .extend(method_effects(store, m, &tenant, method).await?),
        _ => {}
    }
    Ok(HandlerOutcome::Commit(commit))
}

/// Records a refund of a payment no wallet knows (yet) on its index, to be settled by its
/// credit, or the method it saved for later, to be saved when an event names its tenant;
/// forgotten after the retention if that never comes.
fn park(
    retention: Duration,
    m: &StoredMessage,
    key: &str,
    index: Option<PaymentIndex>,
    total: Option<i64>,
    method: Option<SavedMethod>,
) -> HandlerOutcome {
    let read = index.is_some();
    let mut parked = index.unwrap_or_else(|| PaymentIndex {
        payment_key: key.to_owned(),
        ..Default::default()
    });
    if let Some(total) = total {
        parked.refund_total = parked.refund_total.max(Minor::new(total));
    }
    if method.is_some() {
        parked.method = method;
    }
    link(&mut parked.events, m.event_id.as_str());
    // An index beside an open unmatched payment stays as long as that payment does.
    let expires_at = (!parked.unmatched).then(|| expires_at(retention, m));
    HandlerOutcome::commit(vec![parked.replace(read, expires_at)])
}

/// When what is kept for an event received at `m.received_at` expires (seconds): a retention
/// later.
fn expires_at(retention: Duration, m: &StoredMessage) -> i64 {
    let retention = i64::try_from(retention.as_secs()).unwrap_or(i64::MAX / 2);
    m.received_at.div_euclid(1000).saturating_add(retention)
}

/// Keeps a payment that succeeded naming no tenant, of no payment the index knows, as
/// unmatched ([`crate::payments::unmatched`]): the unmatched item (created, or this message added to
/// it) and the index marked `unmatched` (with the method the payment saved for later, if
/// any), in this message's transaction. The index write is conditional: an event naming the
/// tenant meanwhile conflicts, and this one is re-run and finds the tenant.
async fn unmatched<S: ItemStore>(
    store: &S,
    m: &StoredMessage,
    notice: &PaymentNotice,
    amount: i64,
    index: Option<PaymentIndex>,
) -> Result<HandlerOutcome, Unhandled> {
    let key = &notice.payment_key;
    let found = unmatched_payment(store, key)
        .await
        .map_err(read_failed("the unmatched payment"))?;
    let message = m.key();
    let (customer, email) = m.json().map(|b| payer(&b)).unwrap_or_default();
    let record = match found {
        // A dismissed one stays dismissed and keeps this message with the others.
        Some(r) if !r.awaits_tenant() => {
            return Err(Unhandled::Permanent(format!(
                "payment {key} was resolved ({:?}) but its index names no tenant; bind it \
                 again (inboxctl wallet bind {key} TENANT) after checking the index",
                r.resolution
            )))
        }
        Some(r) => r,
        None => UnmatchedPayment::first(
            key,
            amount,
            notice.currency.clone(),
            &message,
            m.received_at,
            &m.body,
        ),
    }
    .reported_by(&message, notice.currency.clone(), customer, email);
    let read = index.is_some();
    let mut marked = index.unwrap_or_else(|| PaymentIndex {
        payment_key: key.clone(),
        ..Default::default()
    });
    marked.unmatched = true;
    if notice.method.is_some() {
        marked.method = notice.method.clone();
    }
    link(&mut marked.events, m.event_id.as_str());
    Ok(HandlerOutcome::commit(vec![
        record.replace(None),
        marked.replace(read, None),
    ]))
}

/// The write that marks the payment's open (or dismissed) unmatched item matched to `tenant`
/// by this message (none if there is none such).
async fn matched<S: ItemStore>(
    store: &S,
    retention: Duration,
    m: &StoredMessage,
    key: &str,
    tenant: &TenantId,
) -> Result<Vec<Effect>, Unhandled> {
    let found = unmatched_payment(store, key)
        .await
        .map_err(read_failed("the unmatched payment"))?;
    Ok(found
        .filter(UnmatchedPayment::awaits_tenant)
        .map(|mut r| {
            r.resolution = Resolution::Matched {
                tenant: tenant.clone(),
                at: m.received_at,
                by_event: m.key().to_string(),
            };
            r.replace(Some(expires_at(retention, m)))
        })
        .into_iter()
        .collect())
}
