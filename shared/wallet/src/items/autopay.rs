//! Autopay's items (their layout is described in [`super`]): the settings item `AUTOPAY` and the
//! attempts `ATTEMPT#{id}` under the wallet's partition, each `Replace`d at the version read; the
//! autopay journal `AUTOPAY_LOG#…`; and the payment-method index `PAYMENT_METHOD#{id}`. Open
//! attempts and next recurring charges carry the sparse open index's attributes in shards of
//! their own ([`ATTEMPT_SHARD_PREFIX`], [`RECURRING_SHARD_PREFIX`]). Reading is strict: an unknown
//! state, status or rule is an error saying what is wrong, never a default.

use super::{number, tenant, text, version, wallet_pk};
use crate::autopay::{
    Attempt, AttemptState, Autopay, AutopayStatus, Every, Ladder, MonthlyCap, Reason, Recurring,
    SavedMethod, Schedule, TopUpRule, TryRecord,
};
use crate::money::{Currency, Money};
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::attr::{self, get_bool, get_s, n, s};
use inbox_core::store::schema::{OPEN_DUE, OPEN_SHARD};
use inbox_core::store::{Effect, Item};
use serde_json::json;
use sha2::{Digest, Sha256};

pub const KIND_AUTOPAY: &str = "autopay";
pub const KIND_ATTEMPT: &str = "autopay_attempt";
pub const KIND_AUTOPAY_LOG: &str = "autopay_log";
pub const KIND_METHOD_INDEX: &str = "payment_method_index";
pub const AUTOPAY_SK: &str = "AUTOPAY";
pub const ATTEMPT_PREFIX: &str = "ATTEMPT#";
pub const AUTOPAY_LOG_PREFIX: &str = "AUTOPAY_LOG#";
const METHOD_INDEX_PREFIX: &str = "PAYMENT_METHOD#";
const METHOD_INDEX_SK: &str = "PAYMENT_METHOD";
const CHARGED_PREFIX: &str = "charged_";
/// The open-index shards of open attempts (`AUTOPAY#ATTEMPT#0`..`15`), keyed by their `due`.
pub const ATTEMPT_SHARD_PREFIX: &str = "AUTOPAY#ATTEMPT#";
/// The open-index shards of wallets whose recurring charge is waiting
/// (`AUTOPAY#RECURRING#0`..`15`), keyed by the next charge's due time.
pub const RECURRING_SHARD_PREFIX: &str = "AUTOPAY#RECURRING#";
/// How many shards each of them spreads over.
pub const AUTOPAY_SHARDS: u8 = 16;

/// Every shard of `prefix`.
pub fn shards(prefix: &str) -> impl Iterator<Item = String> + '_ {
    (0..AUTOPAY_SHARDS).map(move |i| format!("{prefix}{i}"))
}

fn shard_of(prefix: &str, key: &str) -> String {
    let h = Sha256::digest(key.as_bytes());
    format!("{prefix}{}", h[0] % AUTOPAY_SHARDS)
}

pub(crate) fn attempt_sk(id: &str) -> String {
    format!("{ATTEMPT_PREFIX}{id}")
}

/// The key of a payment method's index item (its tenant, or that it was detached).
pub fn method_index_key(payment_method: &str) -> (String, &'static str) {
    (
        format!("{METHOD_INDEX_PREFIX}{payment_method}"),
        METHOD_INDEX_SK,
    )
}

/// An attempt id derived from what made it (a re-run of its transaction makes the same one).
pub fn derived_attempt_id(kind: &str, parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let hex: String = h.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{kind}_{hex}")
}

fn money(item: &Item, k: &str, c: Option<Currency>) -> Result<Option<Money>, String> {
    match number(item, k)? {
        None => Ok(None),
        Some(minor) => {
            let c = c.ok_or_else(|| format!("{k} is set but currency is missing"))?;
            Ok(Some(c.amount(minor)))
        }
    }
}

fn need<T>(v: Option<T>, k: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("{k} is missing"))
}

fn millis(item: &Item, k: &str) -> Result<Option<Millis>, String> {
    Ok(number(item, k)?.map(Millis::new))
}

fn count(item: &Item, k: &str) -> Result<u32, String> {
    let v = number(item, k)?.unwrap_or(0);
    u32::try_from(v).map_err(|_| format!("{k} {v} is not a count"))
}

impl Autopay {
    /// No rules, no method, active: what a wallet's autopay is before anything set it.
    pub fn new(tenant: TenantId, now: Millis) -> Self {
        Self {
            tenant,
            top_up: None,
            recurring: None,
            cap: None,
            ladder: Ladder::default(),
            method: None,
            status: AutopayStatus::Active,
            open_attempt: None,
            month_charged: Default::default(),
            limit_reported: None,
            updated_at: now,
            version: None,
        }
    }

    /// The item: its rules, method, status, open attempt and the month's charges; in the
    /// recurring shards of the open index (due at the next charge) while a recurring charge is
    /// set, autopay active with a method, and no attempt open.
    pub fn to_item(&self) -> Item {
        let t = self.tenant.as_str();
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(t))),
            ("sk".to_string(), s(AUTOPAY_SK)),
            ("kind".to_string(), s(KIND_AUTOPAY)),
            ("tenant".to_string(), s(t)),
            ("ladder".to_string(), s(ladder_text(&self.ladder))),
            ("updated_at".to_string(), n(self.updated_at.get())),
        ]);
        let mut put = |k: &str, v| {
            item.insert(k.to_string(), v);
        };
        match &self.status {
            AutopayStatus::Active => put("status", s("active")),
            AutopayStatus::Paused => put("status", s("paused")),
            AutopayStatus::Suspended { reason } => {
                put("status", s("suspended"));
                put("suspended_reason", s(reason));
            }
        }
        let mut currency = None;
        match self.top_up {
            Some(TopUpRule::ToTarget { threshold, target }) => {
                put("top_up", s("to_target"));
                put("threshold", n(threshold.minor()));
                put("target", n(target.minor()));
                currency = Some(threshold.currency());
            }
            Some(TopUpRule::Fixed { threshold, amount }) => {
                put("top_up", s("fixed"));
                put("threshold", n(threshold.minor()));
                put("top_up_amount", n(amount.minor()));
                currency = Some(threshold.currency());
            }
            None => {}
        }
        if let Some(r) = &self.recurring {
            put("every", s(r.schedule.every().as_str()));
            put("anchor", s(r.schedule.anchor().to_string()));
            put("recurring_amount", n(r.amount.minor()));
            put("recurring_next", n(i64::from(r.next)));
            currency = currency.or(Some(r.amount.currency()));
        }
        if let Some(cap) = self.cap {
            put("monthly_cap", n(cap.cap().minor()));
            currency = currency.or(Some(cap.cap().currency()));
        }
        if let Some(c) = currency {
            put("currency", s(c.as_str()));
        }
        if let Some(m) = &self.method {
            put("customer", s(&m.customer));
            put("payment_method", s(&m.payment_method));
        }
        if let Some(a) = &self.open_attempt {
            put("open_attempt", s(a));
        }
        if let Some(m) = &self.limit_reported {
            put("limit_reported", s(m));
        }
        for (month, charged) in &self.month_charged {
            put(&format!("{CHARGED_PREFIX}{month}"), n(*charged));
        }
        if let Some(due) = self.recurring_due() {
            put(OPEN_SHARD, s(shard_of(RECURRING_SHARD_PREFIX, t)));
            put(OPEN_DUE, n(due.get()));
        }
        item
    }

    /// When the next recurring charge is waiting to be made an attempt (`None`: nothing to do).
    pub fn recurring_due(&self) -> Option<Millis> {
        let r = self.recurring.as_ref()?;
        let ready = self.status == AutopayStatus::Active
            && self.method.is_some()
            && self.open_attempt.is_none();
        ready.then(|| r.schedule.due_at(r.next)).flatten()
    }

    /// Reads the settings item; an error says what is wrong with it.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let currency = get_s(item, "currency")
            .map(|c| Currency::parse(c).map_err(|e| e.to_string()))
            .transpose()?;
        let amount = |k: &str| money(item, k, currency);
        let status = match get_s(item, "status") {
            Some("active") => AutopayStatus::Active,
            Some("paused") => AutopayStatus::Paused,
            Some("suspended") => AutopayStatus::Suspended {
                reason: text(item, "suspended_reason").unwrap_or_default(),
            },
            Some(other) => return Err(format!("status {other:?} is not a known status")),
            None => return Err("status is missing".into()),
        };
        let bad_rule = |e: crate::autopay::threshold::InvalidRule| e.to_string();
        let top_up = match get_s(item, "top_up") {
            None => None,
            Some("to_target") => Some(
                TopUpRule::to_target(
                    need(amount("threshold")?, "threshold")?,
                    need(amount("target")?, "target")?,
                )
                .map_err(bad_rule)?,
            ),
            Some("fixed") => Some(
                TopUpRule::fixed(
                    need(amount("threshold")?, "threshold")?,
                    need(amount("top_up_amount")?, "top_up_amount")?,
                )
                .map_err(bad_rule)?,
            ),
            Some(other) => return Err(format!("top_up {other:?} is not a known rule")),
        };
        let recurring = match get_s(item, "every") {
            None => None,
            Some(every) => {
                let every =
                    Every::parse(every).ok_or_else(|| format!("every {every:?} is not known"))?;
                let anchor = need(get_s(item, "anchor"), "anchor")?;
                let anchor = anchor
                    .parse::<jiff::civil::Date>()
                    .map_err(|e| format!("anchor {anchor:?}: {e}"))?;
                Some(Recurring {
                    schedule: Schedule::new(anchor, every),
                    amount: need(amount("recurring_amount")?, "recurring_amount")?,
                    next: count(item, "recurring_next")?,
                })
            }
        };
        let cap = amount("monthly_cap")?
            .map(|c| MonthlyCap::new(c).map_err(bad_rule))
            .transpose()?;
        let ladder = match get_s(item, "ladder") {
            Some(l) => Ladder::parse(l).map_err(|e| e.to_string())?,
            None => return Err("ladder is missing".into()),
        };
        let method = match (text(item, "customer"), text(item, "payment_method")) {
            (Some(customer), Some(payment_method)) => Some(SavedMethod {
                customer,
                payment_method,
            }),
            (None, None) => None,
            _ => return Err("customer and payment_method go together".into()),
        };
        let mut month_charged = std::collections::BTreeMap::new();
        for k in item.keys() {
            if let Some(month) = k.strip_prefix(CHARGED_PREFIX) {
                month_charged.insert(month.to_owned(), need(number(item, k)?, k)?);
            }
        }
        Ok(Self {
            tenant: tenant(item)?,
            top_up,
            recurring,
            cap,
            ladder,
            method,
            status,
            open_attempt: text(item, "open_attempt"),
            month_charged,
            limit_reported: text(item, "limit_reported"),
            updated_at: Millis::new(number(item, "updated_at")?.unwrap_or(0)),
            version: version(item),
        })
    }

    /// Writes `self` over the item at the version it was read (`None`: there must be none).
    pub fn replace(&self) -> Effect {
        Effect::Replace {
            item: self.to_item(),
            expected_version: self.version,
        }
    }
}

fn ladder_text(l: &Ladder) -> String {
    l.days()
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn state_name(s: &AttemptState) -> &'static str {
    match s {
        AttemptState::Due => "due",
        AttemptState::Charging => "charging",
        AttemptState::Charged => "charged",
        AttemptState::Credited => "credited",
        AttemptState::Ended { .. } => "ended",
    }
}

impl Attempt {
    /// The item; in the attempt shards of the open index (due at `due`) while not terminal.
    pub fn to_item(&self) -> Item {
        let t = self.tenant.as_str();
        let tries: Vec<_> = self
            .tries
            .iter()
            .map(|r| {
                json!({"try": r.try_no, "at": r.at.get(), "outcome": r.outcome,
                            "next_due": r.next_due.map(Millis::get)})
            })
            .collect();
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(t))),
            ("sk".to_string(), s(attempt_sk(&self.id))),
            ("kind".to_string(), s(KIND_ATTEMPT)),
            ("tenant".to_string(), s(t)),
            ("id".to_string(), s(&self.id)),
            ("amount".to_string(), n(self.amount.minor())),
            ("currency".to_string(), s(self.amount.currency().as_str())),
            ("state".to_string(), s(state_name(&self.state))),
            ("try_no".to_string(), n(i64::from(self.try_no))),
            ("rung".to_string(), n(self.rung as i64)),
            ("due".to_string(), n(self.due.get())),
            (
                "tries".to_string(),
                s(serde_json::Value::from(tries).to_string()),
            ),
            ("created_at".to_string(), n(self.created_at.get())),
        ]);
        match self.reason {
            Reason::Threshold => item.insert("reason".into(), s("threshold")),
            Reason::Recurring { period } => {
                item.insert("period".into(), n(i64::from(period)));
                item.insert("reason".into(), s("recurring"))
            }
        };
        if let AttemptState::Ended { reason } = &self.state {
            item.insert("ended_reason".into(), s(reason));
        }
        if let Some(t) = self.first_failure {
            item.insert("first_failure".into(), n(t.get()));
        }
        if let Some(k) = &self.idempotency_key {
            item.insert("idempotency_key".into(), s(k));
        }
        if let Some(r) = &self.provider_ref {
            item.insert("provider_ref".into(), s(r));
        }
        if !self.state.is_terminal() {
            let key = format!("{t}#{}", self.id);
            item.insert(OPEN_SHARD.into(), s(shard_of(ATTEMPT_SHARD_PREFIX, &key)));
            item.insert(OPEN_DUE.into(), n(self.due.get()));
        }
        item
    }

    /// Reads an attempt item; an error says what is wrong with it.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let code = need(get_s(item, "currency"), "currency")?;
        let currency = Currency::parse(code).map_err(|e| e.to_string())?;
        let state = match get_s(item, "state") {
            Some("due") => AttemptState::Due,
            Some("charging") => AttemptState::Charging,
            Some("charged") => AttemptState::Charged,
            Some("credited") => AttemptState::Credited,
            Some("ended") => AttemptState::Ended {
                reason: text(item, "ended_reason").unwrap_or_default(),
            },
            Some(other) => return Err(format!("state {other:?} is not a known state")),
            None => return Err("state is missing".into()),
        };
        let reason = match get_s(item, "reason") {
            Some("threshold") => Reason::Threshold,
            Some("recurring") => Reason::Recurring {
                period: count(item, "period")?,
            },
            Some(other) => return Err(format!("reason {other:?} is not a known reason")),
            None => return Err("reason is missing".into()),
        };
        let tries_text = need(get_s(item, "tries"), "tries")?;
        let tries: Vec<serde_json::Value> =
            serde_json::from_str(tries_text).map_err(|e| format!("tries: {e}"))?;
        let tries = tries
            .iter()
            .map(|t| {
                let bad = || format!("tries: {t} is not a try");
                Ok(TryRecord {
                    try_no: t["try"]
                        .as_u64()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(bad)?,
                    at: Millis::new(t["at"].as_i64().ok_or_else(bad)?),
                    outcome: t["outcome"].as_str().ok_or_else(bad)?.to_owned(),
                    next_due: t["next_due"].as_i64().map(Millis::new),
                })
            })
            .collect::<Result<_, String>>()?;
        let rung = number(item, "rung")?.unwrap_or(0);
        Ok(Self {
            id: need(text(item, "id"), "id")?,
            tenant: tenant(item)?,
            reason,
            amount: currency.amount(need(number(item, "amount")?, "amount")?),
            state,
            try_no: count(item, "try_no")?,
            rung: usize::try_from(rung).map_err(|_| format!("rung {rung} is not a rung"))?,
            first_failure: millis(item, "first_failure")?,
            due: need(millis(item, "due")?, "due")?,
            idempotency_key: text(item, "idempotency_key"),
            provider_ref: text(item, "provider_ref"),
            tries,
            created_at: Millis::new(number(item, "created_at")?.unwrap_or(0)),
            version: version(item),
        })
    }

    /// Writes `self` at the version it was read (`None`: a new attempt, never over one).
    pub fn replace(&self) -> Effect {
        Effect::Replace {
            item: self.to_item(),
            expected_version: self.version,
        }
    }
}

/// A change of a wallet's autopay, journaled in the transaction that makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutopayLog {
    pub at: Millis,
    /// Who: an operator's name, or the source whose event changed it (`stripe`).
    pub actor: String,
    /// `set`, `paused`, `resumed`, `removed`, `method-saved`, `suspended`, …
    pub action: String,
    /// What changed, in words.
    pub detail: String,
}

impl AutopayLog {
    /// The journal item; `unique` tells entries of the same millisecond apart (an event's id, so
    /// a re-run writes the same one).
    pub fn to_item(&self, tenant: &str, unique: &str) -> Item {
        Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            (
                "sk".to_string(),
                s(format!(
                    "{AUTOPAY_LOG_PREFIX}{:013}#{unique}",
                    self.at.get().max(0)
                )),
            ),
            ("kind".to_string(), s(KIND_AUTOPAY_LOG)),
            ("at".to_string(), n(self.at.get())),
            ("actor".to_string(), s(&self.actor)),
            ("action".to_string(), s(&self.action)),
            ("detail".to_string(), s(&self.detail)),
        ])
    }

    pub fn from_item(item: &Item) -> Result<Self, String> {
        Ok(Self {
            at: need(millis(item, "at")?, "at")?,
            actor: need(text(item, "actor"), "actor")?,
            action: need(text(item, "action"), "action")?,
            detail: text(item, "detail").unwrap_or_default(),
        })
    }

    /// The journal entry's write (never over another).
    pub fn create(&self, tenant: &str, unique: &str) -> Effect {
        Effect::Ensure(self.to_item(tenant, unique))
    }
}

/// Where a payment method belongs: the tenant whose autopay saved it, and whether the provider
/// said it was detached (a detached method is never saved again, whichever event comes first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MethodIndex {
    pub payment_method: String,
    pub tenant: Option<TenantId>,
    pub detached: bool,
    pub version: Option<u64>,
}

impl MethodIndex {
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let (pk, _) = method_index_key("");
        Ok(Self {
            payment_method: get_s(item, "pk")
                .and_then(|p| p.strip_prefix(pk.as_str()))
                .unwrap_or_default()
                .to_owned(),
            tenant: item
                .contains_key("tenant")
                .then(|| tenant(item))
                .transpose()?,
            detached: get_bool(item, "detached").unwrap_or(false),
            version: version(item),
        })
    }

    /// Writes `self` at the version read (`None`: there must be none).
    pub fn replace(&self) -> Effect {
        let (pk, sk) = method_index_key(&self.payment_method);
        let mut item = Item::from([
            ("pk".to_string(), s(pk)),
            ("sk".to_string(), s(sk)),
            ("kind".to_string(), s(KIND_METHOD_INDEX)),
            ("detached".to_string(), attr::bool(self.detached)),
        ]);
        if let Some(t) = &self.tenant {
            item.insert("tenant".into(), s(t));
        }
        Effect::Replace {
            item,
            expected_version: self.version,
        }
    }
}
