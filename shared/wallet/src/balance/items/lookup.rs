//! The items that find things (their layout is described in [`super`]): the payment index
//! (`PAYMENT#{payment intent}` / `PAYMENT`: a payment's tenant, or the refunds and the saved
//! payment method reported before it was known) and the wallet registry (`WALLETS` / `TENANT#{tenant}`, and `REGISTRY` once it is
//! complete).

use super::{number, tenant, version};
use crate::balance::model::PaymentIndex;
use crate::money::Minor;
use crate::parse::SavedMethod;
use crate::tenant::TenantId;
use inbox_core::store::attr::{self, get_s, get_strings, n, s};
use inbox_core::store::{Effect, Item};

pub const KIND_PAYMENT_INDEX: &str = "payment_index";
pub const KIND_REGISTRY: &str = "wallet_registry";
/// The partition of the wallet registry.
pub const REGISTRY_PK: &str = "WALLETS";
/// The sort-key prefix of a registered tenant.
pub const REGISTRY_PREFIX: &str = "TENANT#";
/// The sort key of the item saying the registry is complete.
pub const REGISTRY_COMPLETE_SK: &str = "REGISTRY";
const PAYMENT_INDEX_SK: &str = "PAYMENT";
const PAYMENT_INDEX_PREFIX: &str = "PAYMENT#";

/// The key of a payment's index item.
pub fn payment_index_key(payment_key: &str) -> (String, &'static str) {
    (
        format!("{PAYMENT_INDEX_PREFIX}{payment_key}"),
        PAYMENT_INDEX_SK,
    )
}

impl PaymentIndex {
    /// Reads a payment index item; an error says what is wrong with it.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let payment_key = get_s(item, "pk")
            .and_then(|pk| pk.strip_prefix(PAYMENT_INDEX_PREFIX))
            .unwrap_or_default()
            .to_owned();
        Ok(Self {
            payment_key,
            tenant: item
                .contains_key("tenant")
                .then(|| tenant(item))
                .transpose()?,
            refund_total: Minor::new(number(item, "refund_total")?.unwrap_or(0)),
            events: get_strings(item, "events"),
            method: match (
                get_s(item, "parked_customer"),
                get_s(item, "parked_payment_method"),
            ) {
                (Some(c), Some(pm)) => Some(SavedMethod {
                    customer: c.to_owned(),
                    payment_method: pm.to_owned(),
                }),
                (None, None) => None,
                _ => return Err("parked_customer and parked_payment_method go together".into()),
            },
            unmatched: attr::get_bool(item, "unmatched").unwrap_or(false),
            version: version(item),
        })
    }

    /// Writes `self` over the index as read (`read`: `false` when there was none), to expire at
    /// `expires_at` (seconds) if given: a conditional write, so two events deciding on the same
    /// index conflict and one is re-run on fresh state.
    pub(crate) fn replace(&self, read: bool, expires_at: Option<i64>) -> Effect {
        let (pk, sk) = payment_index_key(&self.payment_key);
        let mut item = Item::from([
            ("pk".to_string(), s(pk)),
            ("sk".to_string(), s(sk)),
            ("kind".to_string(), s(KIND_PAYMENT_INDEX)),
            ("refund_total".to_string(), n(self.refund_total.get())),
            ("events".to_string(), attr::strings(&self.events)),
        ]);
        if let Some(tenant) = &self.tenant {
            item.insert("tenant".into(), s(tenant));
        }
        if let Some(m) = &self.method {
            item.insert("parked_customer".into(), s(&m.customer));
            item.insert("parked_payment_method".into(), s(&m.payment_method));
        }
        if self.unmatched {
            item.insert("unmatched".into(), attr::bool(true));
        }
        if let Some(at) = expires_at {
            item.insert("expires_at".into(), n(at));
        }
        Effect::Replace {
            item,
            expected_version: if read { self.version } else { None },
        }
    }
}

/// Registers a wallet in the registry (idempotent: an unconditional upsert).
pub(crate) fn register_wallet(tenant: &TenantId) -> Effect {
    Effect::Adjust {
        pk: REGISTRY_PK.into(),
        sk: format!("{REGISTRY_PREFIX}{tenant}"),
        add: Vec::new(),
        set: vec![
            ("kind".into(), s(KIND_REGISTRY)),
            ("tenant".into(), s(tenant)),
        ],
    }
}

/// Marks the registry complete (every wallet registered) as of `now_ms`.
pub(crate) fn registry_complete(now_ms: i64) -> Effect {
    Effect::Adjust {
        pk: REGISTRY_PK.into(),
        sk: REGISTRY_COMPLETE_SK.into(),
        add: Vec::new(),
        set: vec![
            ("kind".into(), s(KIND_REGISTRY)),
            ("complete_since".into(), n(now_ms)),
        ],
    }
}

/// The tenant a registry item names.
pub(crate) fn registered_tenant(item: &Item) -> Option<TenantId> {
    tenant(item).ok()
}
