//! The storage side of the notices ([`crate::balance::notices`] decides them): the wallet item's
//! attributes that record a movement's [`Marks`], added to its own wallet write, and their names;
//! and the outbox writes that publish its events in the movement's transaction.

use super::WalletChanges;
use crate::balance::events::WalletEvent;
use crate::balance::notices::{Marks, Notices};
use crate::money::Overflow;
use inbox_core::clock::Millis;
use inbox_core::store::{attr, Effect};

/// Whether the last crossing into low was announced (see [`crate::balance::notices`]).
pub(crate) const LOW: &str = "low";
/// How many crossings into low were announced.
pub(crate) const LOW_CROSSINGS: &str = "low_crossings";
/// The last month whose review was announced (`YYYY_MM`).
pub(crate) const REVIEW_REPORTED: &str = "review_reported";

/// The adds and sets that record `marks` on the wallet item: `low` set, `low_crossings`
/// added to (commutative: concurrent crossings never reuse an id), `review_reported` set.
pub(crate) fn marks_changes(marks: &Marks) -> WalletChanges {
    let mut add = Vec::new();
    let mut set = Vec::new();
    if let Some(low) = marks.low {
        set.push((LOW.to_string(), attr::bool(low)));
    }
    if marks.crossed {
        add.push((LOW_CROSSINGS.to_string(), 1));
    }
    if let Some(month) = &marks.review_reported {
        set.push((REVIEW_REPORTED.to_string(), attr::s(month)));
    }
    (add, set)
}

/// The writes that publish `notices`' events at `at_ms`: each its outbox message, created
/// unless it exists (`Effect::CreateIfAbsent`), so movements that read the same wallet and
/// publish the same event write it once between them.
pub(crate) fn notice_writes(notices: &Notices, at_ms: i64) -> Result<Vec<Effect>, Overflow> {
    let at = Millis::new(at_ms);
    notices.events.iter().map(|e| publish(e, at)).collect()
}

/// One event's outbox write.
fn publish(event: &WalletEvent, at: Millis) -> Result<Effect, Overflow> {
    // The ids are made of a parsed tenant, a number and a month: always valid.
    event
        .publish(at)
        .map_err(|e| Overflow(format!("the {} event: {e}", event.event_type())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Currency;
    use crate::tenant::TenantId;

    #[test]
    fn marks_become_the_wallet_items_attributes() {
        assert_eq!(marks_changes(&Marks::default()), (vec![], vec![]));
        let (add, set) = marks_changes(&Marks {
            low: Some(true),
            crossed: true,
            review_reported: Some("2026_11".into()),
        });
        assert_eq!(add, vec![(LOW_CROSSINGS.to_string(), 1)]);
        assert_eq!(
            set,
            vec![
                (LOW.to_string(), attr::bool(true)),
                (REVIEW_REPORTED.to_string(), attr::s("2026_11")),
            ]
        );
    }

    #[test]
    fn each_event_is_one_outbox_message_created_unless_it_exists() {
        let usd = Currency::parse("usd").unwrap();
        let event = WalletEvent::LowBalance {
            tenant: TenantId::parse("acme").unwrap(),
            crossing: 4,
            available: usd.amount(24),
            floor: usd.amount(20),
            price: usd.amount(5),
        };
        assert!(notice_writes(&Notices::default(), 7).unwrap().is_empty());
        let writes = notice_writes(
            &Notices {
                events: vec![event],
                ..Notices::default()
            },
            7,
        )
        .unwrap();
        assert_eq!(writes.len(), 1);
        assert!(matches!(writes[0], Effect::CreateIfAbsent(_)));
    }
}
