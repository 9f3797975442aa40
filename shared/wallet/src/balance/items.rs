//! The ledger's item layout in the inbox table, in one place: keys, attribute names, and the
//! conversion of [`crate::balance::model`]'s records to and from items and writes. Nothing outside this
//! crate builds these keys; tests and tools read the table through [`crate::Ledger`] (or use the
//! key functions here to check the stored format).
//!
//! Items live under `pk = WALLET#{tenant}`:
//!
//! | item | `sk` | holds |
//! |---|---|---|
//! | wallet | `WALLET` | currency, balance, held, floor, price per email, review threshold, flags, `debits_YYYY_MM`, `changes` (movements so far), the notices' `low`, `low_crossings`, `review_reported` (`YYYY_MM`) |
//! | limits journal | `LIMITS_LOG#{ms}#{unique}` | every change of a wallet's floor or review threshold (`inboxctl wallet set`): when, who, before and after |
//! | email | `EMAIL#{message_id}` | state, amount, the webhook event ids that moved it, `held_at`, `hold_id` (a hold the wallet API placed), `expires_at` (its hold's expiry; while `held`, `open_shard` `WALLET#HOLDS#0..15` / `open_due` = it), `entries` (the ledger entries of its movements: id, kind, amount, balance and held deltas, event source and id, time), version |
//! | hold | `HOLD#{hold_id}` | a hold the wallet API placed: its message id, amount, time (the pointer a release finds the email's row by; the origin its entries name) |
//! | payment | `PAY#{payment intent}` | funds (`unknown`, `awaiting`, `paid`, `failed`), expected, credited, refund total, refunded, event ids, version |
//! | entry | `ENTRY#{ms}#{uuid}` | a payment's movement (and an email's, written before email rows kept their entries): kind, amount, balance and held deltas, email or payment id, webhook event id, time |
//! | autopay | `AUTOPAY` | status (`active`, `paused`, `suspended` + reason), the top-up rule (`to_target` / `fixed`, threshold, target or amount), the recurring charge (every, anchor, amount, next period), monthly cap, ladder, saved customer and payment method, `open_attempt`, `charged_YYYY_MM`, `limit_reported`, version; `open_shard` `AUTOPAY#RECURRING#0..15` / `open_due` (the next charge) while a recurring charge waits |
//! | attempt | `ATTEMPT#{id}` | reason (threshold, recurring + period), amount, state (`due`, `charging`, `charged`, `credited`, `ended` + reason), try, rung, first failure, due, idempotency key, provider's ref, tries, version; `open_shard` `AUTOPAY#ATTEMPT#0..15` / `open_due` (= due) while not terminal |
//! | autopay journal | `AUTOPAY_LOG#{ms}#{unique}` | every change of the autopay item: when, who (an operator, `stripe`), what |
//!
//! plus
//!
//! - `pk = PAYMENT#{payment intent}`, `sk = PAYMENT`: the payment index — the tenant of a payment
//!   (refunds and payment intents find it there), or, while no event named one, the refunds
//!   reported for it and the method it saved for later (`parked_customer`,
//!   `parked_payment_method`), with a TTL: a payment of no wallet's is forgotten after the
//!   retention; `unmatched` while the payment's unmatched item is open (then no TTL);
//! - `pk = PAYMENT#{payment intent}`, `sk = UNMATCHED`: an unmatched payment ([`crate::payments::unmatched`]):
//!   state (`open`, `matched`, `bound`), amount, currency, customer, email, `first_seen`, `messages`,
//!   `body` (at most [`crate::payments::unmatched::BODY_CAP`] bytes), `body_truncated`, version; resolved: the
//!   tenant, `resolved_at`, `matched_by` or `bound_by`. `open_shard` `UNMATCHED` / `open_due` (= first
//!   seen) while open; matched: no body, expires after the retention;
//! - `pk = PAYMENT_METHOD#{payment method}`, `sk = PAYMENT_METHOD`: the payment-method index — the
//!   tenant whose autopay saved it (`payment_method.detached` finds it there) and `detached` (a
//!   method the provider detached is never saved again, whichever event came first);
//! - `pk = WALLETS`, `sk = TENANT#{tenant}`: the wallet registry, one item per wallet, written
//!   with it, so reconciliation finds wallets with a `Query` instead of a scan; `sk = REGISTRY`
//!   marks the registry complete (`inboxctl wallet reindex` registered the wallets created before
//!   it existed).
//!
//! Every amount is a number in the wallet currency's minor unit. Reading is strict: an amount
//! that is present but not a whole number fitting 64 bits makes the item unreadable (an error,
//! never 0).

mod limits;
mod lookup;
mod notices;
mod rows;
pub mod shards;

pub(crate) use limits::set_limits;
pub use limits::{LimitsLog, KIND_LIMITS_LOG, LIMITS_LOG_PREFIX};

pub use lookup::{
    payment_index_key, KIND_PAYMENT_INDEX, KIND_REGISTRY, REGISTRY_COMPLETE_SK, REGISTRY_PK,
    REGISTRY_PREFIX,
};
pub(crate) use lookup::{register_wallet, registered_tenant, registry_complete};
pub(crate) use notices::{marks_changes, notice_writes, LOW, LOW_CROSSINGS, REVIEW_REPORTED};
pub(crate) use rows::row_entries;
pub use rows::{hold_shards, HOLD_SHARDS, HOLD_SHARD_PREFIX, ROW_ENTRIES};

use crate::balance::model::{month_of, EmailRow, Entry, PaymentRow, Wallet};
use crate::balance::rules::{self, Flags, Funds, Movement};
use crate::money::{checked_sum, Currency, Minor, Overflow};
use crate::tenant::TenantId;
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::store::attr::{self, get_bool, get_n, get_s, get_strings, n, s};
use inbox_core::store::{Effect, Item};
use serde::Serialize;

pub const KIND_WALLET: &str = "wallet";
pub const KIND_EMAIL: &str = "email";
pub const KIND_PAYMENT: &str = "payment";
pub const KIND_ENTRY: &str = "entry";
pub const WALLET_SK: &str = "WALLET";
pub const EMAIL_PREFIX: &str = "EMAIL#";
pub const PAYMENT_PREFIX: &str = "PAY#";
pub const ENTRY_PREFIX: &str = "ENTRY#";
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

/// A state attribute: absent → the default; present but unknown → an error.
fn parse_state<T: serde::de::DeserializeOwned + Default>(
    item: &Item,
    k: &str,
) -> Result<T, String> {
    match item.get(k) {
        None => Ok(T::default()),
        Some(v) => {
            let name = v.as_s().map_err(|_| format!("{k} is not a string"))?;
            serde_json::from_value(serde_json::Value::String(name.clone()))
                .map_err(|_| format!("{k} {name:?} is not a known state"))
        }
    }
}

/// A number attribute: `None` when absent, an error when present but not a whole number that
/// fits 64 bits (never read as 0).
pub(crate) fn number(item: &Item, k: &str) -> Result<Option<i64>, String> {
    let Some(v) = item.get(k) else {
        return Ok(None);
    };
    let text = v.as_n().map_err(|_| format!("{k} is not a number"))?;
    text.parse()
        .map(Some)
        .map_err(|_| format!("{k} is not a whole number of minor units that fits 64 bits: {text}"))
}

/// A number attribute that must be there.
fn required(item: &Item, k: &str) -> Result<i64, String> {
    number(item, k)?.ok_or_else(|| format!("{k} is missing"))
}

pub(crate) fn text(item: &Item, k: &str) -> Option<String> {
    get_s(item, k).map(str::to_owned)
}

/// The tenant an item names, parsed; `Err` says what is wrong with it.
pub(crate) fn tenant(item: &Item) -> Result<TenantId, String> {
    let t = get_s(item, "tenant").ok_or("tenant is missing")?;
    TenantId::stored(t).map_err(|e| e.to_string())
}

pub(crate) fn version(item: &Item) -> Option<u64> {
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
            (LOW.to_string(), attr::bool(self.low)),
            (LOW_CROSSINGS.to_string(), n(self.low_crossings)),
            ("created_at".to_string(), n(self.created_at)),
            ("changes".to_string(), n(self.changes)),
        ]);
        if let Some(t) = self.review_threshold {
            item.insert("review_threshold".into(), n(t.minor()));
        }
        if let Some(month) = &self.review_reported {
            item.insert(REVIEW_REPORTED.into(), s(month));
        }
        for (month, debits) in &self.month_debits {
            item.insert(format!("{MONTH_DEBITS_PREFIX}{month}"), n(debits.get()));
        }
        item
    }

    /// Reads a wallet item; an error says what is wrong with it (a missing tenant or currency, an
    /// amount that is not a valid number, …).
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let code = get_s(item, "currency").ok_or("currency is missing")?;
        let currency = Currency::parse(code).map_err(|e| e.to_string())?;
        let amount = |k: &str| required(item, k).map(|a| currency.amount(a));
        let mut month_debits = std::collections::BTreeMap::new();
        for k in item.keys() {
            if let Some(month) = k.strip_prefix(MONTH_DEBITS_PREFIX) {
                month_debits.insert(month.to_owned(), Minor::new(required(item, k)?));
            }
        }
        Ok(Self {
            tenant: tenant(item)?,
            currency,
            balance: amount("balance")?,
            held: amount("held")?,
            floor: amount("floor")?,
            message_price: amount("message_price")?,
            review_threshold: limits::read_threshold(item)?.map(|t| currency.amount(t)),
            overdrawn: get_bool(item, "overdrawn").unwrap_or(false),
            review: get_bool(item, "review").unwrap_or(false),
            low: get_bool(item, LOW).unwrap_or(false),
            low_crossings: number(item, LOW_CROSSINGS)?.unwrap_or(0),
            review_reported: text(item, REVIEW_REPORTED),
            month_debits,
            created_at: number(item, "created_at")?.unwrap_or(0),
            changes: number(item, "changes")?.unwrap_or(0),
            shards: Vec::new(),
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
            tenant: tenant(item).ok()?,
            kind: parse_state::<Option<rules::EntryKind>>(item, "entry_kind").ok()??,
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

/// The wallet's side of the movements of an event received at `received_at`, on shard `shard`:
/// commutative adds to balance, held, (for debits) the month's debits and the change counter
/// (one per movement), the flags they raised, and the notices' attributes (on the wallet item:
/// see [`shards::shard_write`]).
pub(crate) fn adjust_wallet(
    tenant: &TenantId,
    shard: u32,
    moves: &[Movement],
    received_at: i64,
    flags: Flags,
    notices: &crate::balance::notices::Notices,
) -> Result<Vec<Effect>, Overflow> {
    let (add, set) = wallet_changes(moves, received_at, flags)?;
    Ok(shards::shard_write(tenant, shard, add, set, None, notices))
}

/// What [`adjust_wallet`] adds to and sets on the wallet item.
pub(crate) type WalletChanges = (Vec<(String, i64)>, Vec<(String, AttributeValue)>);

/// The adds and sets of [`adjust_wallet`], for a wallet write of another kind (a hold's bounded
/// one: [`holds`]).
pub(crate) fn wallet_changes(
    moves: &[Movement],
    received_at: i64,
    flags: Flags,
) -> Result<WalletChanges, Overflow> {
    let debits = checked_sum(
        moves
            .iter()
            .filter(|m| m.kind == rules::EntryKind::Debit)
            .map(|m| m.amount.minor()),
        "the month's debits",
    )?;
    let mut add = vec![
        (
            "balance".to_string(),
            checked_sum(moves.iter().map(|m| m.balance_delta.minor()), "the balance")?,
        ),
        (
            "held".to_string(),
            checked_sum(
                moves.iter().map(|m| m.held_delta.minor()),
                "the held amount",
            )?,
        ),
        (
            "changes".to_string(),
            i64::try_from(moves.len()).map_err(|_| Overflow("the change count".into()))?,
        ),
    ];
    if debits != 0 {
        add.push((month_debits_attr(received_at), debits));
    }
    let mut set = Vec::new();
    if flags.overdrawn {
        set.push(("overdrawn".to_string(), attr::bool(true)));
    }
    if flags.review {
        set.push(("review".to_string(), attr::bool(true)));
    }
    Ok((add, set))
}
