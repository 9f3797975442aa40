//! The prepaid wallet ledger: Stripe top-ups credit a tenant's wallet, email delivery events hold,
//! debit and refund it, each exactly once, in any order.
//!
//! - [`rules`]: the pure rules (next state and money movement per event).
//! - [`parse`]: tolerant parsing of the provider events.
//! - this module: the items (wallet, per-email and per-payment rows, ledger entries) and the
//!   [`WalletHandler`], which reads the rows, applies the rules, and returns the writes that the
//!   processor commits in ONE transaction with the message's `processed` transition: a row
//!   `Replace`d at the version read (a concurrent event on the same email or payment conflicts and
//!   is retried), the wallet `Adjust`ed by commutative adds (events on different emails never
//!   conflict), and the entry `Create`d.
//! - [`reconcile`]: the consistency report.
//! - [`config`]: the ledger's environment variables (documented with the core's `Var`).
//!
//! Items live in the inbox table under `pk = WALLET#{tenant}`:
//!
//! | item | `sk` | holds |
//! |---|---|---|
//! | wallet | `WALLET` | currency, balance, held, floor, price per email, review threshold, flags, `debits_YYYY_MM` |
//! | email | `EMAIL#{message_id}` | state, amount, the webhook event ids that moved it, version |
//! | payment | `PAY#{payment intent}` | credited, refunded, event ids, version |
//! | entry | `ENTRY#{ms}#{uuid}` | kind, amount, balance and held deltas, email or payment id, webhook event id, time |
//!
//! plus `pk = PAYMENT#{payment intent}`, `sk = PAYMENT`: the tenant of a payment, for refunds
//! whose charge carries no tenant.

pub mod config;
pub mod parse;
pub mod reconcile;
pub mod rules;

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome};
use inbox_core::store::{Effect, Item, ItemStore};
use parse::{EmailNotice, PaymentNotice};
use rules::{EmailState, Movement, PaymentState, WalletView};
use serde::Serialize;
use std::collections::BTreeMap;

pub const KIND_WALLET: &str = "wallet";
pub const KIND_EMAIL: &str = "email";
pub const KIND_PAYMENT: &str = "payment";
pub const KIND_ENTRY: &str = "entry";
pub const KIND_PAYMENT_INDEX: &str = "payment_index";
pub const WALLET_SK: &str = "WALLET";
pub const EMAIL_PREFIX: &str = "EMAIL#";
pub const PAYMENT_PREFIX: &str = "PAY#";
pub const ENTRY_PREFIX: &str = "ENTRY#";

pub fn wallet_pk(tenant: &str) -> String {
    format!("WALLET#{tenant}")
}

fn payment_index_pk(payment_key: &str) -> String {
    format!("PAYMENT#{payment_key}")
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn get_s(item: &Item, k: &str) -> Option<String> {
    item.get(k).and_then(|v| v.as_s().ok()).cloned()
}

fn get_n(item: &Item, k: &str) -> Option<i64> {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

fn get_bool(item: &Item, k: &str) -> bool {
    item.get(k)
        .and_then(|v| v.as_bool().ok())
        .copied()
        .unwrap_or(false)
}

fn get_list(item: &Item, k: &str) -> Vec<String> {
    item.get(k)
        .and_then(|v| v.as_l().ok())
        .map(|l| l.iter().filter_map(|v| v.as_s().ok().cloned()).collect())
        .unwrap_or_default()
}

fn list(v: &[String]) -> AttributeValue {
    AttributeValue::L(v.iter().cloned().map(AttributeValue::S).collect())
}

fn state_name<T: Serialize>(t: &T) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn parse_state<T: serde::de::DeserializeOwned + Default>(name: Option<String>) -> T {
    name.and_then(|n| serde_json::from_value(serde_json::Value::String(n)).ok())
        .unwrap_or_default()
}

/// The calendar month (UTC) of a time in ms, as `YYYY_MM` (for the monthly debit counter).
pub fn month_of(ms: i64) -> String {
    // Days since 1970-01-01 → civil date (Howard Hinnant's algorithm).
    let z = ms.div_euclid(86_400_000) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}_{month:02}")
}

/// The attribute that counts a month's debits.
pub fn month_debits_attr(ms: i64) -> String {
    format!("debits_{}", month_of(ms))
}

/// A tenant's wallet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wallet {
    pub tenant: String,
    /// Lower-case ISO currency; every amount is in its minor unit.
    pub currency: String,
    pub balance: i64,
    pub held: i64,
    /// `available` may not go below this without flagging the wallet `overdrawn`.
    pub floor: i64,
    /// The price of one email.
    pub message_price: i64,
    /// Monthly debits above this flag the tenant for review.
    pub review_threshold: Option<i64>,
    pub overdrawn: bool,
    pub review: bool,
    /// Debits per month (`YYYY_MM`).
    pub month_debits: BTreeMap<String, i64>,
    pub created_at: i64,
}

impl Wallet {
    /// A new, empty wallet.
    pub fn new(
        tenant: &str,
        currency: &str,
        message_price: i64,
        floor: i64,
        review_threshold: Option<i64>,
        now_ms: i64,
    ) -> Self {
        Self {
            tenant: tenant.to_owned(),
            currency: currency.to_ascii_lowercase(),
            balance: 0,
            held: 0,
            floor,
            message_price,
            review_threshold,
            overdrawn: false,
            review: false,
            month_debits: BTreeMap::new(),
            created_at: now_ms,
        }
    }

    pub fn available(&self) -> i64 {
        self.balance - self.held
    }

    /// The item that creates it (put it with `attribute_not_exists(pk)`).
    pub fn to_item(&self) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(&self.tenant))),
            ("sk".to_string(), s(WALLET_SK)),
            ("kind".to_string(), s(KIND_WALLET)),
            ("tenant".to_string(), s(&self.tenant)),
            ("currency".to_string(), s(&self.currency)),
            ("balance".to_string(), n(self.balance)),
            ("held".to_string(), n(self.held)),
            ("floor".to_string(), n(self.floor)),
            ("message_price".to_string(), n(self.message_price)),
            (
                "overdrawn".to_string(),
                AttributeValue::Bool(self.overdrawn),
            ),
            ("review".to_string(), AttributeValue::Bool(self.review)),
            ("created_at".to_string(), n(self.created_at)),
        ]);
        if let Some(t) = self.review_threshold {
            item.insert("review_threshold".into(), n(t));
        }
        for (month, debits) in &self.month_debits {
            item.insert(format!("debits_{month}"), n(*debits));
        }
        item
    }

    /// Reads a wallet item.
    pub fn from_item(item: &Item) -> Option<Self> {
        Some(Self {
            tenant: get_s(item, "tenant")?,
            currency: get_s(item, "currency")?,
            balance: get_n(item, "balance").unwrap_or(0),
            held: get_n(item, "held").unwrap_or(0),
            floor: get_n(item, "floor").unwrap_or(0),
            message_price: get_n(item, "message_price").unwrap_or(0),
            review_threshold: get_n(item, "review_threshold"),
            overdrawn: get_bool(item, "overdrawn"),
            review: get_bool(item, "review"),
            month_debits: item
                .iter()
                .filter_map(|(k, v)| {
                    let month = k.strip_prefix("debits_")?;
                    Some((month.to_owned(), v.as_n().ok()?.parse().ok()?))
                })
                .collect(),
            created_at: get_n(item, "created_at").unwrap_or(0),
        })
    }

    fn view(&self, month_attr: &str) -> WalletView {
        let month = month_attr.strip_prefix("debits_").unwrap_or_default();
        WalletView {
            balance: self.balance,
            held: self.held,
            floor: self.floor,
            month_debits: self.month_debits.get(month).copied().unwrap_or(0),
            review_threshold: self.review_threshold,
        }
    }
}

/// One ledger entry: a single change of a wallet's balance or held amount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub id: String,
    pub tenant: String,
    pub kind: rules::EntryKind,
    pub amount: i64,
    pub balance_delta: i64,
    pub held_delta: i64,
    /// The email's message id or the payment's id.
    pub subject: String,
    pub event_source: String,
    pub event_id: String,
    pub at: i64,
}

impl Entry {
    pub fn to_item(&self) -> Item {
        Item::from([
            ("pk".to_string(), s(wallet_pk(&self.tenant))),
            (
                "sk".to_string(),
                s(format!("{ENTRY_PREFIX}{:013}#{}", self.at.max(0), self.id)),
            ),
            ("kind".to_string(), s(KIND_ENTRY)),
            ("id".to_string(), s(&self.id)),
            ("tenant".to_string(), s(&self.tenant)),
            ("entry_kind".to_string(), s(self.kind.as_str())),
            ("amount".to_string(), n(self.amount)),
            ("balance_delta".to_string(), n(self.balance_delta)),
            ("held_delta".to_string(), n(self.held_delta)),
            ("subject".to_string(), s(&self.subject)),
            ("event_source".to_string(), s(&self.event_source)),
            ("event_id".to_string(), s(&self.event_id)),
            ("at".to_string(), n(self.at)),
        ])
    }

    pub fn from_item(item: &Item) -> Option<Self> {
        Some(Self {
            id: get_s(item, "id")?,
            tenant: get_s(item, "tenant")?,
            kind: parse_state::<Option<rules::EntryKind>>(get_s(item, "entry_kind"))?,
            amount: get_n(item, "amount")?,
            balance_delta: get_n(item, "balance_delta")?,
            held_delta: get_n(item, "held_delta")?,
            subject: get_s(item, "subject")?,
            event_source: get_s(item, "event_source")?,
            event_id: get_s(item, "event_id")?,
            at: get_n(item, "at")?,
        })
    }
}

/// The per-email row.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct EmailRow {
    pub message_id: String,
    pub state: EmailState,
    pub amount: i64,
    /// Webhook event ids that reached this email, in processing order.
    pub events: Vec<String>,
    pub held_at: Option<i64>,
    pub version: Option<u64>,
}

impl EmailRow {
    pub fn from_item(item: &Item) -> Self {
        Self {
            message_id: get_s(item, "message_id").unwrap_or_default(),
            state: parse_state(get_s(item, "state")),
            amount: get_n(item, "amount").unwrap_or(0),
            events: get_list(item, "events"),
            held_at: get_n(item, "held_at"),
            version: get_n(item, "version").and_then(|v| u64::try_from(v).ok()),
        }
    }

    fn to_item(&self, tenant: &str, now: i64) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            (
                "sk".to_string(),
                s(format!("{EMAIL_PREFIX}{}", self.message_id)),
            ),
            ("kind".to_string(), s(KIND_EMAIL)),
            ("tenant".to_string(), s(tenant)),
            ("message_id".to_string(), s(&self.message_id)),
            ("state".to_string(), s(state_name(&self.state))),
            ("amount".to_string(), n(self.amount)),
            ("events".to_string(), list(&self.events)),
            ("updated_at".to_string(), n(now)),
        ]);
        if let Some(t) = self.held_at {
            item.insert("held_at".into(), n(t));
        }
        item
    }
}

/// The per-payment row.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PaymentRow {
    pub payment_key: String,
    pub credited: i64,
    pub refunded: i64,
    pub events: Vec<String>,
    pub version: Option<u64>,
}

impl PaymentRow {
    pub fn from_item(item: &Item) -> Self {
        Self {
            payment_key: get_s(item, "payment_key").unwrap_or_default(),
            credited: get_n(item, "credited").unwrap_or(0),
            refunded: get_n(item, "refunded").unwrap_or(0),
            events: get_list(item, "events"),
            version: get_n(item, "version").and_then(|v| u64::try_from(v).ok()),
        }
    }

    fn to_item(&self, tenant: &str, now: i64) -> Item {
        Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            (
                "sk".to_string(),
                s(format!("{PAYMENT_PREFIX}{}", self.payment_key)),
            ),
            ("kind".to_string(), s(KIND_PAYMENT)),
            ("tenant".to_string(), s(tenant)),
            ("payment_key".to_string(), s(&self.payment_key)),
            ("credited".to_string(), n(self.credited)),
            ("refunded".to_string(), n(self.refunded)),
            ("events".to_string(), list(&self.events)),
            ("updated_at".to_string(), n(now)),
        ])
    }
}

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
    pub fn register(
        self,
        registry: inbox_core::process::registry::Registry,
    ) -> inbox_core::process::registry::Registry
    where
        S: 'static,
    {
        let sources = self.sources.clone();
        let me: std::sync::Arc<dyn Handler> = std::sync::Arc::new(self);
        let registry = STRIPE_TYPES
            .iter()
            .fold(registry, |r, t| r.on(&sources.stripe, t, me.clone()));
        registry.on_any(&sources.mailer, me)
    }

    async fn wallet(&self, tenant: &str) -> Result<Wallet, HandlerOutcome> {
        match self.store.get_item(&wallet_pk(tenant), WALLET_SK).await {
            Ok(Some(item)) => Wallet::from_item(&item)
                .ok_or_else(|| HandlerOutcome::Permanent(format!("the wallet item of tenant {tenant:?} is unreadable"))),
            Ok(None) => Err(HandlerOutcome::Permanent(format!(
                "no wallet for tenant {tenant:?}; create it (inboxctl wallet create), then replay this message"
            ))),
            Err(e) => Err(HandlerOutcome::Retry(format!("reading the wallet: {e}"))),
        }
    }

    async fn item(&self, pk: &str, sk: &str) -> Result<Option<Item>, HandlerOutcome> {
        self.store
            .get_item(pk, sk)
            .await
            .map_err(|e| HandlerOutcome::Retry(format!("reading {sk}: {e}")))
    }

    /// The wallet adjustment and the entry for a movement.
    fn money(
        &self,
        m: &StoredMessage,
        wallet: &Wallet,
        subject: &str,
        mv: Movement,
        now: i64,
    ) -> Vec<Effect> {
        let month_attr = month_debits_attr(m.received_at);
        let flags = rules::flags(&wallet.view(&month_attr), &mv);
        let mut add = vec![
            ("balance".to_string(), mv.balance_delta),
            ("held".to_string(), mv.held_delta),
        ];
        if mv.kind == rules::EntryKind::Debit {
            add.push((month_attr, mv.amount));
        }
        let mut set = Vec::new();
        if flags.overdrawn {
            set.push(("overdrawn".to_string(), AttributeValue::Bool(true)));
            tracing::warn!(tenant = %wallet.tenant, "hold takes the wallet below its floor; recorded and flagged overdrawn");
            emit_metric("WalletOverdrawn", &wallet.tenant, now);
        }
        if flags.review {
            set.push(("review".to_string(), AttributeValue::Bool(true)));
            tracing::warn!(tenant = %wallet.tenant, "monthly debits passed the review threshold");
            emit_metric("WalletReviewFlagged", &wallet.tenant, now);
        }
        let entry = Entry {
            id: uuid::Uuid::new_v4().to_string(),
            tenant: wallet.tenant.clone(),
            kind: mv.kind,
            amount: mv.amount,
            balance_delta: mv.balance_delta,
            held_delta: mv.held_delta,
            subject: subject.to_owned(),
            event_source: m.source.to_string(),
            event_id: m.event_id.to_string(),
            at: now,
        };
        vec![
            Effect::Adjust {
                pk: wallet_pk(&wallet.tenant),
                sk: WALLET_SK.into(),
                add,
                set,
            },
            Effect::Create(entry.to_item()),
        ]
    }

    async fn email(
        &self,
        m: &StoredMessage,
        notice: EmailNotice,
    ) -> Result<HandlerOutcome, HandlerOutcome> {
        let wallet = self.wallet(&notice.tenant).await?;
        let pk = wallet_pk(&notice.tenant);
        let row = match self
            .item(&pk, &format!("{EMAIL_PREFIX}{}", notice.message_id))
            .await?
        {
            Some(item) => EmailRow::from_item(&item),
            None => EmailRow {
                message_id: notice.message_id.clone(),
                ..Default::default()
            },
        };
        let amount = if row.state == EmailState::New {
            wallet.message_price
        } else {
            row.amount
        };
        let (state, movement) = rules::email(row.state, notice.event, amount);
        let now = m.received_at;
        let mut next = row.clone();
        next.state = state;
        next.amount = amount;
        if state == EmailState::Held && row.state != EmailState::Held {
            next.held_at = Some(now);
        }
        if !next.events.contains(&m.event_id.to_string()) {
            next.events.push(m.event_id.to_string());
        }
        let mut effects = vec![Effect::Replace {
            item: next.to_item(&notice.tenant, now),
            expected_version: row.version,
        }];
        if let Some(mv) = movement {
            effects.extend(self.money(m, &wallet, &notice.message_id, mv, now));
        }
        Ok(HandlerOutcome::Commit(effects))
    }

    async fn payment(
        &self,
        m: &StoredMessage,
        notice: PaymentNotice,
    ) -> Result<HandlerOutcome, HandlerOutcome> {
        let tenant = match notice.tenant.clone() {
            Some(t) => t,
            None => match self
                .item(&payment_index_pk(&notice.payment_key), "PAYMENT")
                .await?
            {
                Some(index) => get_s(&index, "tenant").unwrap_or_default(),
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
            if currency != &wallet.currency {
                return Err(HandlerOutcome::Permanent(format!(
                    "currency {currency} does not match the wallet of {tenant:?} ({})",
                    wallet.currency
                )));
            }
        }
        let pk = wallet_pk(&tenant);
        let row = match self
            .item(&pk, &format!("{PAYMENT_PREFIX}{}", notice.payment_key))
            .await?
        {
            Some(item) => PaymentRow::from_item(&item),
            None => PaymentRow {
                payment_key: notice.payment_key.clone(),
                ..Default::default()
            },
        };
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
        if !next.events.contains(&m.event_id.to_string()) {
            next.events.push(m.event_id.to_string());
        }
        let mut effects = vec![Effect::Replace {
            item: next.to_item(&tenant, now),
            expected_version: row.version,
        }];
        if row.version.is_none() {
            effects.push(Effect::Adjust {
                pk: payment_index_pk(&notice.payment_key),
                sk: "PAYMENT".into(),
                add: Vec::new(),
                set: vec![
                    ("kind".into(), s(KIND_PAYMENT_INDEX)),
                    ("tenant".into(), s(&tenant)),
                ],
            });
        }
        if let Some(mv) = movement {
            effects.extend(self.money(m, &wallet, &notice.payment_key, mv, now));
        }
        Ok(HandlerOutcome::Commit(effects))
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
        if m.source.as_str() == self.sources.stripe {
            match parse::stripe(event_type, &body).map_err(unusable)? {
                Some(notice) => self.payment(m, notice).await,
                None => Ok(HandlerOutcome::Commit(Vec::new())),
            }
        } else if m.source.as_str() == self.sources.mailer {
            match parse::email(event_type, &body).map_err(unusable)? {
                Some(notice) => self.email(m, notice).await,
                None => Ok(HandlerOutcome::Commit(Vec::new())),
            }
        } else {
            Ok(HandlerOutcome::Commit(Vec::new()))
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

/// One CloudWatch embedded-metric-format document (a log line CloudWatch turns into a metric).
/// The tenant is a property of the line (searchable in the logs), not a dimension, so the metric
/// stays one series however many tenants there are.
pub fn emf(metric: &str, value: i64, tenant: &str, now_ms: i64) -> String {
    serde_json::json!({
        "_aws": {
            "Timestamp": now_ms,
            "CloudWatchMetrics": [{
                "Namespace": "WebhookIngestor/Wallet",
                "Dimensions": [[]],
                "Metrics": [{"Name": metric, "Unit": "Count"}]
            }]
        },
        "Tenant": tenant,
        metric: value
    })
    .to_string()
}

/// Writes an EMF line on its own to stdout: CloudWatch extracts metrics only from a line that is
/// itself the EMF document, not from a field of a structured log line.
fn emit_metric(metric: &str, tenant: &str, now_ms: i64) {
    println!("{}", emf(metric, 1, tenant, now_ms));
}

#[cfg(test)]
mod tests;
