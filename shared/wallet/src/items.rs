//! The ledger's item layout in the inbox table, in one place: keys, attribute names, and the
//! conversion of [`crate::model`]'s records to and from items and writes. Nothing outside this
//! crate builds these keys; tests and tools read the table through [`crate::Ledger`] (or use the
//! key functions here to check the stored format).
//!
//! Items live under `pk = WALLET#{tenant}`:
//!
//! | item | `sk` | holds |
//! |---|---|---|
//! | wallet | `WALLET` | currency, balance, held, floor, price per email, review threshold, flags, `debits_YYYY_MM` |
//! | email | `EMAIL#{message_id}` | state, amount, the webhook event ids that moved it, version |
//! | payment | `PAY#{payment intent}` | credited, refunded, event ids, version |
//! | entry | `ENTRY#{ms}#{uuid}` | kind, amount, balance and held deltas, email or payment id, webhook event id, time |
//!
//! plus `pk = PAYMENT#{payment intent}`, `sk = PAYMENT`: the tenant of a payment, for refunds
//! whose charge carries no tenant. Every amount is a number in the wallet currency's minor unit.

use crate::model::{month_of, EmailRow, Entry, PaymentRow, Wallet};
use crate::money::Currency;
use crate::rules::{self, Flags, Movement};
use inbox_core::store::attr::{self, get_bool, get_n, get_s, get_strings, n, s};
use inbox_core::store::{Effect, Item};
use serde::Serialize;

pub const KIND_WALLET: &str = "wallet";
pub const KIND_EMAIL: &str = "email";
pub const KIND_PAYMENT: &str = "payment";
pub const KIND_ENTRY: &str = "entry";
pub const KIND_PAYMENT_INDEX: &str = "payment_index";
pub const WALLET_SK: &str = "WALLET";
pub const EMAIL_PREFIX: &str = "EMAIL#";
pub const PAYMENT_PREFIX: &str = "PAY#";
pub const ENTRY_PREFIX: &str = "ENTRY#";
const PAYMENT_INDEX_SK: &str = "PAYMENT";
const MONTH_DEBITS_PREFIX: &str = "debits_";

/// The partition of a tenant's wallet, rows and entries.
pub fn wallet_pk(tenant: &str) -> String {
    format!("WALLET#{tenant}")
}

pub(crate) fn email_sk(message_id: &str) -> String {
    format!("{EMAIL_PREFIX}{message_id}")
}

pub(crate) fn payment_sk(payment_key: &str) -> String {
    format!("{PAYMENT_PREFIX}{payment_key}")
}

/// The key of a payment's tenant index item.
pub(crate) fn payment_index_key(payment_key: &str) -> (String, &'static str) {
    (format!("PAYMENT#{payment_key}"), PAYMENT_INDEX_SK)
}

/// The attribute that counts a month's debits.
fn month_debits_attr(ms: i64) -> String {
    format!("{MONTH_DEBITS_PREFIX}{}", month_of(ms))
}

fn state_name<T: Serialize>(t: &T) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn parse_state<T: serde::de::DeserializeOwned + Default>(name: Option<&str>) -> T {
    name.and_then(|n| serde_json::from_value(serde_json::Value::String(n.to_owned())).ok())
        .unwrap_or_default()
}

fn text(item: &Item, k: &str) -> Option<String> {
    get_s(item, k).map(str::to_owned)
}

fn version(item: &Item) -> Option<u64> {
    get_n(item, "version").and_then(|v| u64::try_from(v).ok())
}

impl Wallet {
    /// The item that creates it (see [`crate::Ledger::create`]: never over an existing one).
    pub fn to_item(&self) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(&self.tenant))),
            ("sk".to_string(), s(WALLET_SK)),
            ("kind".to_string(), s(KIND_WALLET)),
            ("tenant".to_string(), s(&self.tenant)),
            ("currency".to_string(), s(self.currency.as_str())),
            ("balance".to_string(), n(self.balance.minor())),
            ("held".to_string(), n(self.held.minor())),
            ("floor".to_string(), n(self.floor.minor())),
            ("message_price".to_string(), n(self.message_price.minor())),
            ("overdrawn".to_string(), attr::bool(self.overdrawn)),
            ("review".to_string(), attr::bool(self.review)),
            ("created_at".to_string(), n(self.created_at)),
        ]);
        if let Some(t) = self.review_threshold {
            item.insert("review_threshold".into(), n(t.minor()));
        }
        for (month, debits) in &self.month_debits {
            item.insert(format!("{MONTH_DEBITS_PREFIX}{month}"), n(*debits));
        }
        item
    }

    /// Reads a wallet item (`None` without a tenant or a valid currency).
    pub fn from_item(item: &Item) -> Option<Self> {
        let currency = Currency::parse(get_s(item, "currency")?).ok()?;
        let amount = |k: &str| currency.amount(get_n(item, k).unwrap_or(0));
        Some(Self {
            tenant: text(item, "tenant")?,
            currency,
            balance: amount("balance"),
            held: amount("held"),
            floor: amount("floor"),
            message_price: amount("message_price"),
            review_threshold: get_n(item, "review_threshold").map(|t| currency.amount(t)),
            overdrawn: get_bool(item, "overdrawn").unwrap_or(false),
            review: get_bool(item, "review").unwrap_or(false),
            month_debits: item
                .iter()
                .filter_map(|(k, v)| {
                    let month = k.strip_prefix(MONTH_DEBITS_PREFIX)?;
                    Some((month.to_owned(), v.as_n().ok()?.parse().ok()?))
                })
                .collect(),
            created_at: get_n(item, "created_at").unwrap_or(0),
        })
    }
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
            ("amount".to_string(), n(self.amount.minor())),
            ("balance_delta".to_string(), n(self.balance_delta.minor())),
            ("held_delta".to_string(), n(self.held_delta.minor())),
            ("subject".to_string(), s(&self.subject)),
            ("event_source".to_string(), s(&self.event_source)),
            ("event_id".to_string(), s(&self.event_id)),
            ("at".to_string(), n(self.at)),
        ])
    }

    /// Reads an entry item of a wallet in `currency` (`None` if an attribute is missing).
    pub fn from_item(item: &Item, currency: Currency) -> Option<Self> {
        let amount = |k: &str| get_n(item, k).map(|a| currency.amount(a));
        Some(Self {
            id: text(item, "id")?,
            tenant: text(item, "tenant")?,
            kind: parse_state::<Option<rules::EntryKind>>(get_s(item, "entry_kind"))?,
            amount: amount("amount")?,
            balance_delta: amount("balance_delta")?,
            held_delta: amount("held_delta")?,
            subject: text(item, "subject")?,
            event_source: text(item, "event_source")?,
            event_id: text(item, "event_id")?,
            at: get_n(item, "at")?,
        })
    }
}

impl EmailRow {
    pub fn from_item(item: &Item) -> Self {
        Self {
            message_id: text(item, "message_id").unwrap_or_default(),
            state: parse_state(get_s(item, "state")),
            amount: get_n(item, "amount").unwrap_or(0),
            events: get_strings(item, "events"),
            held_at: get_n(item, "held_at"),
            updated_at: get_n(item, "updated_at"),
            version: version(item),
        }
    }

    fn to_item(&self, tenant: &str) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            ("sk".to_string(), s(email_sk(&self.message_id))),
            ("kind".to_string(), s(KIND_EMAIL)),
            ("tenant".to_string(), s(tenant)),
            ("message_id".to_string(), s(&self.message_id)),
            ("state".to_string(), s(state_name(&self.state))),
            ("amount".to_string(), n(self.amount)),
            ("events".to_string(), attr::strings(&self.events)),
        ]);
        if let Some(t) = self.updated_at {
            item.insert("updated_at".into(), n(t));
        }
        if let Some(t) = self.held_at {
            item.insert("held_at".into(), n(t));
        }
        item
    }

    /// Writes `self` over the row as read at `read_version` (`None`: there was none).
    pub(crate) fn replace(&self, tenant: &str, read_version: Option<u64>) -> Effect {
        Effect::Replace {
            item: self.to_item(tenant),
            expected_version: read_version,
        }
    }
}

impl PaymentRow {
    pub fn from_item(item: &Item) -> Self {
        Self {
            payment_key: text(item, "payment_key").unwrap_or_default(),
            credited: get_n(item, "credited").unwrap_or(0),
            refunded: get_n(item, "refunded").unwrap_or(0),
            events: get_strings(item, "events"),
            updated_at: get_n(item, "updated_at"),
            version: version(item),
        }
    }

    fn to_item(&self, tenant: &str) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            ("sk".to_string(), s(payment_sk(&self.payment_key))),
            ("kind".to_string(), s(KIND_PAYMENT)),
            ("tenant".to_string(), s(tenant)),
            ("payment_key".to_string(), s(&self.payment_key)),
            ("credited".to_string(), n(self.credited)),
            ("refunded".to_string(), n(self.refunded)),
            ("events".to_string(), attr::strings(&self.events)),
        ]);
        if let Some(t) = self.updated_at {
            item.insert("updated_at".into(), n(t));
        }
        item
    }

    /// Writes `self` over the row as read at `read_version` (`None`: there was none).
    pub(crate) fn replace(&self, tenant: &str, read_version: Option<u64>) -> Effect {
        Effect::Replace {
            item: self.to_item(tenant),
            expected_version: read_version,
        }
    }
}

/// Records the tenant of a payment (for refunds whose charge names none).
pub(crate) fn index_payment(payment_key: &str, tenant: &str) -> Effect {
    let (pk, sk) = payment_index_key(payment_key);
    Effect::Adjust {
        pk,
        sk: sk.into(),
        add: Vec::new(),
        set: vec![
            ("kind".into(), s(KIND_PAYMENT_INDEX)),
            ("tenant".into(), s(tenant)),
        ],
    }
}

/// The tenant a payment index item names.
pub(crate) fn indexed_tenant(item: &Item) -> String {
    text(item, "tenant").unwrap_or_default()
}

/// The wallet's side of a movement of an event received at `received_at`: commutative adds to
/// balance, held and (for a debit) the month's debits, and the flags it raised.
pub(crate) fn adjust_wallet(tenant: &str, mv: &Movement, received_at: i64, flags: Flags) -> Effect {
    let mut add = vec![
        ("balance".to_string(), mv.balance_delta),
        ("held".to_string(), mv.held_delta),
    ];
    if mv.kind == rules::EntryKind::Debit {
        add.push((month_debits_attr(received_at), mv.amount));
    }
    let mut set = Vec::new();
    if flags.overdrawn {
        set.push(("overdrawn".to_string(), attr::bool(true)));
    }
    if flags.review {
        set.push(("review".to_string(), attr::bool(true)));
    }
    Effect::Adjust {
        pk: wallet_pk(tenant),
        sk: WALLET_SK.into(),
        add,
        set,
    }
}
