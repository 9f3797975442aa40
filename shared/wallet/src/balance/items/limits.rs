//! A wallet's limits as stored (its layout is described in [`super`]): the write that changes
//! the floor and the review threshold of the wallet item and nothing else, and the limits
//! journal (`LIMITS_LOG#{ms}#{unique}`: every such change, who made it, before and after).

use super::{number, text, wallet_pk, WALLET_SK};
use crate::balance::model::Limits;
use crate::money::Currency;
use crate::tenant::TenantId;
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::store::attr::{n, s};
use inbox_core::store::{Effect, Item};

pub const KIND_LIMITS_LOG: &str = "limits_log";
pub const LIMITS_LOG_PREFIX: &str = "LIMITS_LOG#";

/// A stored review threshold: a number, or NULL once an operator removed it.
pub(crate) fn threshold_attr(threshold: Option<i64>) -> AttributeValue {
    threshold.map_or(AttributeValue::Null(true), n)
}

/// The review threshold of a wallet item: absent or NULL → none.
pub(crate) fn read_threshold(item: &Item) -> Result<Option<i64>, String> {
    match item.get("review_threshold") {
        Some(AttributeValue::Null(_)) => Ok(None),
        _ => number(item, "review_threshold"),
    }
}

/// The wallet write that sets `limits` and nothing else (`SET` of two attributes: a movement's
/// `ADD`s committed meanwhile are kept).
pub(crate) fn set_limits(tenant: &TenantId, limits: &Limits) -> Effect {
    Effect::Adjust {
        pk: wallet_pk(tenant),
        sk: WALLET_SK.into(),
        add: Vec::new(),
        set: vec![
            ("floor".into(), n(limits.floor.minor())),
            (
                "review_threshold".into(),
                threshold_attr(limits.review_threshold.map(|t| t.minor())),
            ),
        ],
    }
}

/// One change of a wallet's limits, journaled in the transaction that makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsLog {
    pub at: i64,
    /// The operator who made it.
    pub actor: String,
    pub before: Limits,
    pub after: Limits,
}

impl LimitsLog {
    /// The journal entry's write (never over another; `unique` tells entries of the same
    /// millisecond apart).
    pub(crate) fn create(&self, tenant: &TenantId, unique: &str) -> Effect {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            (
                "sk".to_string(),
                s(format!(
                    "{LIMITS_LOG_PREFIX}{:013}#{unique}",
                    self.at.max(0)
                )),
            ),
            ("kind".to_string(), s(KIND_LIMITS_LOG)),
            ("at".to_string(), n(self.at)),
            ("actor".to_string(), s(&self.actor)),
            ("floor_before".to_string(), n(self.before.floor.minor())),
            ("floor_after".to_string(), n(self.after.floor.minor())),
        ]);
        for (k, t) in [
            ("review_threshold_before", self.before.review_threshold),
            ("review_threshold_after", self.after.review_threshold),
        ] {
            item.insert(k.into(), threshold_attr(t.map(|t| t.minor())));
        }
        Effect::Create(item)
    }

    /// Reads a journal entry of a wallet in `currency`; an error says what is wrong with it.
    pub fn from_item(item: &Item, currency: Currency) -> Result<Self, String> {
        let need = |k: &str| number(item, k)?.ok_or_else(|| format!("{k} is missing"));
        let threshold = |k: &str| match item.get(k) {
            Some(AttributeValue::Null(_)) | None => Ok(None),
            Some(_) => number(item, k).map(|t| t.map(|t| currency.amount(t))),
        };
        Ok(Self {
            at: need("at")?,
            actor: text(item, "actor").ok_or("actor is missing")?,
            before: Limits {
                floor: currency.amount(need("floor_before")?),
                review_threshold: threshold("review_threshold_before")?,
            },
            after: Limits {
                floor: currency.amount(need("floor_after")?),
                review_threshold: threshold("review_threshold_after")?,
            },
        })
    }
}
