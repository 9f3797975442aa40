//! Why DynamoDB cancelled a transaction, read from its cancellation reasons (one per element, in
//! request order), and what that means for the caller.
//!
//! - the message's own condition failed: another invocation moved it ([`Applied::MessageConflict`]);
//! - `ValidationError` or `ItemCollectionSizeLimitExceeded` on any element: the request's content
//!   is refused and will be refused again ([`StoreError::Invalid`]: the message fails permanently,
//!   with the reason);
//! - an effect's condition failed, or `TransactionConflict` on any element (DynamoDB serializes
//!   transactions per item): decide again on fresh state ([`Applied::EffectConflict`]);
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
    fn the_reason_is_kept_for_the_history() {
        let err = classify(&reasons(&["None", "ValidationError", "None"]), Some(2)).unwrap_err();
        assert_eq!(
            err.chain(),
            "the store refused the request as invalid: the transaction was cancelled: element 1: \
             ValidationError (Item size has exceeded the maximum allowed size)"
        );
    }
}
