//! The outbox's hook at the terminal transitions (`processed`, `ignored`): the delivery items of
//! [`crate::outbox::Fanout`] join the transition's transaction. Kept apart from the state machine:
//! without a hook ([`Processor::with_fanout`] not called) nothing changes.

use super::{InfraError, Processor};
use crate::domain::Status;
use crate::message::StoredMessage;
use crate::outbox::fanout::FanoutError;
use crate::store::{Effect, MAX_EFFECTS};

/// The outbox's writes for a terminal transition, or why the transition cannot take them.
pub(super) enum Extra {
    Effects(Vec<Effect>),
    /// The transition cannot hold the fan-out: a permanent failure with this reason.
    NoRoom(String),
}

impl<S, R, Q, C> Processor<S, R, Q, C> {
    /// The writes to add to `message`'s transition to `terminal`, after `effects` handler writes.
    pub(super) async fn outbox_effects(
        &self,
        message: &StoredMessage,
        terminal: Status,
        effects: usize,
        now: i64,
    ) -> Result<Extra, InfraError> {
        let Some(fanout) = &self.fanout else {
            return Ok(Extra::Effects(Vec::new()));
        };
        let room = MAX_EFFECTS.saturating_sub(effects);
        match fanout.effects(message, terminal, room, now).await {
            Ok(extra) => Ok(Extra::Effects(extra)),
            Err(FanoutError::Store(e)) => Err(InfraError::Store(e)),
            Err(e @ (FanoutError::NoRoom { .. } | FanoutError::Build(_))) => {
                Ok(Extra::NoRoom(e.to_string()))
            }
        }
    }
}
