//! The wallet item's side of the notices ([`crate::balance::notices`] decides them): the
//! attributes that record a movement's [`Marks`], added to its own wallet write, and their names.

use super::WalletChanges;
use crate::balance::notices::Marks;
use inbox_core::store::attr;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
