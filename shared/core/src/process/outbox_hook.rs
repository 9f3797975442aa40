//! The outbox's hook at the terminal transitions (`processed`, `ignored`): the delivery items of
//! [`crate::outbox::Fanout`](crate::outbox::fanout::Fanout) join the transition's transaction.
//! Kept apart from the state machine: without a hook ([`Processor::with_fanout`] not called)
//! nothing changes.

use super::{InfraError, Processor};
use crate::domain::Status;
use crate::message::StoredMessage;
use crate::outbox::fanout::{Fanout, FanoutError};
use crate::store::{Effect, StoreError, MAX_EFFECTS};
use std::sync::Arc;

impl<S, R, Q, C> Processor<S, R, Q, C> {
    /// Fans every event that becomes `processed` or `ignored` out to the outbox's destinations,
    /// in the transaction of that transition (see [`crate::outbox::fanout`]).
    pub fn with_fanout(mut self, fanout: Arc<dyn Fanout>) -> Self {
        self.fanout = Some(fanout);
        self
    }

    /// The writes to add to `message`'s transition to `terminal`, after `effects` handler writes;
    /// `Ok(Err(reason))`: the transaction cannot hold them (a permanent failure with that reason).
    pub(super) async fn outbox_effects(
        &self,
        message: &StoredMessage,
        terminal: Status,
        effects: usize,
        now: i64,
    ) -> Result<Result<Vec<Effect>, String>, InfraError> {
        let Some(fanout) = &self.fanout else {
            return Ok(Ok(Vec::new()));
        };
        let room = MAX_EFFECTS.saturating_sub(effects);
        match fanout.effects(message, terminal, room, now).await {
            Ok(extra) => Ok(Ok(extra)),
            Err(FanoutError::Store(e)) => Err(InfraError::Store(e)),
            Err(e @ (FanoutError::NoRoom { .. } | FanoutError::Build(_))) => Ok(Err(e.to_string())),
        }
    }

    /// The writes to add to the transition to `ignored` (no handler effects: the fan-out always
    /// fits; a failure to build it is refused loudly, as an error of the store request).
    pub(super) async fn ignored_effects(
        &self,
        message: &StoredMessage,
        now: i64,
    ) -> Result<Vec<Effect>, InfraError> {
        match self
            .outbox_effects(message, Status::Ignored, 0, now)
            .await?
        {
            Ok(effects) => Ok(effects),
            Err(why) => Err(InfraError::Store(StoreError::Rejected(why.into()))),
        }
    }
}
