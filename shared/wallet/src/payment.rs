//! The wallet handler's Stripe payments, as Stripe sends them: in any order, with the tenant only
//! where the integration put it.
//!
//! - The tenant is the payment index's (`PAYMENT#{payment intent}`: written with the payment's
//!   first row, by the first event that named a tenant), else the event's own `metadata.tenant`
//!   (a Checkout Session's; a payment intent's only when `payment_intent_data.metadata` set it).
//!   A refund's own metadata is never read: refunds find their tenant through the index.
//! - A session or intent that names no tenant and matches no known payment is not ours: declined
//!   (`ignored`) with the reason. Nothing is lost by that: a Checkout top-up is credited by its
//!   session's own events (`completed` with `paid`, or `async_payment_succeeded`), which carry
//!   the tenant, whatever order the intent's event comes in.
//! - A refund of a payment no wallet knows (yet) is recorded on the payment's index (the largest
//!   cumulative `amount_refunded`, expiring after the retention) and settled by the payment's
//!   credit if it comes later — so a refund processed before its payment is never lost, and one
//!   of another business's payment moves nothing and never alarms. A payment intent that saved
//!   its method for later (`setup_future_usage`) and names no tenant parks the method there the
//!   same way: its session, which names the tenant, saves it for autopay.
//! - [`crate::rules::payment`] decides the money: credited once per payment, a delayed payment
//!   awaiting its funds, refunds never beyond what was credited.

use crate::autopay::SavedMethod;
use crate::handler::{read_failed, WalletHandler};
use crate::model::{PaymentIndex, PaymentRow};
use crate::parse::PaymentNotice;
use crate::rules::{self, PaymentEvent};
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Commit, HandlerOutcome};
use inbox_core::store::ItemStore;

/// Adds `event_id` to `events` unless it is there.
fn link(events: &mut Vec<String>, event_id: &str) {
    if !events.iter().any(|e| e == event_id) {
        events.push(event_id.to_owned());
    }
}

impl<S: ItemStore> WalletHandler<S> {
    pub(crate) async fn payment(
        &self,
        m: &StoredMessage,
        notice: PaymentNotice,
    ) -> Result<HandlerOutcome, HandlerOutcome> {
        let key = notice.payment_key.clone();
        let index = self
            .ledger()
            .payment_index(&key)
            .await
            .map_err(read_failed("the payment index"))?;
        let known = index.as_ref().and_then(|i| i.tenant.clone());
        let tenant = match (known, notice.tenant.clone()) {
            (Some(known), Some(named)) if known != named => {
                return Err(HandlerOutcome::Permanent(format!(
                    "payment {key} belongs to tenant {known:?}, but this event names {named:?} \
                     (metadata.tenant); nothing moved"
                )))
            }
            (Some(known), _) => known,
            (None, Some(named)) => named,
            (None, None) => {
                return Ok(match notice.event {
                    PaymentEvent::Refunded { total } => {
                        self.park(m, &key, index, Some(total), None)
                    }
                    // A method saved for later, before its session named the tenant: kept for it.
                    _ if notice.method.is_some() => {
                        self.park(m, &key, index, None, notice.method.clone())
                    }
                    _ => HandlerOutcome::Ignore(format!(
                        "not ours: payment {key} names no tenant (metadata.tenant) and no wallet's \
                         checkout recorded it; a Checkout top-up is credited by its session's \
                         events, which carry the tenant"
                    )),
                });
            }
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
        let row = self
            .ledger()
            .payment_row(&tenant, &key)
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
                state.refund_total = state.refund_total.max(parked.refund_total);
            }
        }
        let paid = matches!(notice.event, PaymentEvent::Paid { .. });
        let method = notice
            .method
            .clone()
            .or_else(|| index.as_ref().and_then(|i| i.method.clone()));
        let (state, moves) = rules::payment(state, notice.event, wallet.currency)
            .map_err(|e| HandlerOutcome::Permanent(format!("refused: payment {key}: {e}")))?;
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
            named.tenant = Some(tenant.clone());
            link(&mut named.events, &event_id);
            commit.effects.push(named.replace(read, None));
        }
        if !moves.is_empty() {
            let (effects, metrics) = self.money(m, &wallet, &key, &moves)?;
            commit.effects.extend(effects);
            commit.metrics.extend(metrics);
        }
        let credited = wallet.currency.amount(state.credited);
        match (&notice.attempt, &method) {
            // One write of the autopay settings per transaction: an attempt's own charge saves
            // no method.
            (Some(attempt), _) if paid => commit.effects.extend(
                self.close_attempt(m, &tenant, attempt, &key, credited)
                    .await?,
            ),
            (None, Some(method)) => commit
                .effects
                .extend(self.method_effects(m, &tenant, method).await?),
            _ => {}
        }
        Ok(HandlerOutcome::Commit(commit))
    }

    /// Records a refund of a payment no wallet knows (yet) on its index, to be settled by its
    /// credit, or the method it saved for later, to be saved when an event names its tenant;
    /// forgotten after the retention if that never comes.
    fn park(
        &self,
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
            parked.refund_total = parked.refund_total.max(total);
        }
        if method.is_some() {
            parked.method = method;
        }
        link(&mut parked.events, m.event_id.as_str());
        let retention = i64::try_from(self.config.retention.as_secs()).unwrap_or(i64::MAX / 2);
        let expires_at = m.received_at.div_euclid(1000).saturating_add(retention);
        HandlerOutcome::commit(vec![parked.replace(read, Some(expires_at))])
    }
}
