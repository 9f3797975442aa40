//! Autopay's items (their layout is described in [`super`]): the settings item `AUTOPAY` and the
//! attempts `ATTEMPT#{id}` under the wallet's partition, each `Replace`d at the version read; the
//! autopay journal `AUTOPAY_LOG#…`; and the payment-method index `PAYMENT_METHOD#{id}`. Open
//! attempts and next recurring charges carry the sparse open index's attributes in shards of
//! their own ([`ATTEMPT_SHARD_PREFIX`], [`RECURRING_SHARD_PREFIX`]). Reading is strict: an unknown
//! state, status or rule is an error saying what is wrong, never a default. The attempt item is in
//! `autopay/attempt.rs`; the journal and the payment-method index in `autopay/journal.rs`.

mod attempt;
mod journal;

pub use journal::{AutopayLog, MethodIndex};

use crate::autopay::{
    Autopay, AutopayStatus, Every, Ladder, MonthlyCap, Recurring, SavedMethod, Schedule, TopUpRule,
};
use crate::balance::items::{number, tenant, text, version, wallet_pk};
use crate::money::{Currency, Money};
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::attr::{get_s, n, s};
use inbox_core::store::schema::{OPEN_DUE, OPEN_SHARD};
use inbox_core::store::{Effect, Item};
use sha2::{Digest, Sha256};

pub const KIND_AUTOPAY: &str = "autopay";
pub const KIND_ATTEMPT: &str = "autopay_attempt";
pub const KIND_AUTOPAY_LOG: &str = "autopay_log";
pub const KIND_METHOD_INDEX: &str = "payment_method_index";
pub const AUTOPAY_SK: &str = "AUTOPAY";
pub const ATTEMPT_PREFIX: &str = "ATTEMPT#";
pub const AUTOPAY_LOG_PREFIX: &str = "AUTOPAY_LOG#";
pub(super) const METHOD_INDEX_PREFIX: &str = "PAYMENT_METHOD#";
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

pub(super) fn shard_of(prefix: &str, key: &str) -> String {
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

pub(super) fn money(item: &Item, k: &str, c: Option<Currency>) -> Result<Option<Money>, String> {
    match number(item, k)? {
        None => Ok(None),
        Some(minor) => {
            let c = c.ok_or_else(|| format!("{k} is set but currency is missing"))?;
            Ok(Some(c.amount(minor)))
        }
    }
}

pub(super) fn need<T>(v: Option<T>, k: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("{k} is missing"))
}

pub(super) fn millis(item: &Item, k: &str) -> Result<Option<Millis>, String> {
    Ok(number(item, k)?.map(Millis::new))
}

pub(super) fn count(item: &Item, k: &str) -> Result<u32, String> {
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

#[cfg(test)]
mod tests;
