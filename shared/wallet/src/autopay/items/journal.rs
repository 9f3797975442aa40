//! The autopay journal (`AUTOPAY_LOG#{ms}#{unique}`: every change of a wallet's autopay settings,
//! who made it and what) and the payment-method index (`PAYMENT_METHOD#{id}`: the tenant whose
//! autopay saved it, and whether the provider detached it).

use super::{
    method_index_key, millis, need, AUTOPAY_LOG_PREFIX, KIND_AUTOPAY_LOG, KIND_METHOD_INDEX,
};
use crate::balance::items::{tenant, text, version, wallet_pk};
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::attr::{self, get_bool, get_s, n, s};
use inbox_core::store::{Effect, Item};

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
    pub fn to_item(&self, tenant: &TenantId, unique: &str) -> Item {
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
    pub fn create(&self, tenant: &TenantId, unique: &str) -> Effect {
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
