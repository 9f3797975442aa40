//! Why DynamoDB cancelled a transaction, read from its cancellation reasons (one per element, in
//! request order), and what that means for the caller.
//!
//! First, two cancellations that are not the caller's to decide, and are sent again:
//! - [`existing_only`]: cancelled only because items it creates if absent
//!   ([`crate::store::Effect::CreateIfAbsent`]) exist: sent again without them;
//! - [`conflict_only`]: cancelled only by `TransactionConflict` (every other element `None`):
//!   another transaction touched one of its items at the same moment (DynamoDB serializes
//!   transactions per item and cancels the one that loses, under contention; DynamoDB Local never
//!   does). Nothing was wrong with the request: it is sent again unchanged after a backoff with
//!   full jitter, a bounded number of times, and counted (`contention`).
//!
//! Then [`classify`]:
//! - the message's own condition failed: another invocation moved it ([`Applied::MessageConflict`]);
//! - `ValidationError` or `ItemCollectionSizeLimitExceeded` on any element: the request's content
//!   is refused and will be refused again ([`StoreError::Invalid`]: the message fails permanently,
//!   with the reason);
//! - an effect's condition failed, or `TransactionConflict` on any element (mixed with a failed
//!   condition, or still there after the retries): decide again on fresh state
//!   ([`Applied::EffectConflict`]: the processor re-runs the handler, which reads its items
//!   again);
//! - `ThrottlingError`, `ProvisionedThroughputExceeded`, `RequestLimitExceeded`: transient, and
//!   reported as throttling ([`StoreError::Throttled`]);
//! - anything else: transient ([`StoreError::Unavailable`]).

use crate::store::{Applied, StoreError};
use aws_sdk_dynamodb::types::CancellationReason;

/// One element's reason: its code (`None` when the element was fine) and message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Reason {
    pub code: Option<String>,
    pub message: Option<String>,
}

impl From<&CancellationReason> for Reason {
    fn from(r: &CancellationReason) -> Self {
        Self {
            code: r.code().filter(|c| *c != "None").map(str::to_owned),
            message: r.message().map(str::to_owned),
        }
    }
}

/// A cancelled transaction, described for a message's history and the logs.
#[derive(Debug, thiserror::Error)]
#[error("the transaction was cancelled: {0}")]
pub(super) struct Cancelled(String);

const INVALID: &[&str] = &["ValidationError", "ItemCollectionSizeLimitExceeded"];
const THROTTLED: &[&str] = &[
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
];

/// What a cancellation means. `message_at`: the index of the message's own element, if the
/// transaction carries one.
pub(super) fn classify(
    reasons: &[Reason],
    message_at: Option<usize>,
) -> Result<Applied, StoreError> {
    let code = |i: usize| reasons.get(i).and_then(|r| r.code.as_deref());
    let any = |codes: &[&str]| {
        reasons
            .iter()
            .any(|r| r.code.as_deref().is_some_and(|c| codes.contains(&c)))
    };
    if message_at.is_some_and(|i| code(i) == Some("ConditionalCheckFailed")) {
        return Ok(Applied::MessageConflict);
    }
    if any(INVALID) {
        return Err(StoreError::Invalid(Box::new(describe(reasons))));
    }
    if any(&["ConditionalCheckFailed", "TransactionConflict"]) {
        return Ok(Applied::EffectConflict);
    }
    if any(THROTTLED) {
        return Err(StoreError::Throttled(Box::new(describe(reasons))));
    }
    Err(StoreError::Unavailable(Box::new(describe(reasons))))
}

/// The elements to leave out when the transaction is sent again: when every element that has a
/// reason failed its condition and creates an item only if absent (`creates_if_absent[i]`), their
/// indexes (their items exist, so there is nothing for them to do). `None` when anything else
/// cancelled it: then it means what [`classify`] says.
pub(super) fn existing_only(reasons: &[Reason], creates_if_absent: &[bool]) -> Option<Vec<usize>> {
    let mut existing = Vec::new();
    for (i, r) in reasons.iter().enumerate() {
        match r.code.as_deref() {
            None => {}
            Some("ConditionalCheckFailed") if creates_if_absent.get(i) == Some(&true) => {
                existing.push(i);
            }
            Some(_) => return None,
        }
    }
    (!existing.is_empty()).then_some(existing)
}

/// Whether the transaction was cancelled only by another transaction on its items: at least one
/// element's reason is `TransactionConflict` and every other element has none (no failed
/// condition, no invalid content, no throttling). Such a transaction may simply be sent again.
pub(super) fn conflict_only(reasons: &[Reason]) -> bool {
    let mut conflict = false;
    for r in reasons {
        match r.code.as_deref() {
            None => {}
            Some("TransactionConflict") => conflict = true,
            Some(_) => return false,
        }
    }
    conflict
}

/// `element 2: ValidationError (Item size has exceeded the maximum allowed size)`, for every
/// element that has a reason.
fn describe(reasons: &[Reason]) -> Cancelled {
    let parts: Vec<String> = reasons
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let code = r.code.as_deref()?;
            Some(match r.message.as_deref() {
                Some(m) if !m.is_empty() => format!("element {i}: {code} ({m})"),
                _ => format!("element {i}: {code}"),
            })
        })
        .collect();
    Cancelled(if parts.is_empty() {
        "no reason given".to_owned()
    } else {
        parts.join("; ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasons(codes: &[&str]) -> Vec<Reason> {
        codes
            .iter()
            .map(|c| Reason {
                code: (*c != "None").then(|| (*c).to_owned()),
                message: (*c == "ValidationError")
                    .then(|| "Item size has exceeded the maximum allowed size".to_owned()),
            })
            .collect()
    }

    fn kind(r: Result<Applied, StoreError>) -> String {
        match r {
            Ok(a) => format!("{a:?}"),
            Err(e) => e.kind().to_owned(),
        }
    }

    #[test]
    fn every_reason_maps_to_what_the_caller_must_do() {
        // The message is the last element (index 2) of a commit with two effects.
        let cases = [
            (
                &["None", "None", "ConditionalCheckFailed"][..],
                "MessageConflict",
            ),
            (
                &["ValidationError", "None", "ConditionalCheckFailed"],
                "MessageConflict",
            ),
            (
                &["ConditionalCheckFailed", "None", "None"],
                "EffectConflict",
            ),
            (&["None", "TransactionConflict", "None"], "EffectConflict"),
            (&["None", "None", "TransactionConflict"], "EffectConflict"),
            (&["ValidationError", "None", "None"], "invalid"),
            (
                &["ConditionalCheckFailed", "ValidationError", "None"],
                "invalid",
            ),
            (
                &["None", "ItemCollectionSizeLimitExceeded", "None"],
                "invalid",
            ),
            (&["ThrottlingError", "None", "None"], "throttled"),
            (
                &["None", "None", "ProvisionedThroughputExceeded"],
                "throttled",
            ),
            (&["None", "RequestLimitExceeded", "None"], "throttled"),
            (&["None", "None", "None"], "unavailable"),
            (&["SomethingNew", "None", "None"], "unavailable"),
        ];
        for (codes, expected) in cases {
            assert_eq!(
                kind(classify(&reasons(codes), Some(2))),
                expected,
                "{codes:?}"
            );
        }
        assert_eq!(
            kind(classify(&[], Some(0))),
            "unavailable",
            "no reasons at all"
        );
        // Without a message element, a failed condition is an effect's.
        assert_eq!(
            kind(classify(&reasons(&["ConditionalCheckFailed"]), None)),
            "EffectConflict"
        );
    }

    #[test]
    fn only_creations_of_existing_items_are_left_out_and_sent_again() {
        // Elements 0 and 2 create their items if absent; element 3 is the message.
        let once = [true, false, true, false];
        let cases: [(&[&str], Option<Vec<usize>>); 8] = [
            (
                &["ConditionalCheckFailed", "None", "None", "None"],
                Some(vec![0]),
            ),
            (
                &[
                    "ConditionalCheckFailed",
                    "None",
                    "ConditionalCheckFailed",
                    "None",
                ],
                Some(vec![0, 2]),
            ),
            // Another element's condition too: a real conflict, nothing left out.
            (
                &[
                    "ConditionalCheckFailed",
                    "ConditionalCheckFailed",
                    "None",
                    "None",
                ],
                None,
            ),
            (
                &[
                    "ConditionalCheckFailed",
                    "None",
                    "None",
                    "ConditionalCheckFailed",
                ],
                None,
            ),
            (
                &[
                    "ConditionalCheckFailed",
                    "TransactionConflict",
                    "None",
                    "None",
                ],
                None,
            ),
            (&["None", "None", "ValidationError", "None"], None),
            (&["ThrottlingError", "None", "None", "None"], None),
            (&["None", "None", "None", "None"], None),
        ];
        for (codes, expected) in cases {
            assert_eq!(existing_only(&reasons(codes), &once), expected, "{codes:?}");
        }
        assert_eq!(existing_only(&[], &once), None, "no reasons at all");
    }

    #[test]
    fn only_a_cancellation_by_transaction_conflicts_alone_is_sent_again() {
        let cases: [(&[&str], bool); 11] = [
            (&["TransactionConflict"], true),
            (&["None", "TransactionConflict"], true),
            (&["TransactionConflict", "None", "None"], true),
            (
                &["TransactionConflict", "TransactionConflict", "None"],
                true,
            ),
            // A failed condition is the caller's to decide on fresh state.
            (
                &["TransactionConflict", "ConditionalCheckFailed", "None"],
                false,
            ),
            (
                &["ConditionalCheckFailed", "None", "TransactionConflict"],
                false,
            ),
            (&["TransactionConflict", "ValidationError"], false),
            (&["ThrottlingError", "TransactionConflict"], false),
            (&["TransactionConflict", "SomethingNew"], false),
            (&["None", "None"], false),
            (&["ConditionalCheckFailed"], false),
        ];
        for (codes, expected) in cases {
            assert_eq!(conflict_only(&reasons(codes)), expected, "{codes:?}");
        }
        assert!(!conflict_only(&[]), "no reasons at all");
        // What is sent again is never also a creation to leave out, and vice versa.
        for (codes, _) in cases {
            let r = reasons(codes);
            assert!(
                !(conflict_only(&r) && existing_only(&r, &vec![true; r.len()]).is_some()),
                "{codes:?}"
            );
        }
    }

    #[test]
    fn the_reason_is_kept_for_the_history() {
        let err = classify(&reasons(&["None", "ValidationError", "None"]), Some(2)).unwrap_err();
        assert_eq!(
            err.chain(),
            "the store refused the request as invalid: the transaction was cancelled: element 1: \
             ValidationError (Item size has exceeded the maximum allowed size)"
        );
    }
}
