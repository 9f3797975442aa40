//! [`ItemWriter`]: atomic writes of an application's own items outside a message transition.

use super::{Applied, Effect, StoreError, MAX_EFFECTS};
use std::future::Future;

/// The most effects one [`ItemWriter::commit`] may apply (one DynamoDB transaction).
pub const MAX_COMMIT_EFFECTS: usize = MAX_EFFECTS + 1;

/// Atomic writes of an application's own items outside a message transition (an operator
/// creating an account, say). A separate capability from [`ItemStore`](super::ItemStore) so that
/// handlers, which must write only through their outcome, can be given a store that only reads.
pub trait ItemWriter: Send + Sync {
    /// Applies every effect or none, with the same conditions as in a transition: a failed
    /// condition (`Create` of an existing key, `Replace` at another version) is
    /// [`Applied::EffectConflict`] and writes nothing. One effect is one conditional write; several
    /// are one transaction (at most [`MAX_COMMIT_EFFECTS`], else `Rejected`). Never answers
    /// [`Applied::MessageConflict`].
    fn commit(
        &self,
        effects: Vec<Effect>,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;
}

impl<T: ItemWriter> ItemWriter for std::sync::Arc<T> {
    fn commit(
        &self,
        effects: Vec<Effect>,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send {
        (**self).commit(effects)
    }
}

/// A commit asked for more effects than one transaction holds.
#[derive(Debug, thiserror::Error)]
#[error("{0} writes asked for at once; at most {MAX_COMMIT_EFFECTS} fit in one transaction")]
pub struct TooManyEffects(pub usize);
