//! The unmatched payment's item (its layout is described in [`super`]): `PAYMENT#{payment
//! intent}` / `UNMATCHED`, beside the payment's index. While open it carries `open_shard =
//! UNMATCHED` and `open_due = first_seen`, so the sparse open index lists the open ones, oldest
//! first, with one `Query` (and those older than a window with the same `Query` bounded by time);
//! matched or bound, it leaves the index.

use crate::balance::items::{number, text, version};
use crate::payments::unmatched::{Resolution, UnmatchedPayment};
use inbox_core::store::attr::{self, get_bool, get_s, get_strings, n, s};
use inbox_core::store::schema::{OPEN_DUE, OPEN_SHARD};
use inbox_core::store::{Effect, Item};

pub const KIND_UNMATCHED: &str = "unmatched_payment";
/// The sort key of a payment's unmatched item (its partition is the payment index's).
pub const UNMATCHED_SK: &str = "UNMATCHED";
/// The open-index shard of the open unmatched payments (one: they are few, and listed together).
pub const UNMATCHED_SHARD: &str = "UNMATCHED";
/// The open-index shard of the dismissed ones (due at their dismissal: listed newest last by the
/// operator's `--dismissed`; nothing counts or alarms on it).
pub const DISMISSED_SHARD: &str = "UNMATCHED#DISMISSED";

/// The key of a payment's unmatched item.
pub fn unmatched_key(payment_key: &str) -> (String, &'static str) {
    (
        crate::balance::items::payment_index_key(payment_key).0,
        UNMATCHED_SK,
    )
}

impl UnmatchedPayment {
    /// Reads an unmatched item; an error says what is wrong with it.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let tenant = || crate::balance::items::tenant(item);
        let at = || number(item, "resolved_at")?.ok_or("resolved_at is missing".to_owned());
        let resolution = match get_s(item, "state") {
            Some("open") => Resolution::Open,
            Some("matched") => Resolution::Matched {
                tenant: tenant()?,
                at: at()?,
                by_event: text(item, "matched_by").unwrap_or_default(),
            },
            Some("bound") => Resolution::Bound {
                tenant: tenant()?,
                at: at()?,
                by: text(item, "bound_by").unwrap_or_default(),
            },
            Some("dismissed") => Resolution::Dismissed {
                at: at()?,
                by: text(item, "dismissed_by").unwrap_or_default(),
                reason: text(item, "reason").unwrap_or_default(),
            },
            Some(other) => return Err(format!("state {other:?} is not a known state")),
            None => return Err("state is missing".into()),
        };
        Ok(Self {
            payment_key: text(item, "payment_key").ok_or("payment_key is missing")?,
            amount: number(item, "amount")?.ok_or("amount is missing")?,
            currency: text(item, "currency"),
            customer: text(item, "customer"),
            email: text(item, "email"),
            first_seen: number(item, "first_seen")?.ok_or("first_seen is missing")?,
            messages: get_strings(item, "messages"),
            body: text(item, "body"),
            body_truncated: get_bool(item, "body_truncated").unwrap_or(false),
            resolution,
            version: version(item),
        })
    }

    /// Writes `self` over the item as read (`version`; `None`: there was none). A matched one
    /// keeps no body and expires at `expires_at` (seconds) if given; an open or bound one never
    /// expires.
    pub(crate) fn replace(&self, expires_at: Option<i64>) -> Effect {
        Effect::Replace {
            item: self.to_item(expires_at),
            expected_version: self.version,
        }
    }

    /// The item (without its version), as [`Self::replace`] writes it.
    pub fn to_item(&self, expires_at: Option<i64>) -> Item {
        let (pk, sk) = unmatched_key(&self.payment_key);
        let mut item = Item::from([
            ("pk".to_string(), s(pk)),
            ("sk".to_string(), s(sk)),
            ("kind".to_string(), s(KIND_UNMATCHED)),
            ("payment_key".to_string(), s(&self.payment_key)),
            ("amount".to_string(), n(self.amount)),
            ("first_seen".to_string(), n(self.first_seen)),
            ("messages".to_string(), attr::strings(&self.messages)),
            (
                "body_truncated".to_string(),
                attr::bool(self.body_truncated),
            ),
        ]);
        for (k, v) in [
            ("currency", &self.currency),
            ("customer", &self.customer),
            ("email", &self.email),
        ] {
            if let Some(v) = v {
                item.insert(k.into(), s(v));
            }
        }
        let keep_body = match &self.resolution {
            Resolution::Open => {
                item.insert("state".into(), s("open"));
                item.insert(OPEN_SHARD.into(), s(UNMATCHED_SHARD));
                item.insert(OPEN_DUE.into(), n(self.first_seen));
                true
            }
            Resolution::Matched {
                tenant,
                at,
                by_event,
            } => {
                item.insert("state".into(), s("matched"));
                item.insert("tenant".into(), s(tenant));
                item.insert("resolved_at".into(), n(*at));
                item.insert("matched_by".into(), s(by_event));
                if let Some(at) = expires_at {
                    item.insert("expires_at".into(), n(at));
                }
                false
            }
            Resolution::Bound { tenant, at, by } => {
                item.insert("state".into(), s("bound"));
                item.insert("tenant".into(), s(tenant));
                item.insert("resolved_at".into(), n(*at));
                item.insert("bound_by".into(), s(by));
                true
            }
            Resolution::Dismissed { at, by, reason } => {
                item.insert("state".into(), s("dismissed"));
                item.insert("resolved_at".into(), n(*at));
                item.insert("dismissed_by".into(), s(by));
                item.insert("reason".into(), s(reason));
                item.insert(OPEN_SHARD.into(), s(DISMISSED_SHARD));
                item.insert(OPEN_DUE.into(), n(*at));
                true
            }
        };
        if let (true, Some(body)) = (keep_body, &self.body) {
            item.insert("body".into(), s(body));
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::TenantId;
    use inbox_core::domain::{EventId, MessageKey, SourceName};

    fn written(p: &UnmatchedPayment, expires_at: Option<i64>) -> Item {
        match p.replace(expires_at) {
            Effect::Replace { item, .. } => item,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn open_items_are_in_the_open_index_and_resolved_ones_leave_it() {
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse("evt_1").unwrap(),
        );
        let mut p =
            UnmatchedPayment::first("pi_1", 2500, Some("usd".into()), &key, 7, b"{\"a\":1}")
                .reported_by(&key, None, Some("cus_1".into()), Some("a@x".into()));
        let open = written(&p, Some(99));
        assert_eq!(get_s(&open, "pk"), Some("PAYMENT#pi_1"));
        assert_eq!(get_s(&open, "sk"), Some("UNMATCHED"));
        assert_eq!(get_s(&open, OPEN_SHARD), Some(UNMATCHED_SHARD));
        assert_eq!(attr::get_n(&open, OPEN_DUE), Some(7));
        assert!(
            !open.contains_key("expires_at"),
            "an open payment never expires"
        );
        assert_eq!(UnmatchedPayment::from_item(&open).unwrap(), p);

        let acme = TenantId::parse("acme").unwrap();
        p.resolution = Resolution::Matched {
            tenant: acme.clone(),
            at: 9,
            by_event: "stripe/evt_2".into(),
        };
        let matched = written(&p, Some(99));
        assert!(!matched.contains_key(OPEN_SHARD) && !matched.contains_key(OPEN_DUE));
        assert!(
            !matched.contains_key("body"),
            "a matched payment keeps no body"
        );
        assert_eq!(attr::get_n(&matched, "expires_at"), Some(99));
        let read = UnmatchedPayment::from_item(&matched).unwrap();
        assert_eq!((read.resolution, read.body), (p.resolution.clone(), None));

        p.resolution = Resolution::Bound {
            tenant: acme,
            at: 9,
            by: "alice".into(),
        };
        let bound = written(&p, None);
        assert!(!bound.contains_key(OPEN_SHARD) && bound.contains_key("body"));
        assert_eq!(UnmatchedPayment::from_item(&bound).unwrap(), p);

        p.resolution = Resolution::Dismissed {
            at: 11,
            by: "bob".into(),
            reason: "the shop's payment".into(),
        };
        let dismissed = written(&p, Some(99));
        assert_eq!(get_s(&dismissed, OPEN_SHARD), Some(DISMISSED_SHARD));
        assert_eq!(attr::get_n(&dismissed, OPEN_DUE), Some(11));
        assert!(dismissed.contains_key("body") && !dismissed.contains_key("expires_at"));
        assert_eq!(UnmatchedPayment::from_item(&dismissed).unwrap(), p);

        let mut bad = bound.clone();
        bad.insert("state".into(), s("lost"));
        assert!(UnmatchedPayment::from_item(&bad)
            .unwrap_err()
            .contains("lost"));
        let mut bad = bound;
        bad.insert("amount".into(), s("x"));
        assert!(UnmatchedPayment::from_item(&bad).is_err());
    }
}
