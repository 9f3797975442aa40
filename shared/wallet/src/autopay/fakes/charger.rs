//! [`ScriptedCharger`]: a [`Charger`] answering from a script with the provider's idempotency
//! (the same key gets the saved answer, replayed, for 24 hours as Stripe keeps a key), counting
//! the distinct keys it charged.

use super::lock;
use crate::autopay::charge::{ChargeReply, ChargeRequest, Charger, ProviderUnavailable};
use crate::autopay::ladder::ChargeOutcome;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;

/// One answer of the script: what a NEW key (or a key whose last answer was indeterminate) gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Answer(ChargeOutcome),
    /// The charge is made but the answer is lost (a 500 after the commit, a reset): the caller
    /// sees `Indeterminate`; a repeat of the key gets the saved success.
    ChargedButLost,
}

#[derive(Debug, Default)]
struct Script {
    steps: VecDeque<Step>,
    /// Each key's answer, with when it was saved.
    saved: HashMap<String, (Millis, ChargeReply)>,
    /// The latest charge per attempt (what `find` answers when not told otherwise).
    latest: HashMap<String, ChargeReply>,
    down: bool,
    requests: Vec<(Millis, ChargeRequest)>,
    charged: Vec<String>,
    found: HashMap<String, Option<ChargeReply>>,
    unavailable: bool,
}

/// A [`Charger`] answering from a script, with the provider's idempotency.
#[derive(Debug, Default)]
pub struct ScriptedCharger {
    script: Mutex<Script>,
    clock: Option<std::sync::Arc<inbox_core::clock::ManualClock>>,
}

impl ScriptedCharger {
    /// Answers `steps` in order to new keys; succeeds when the script is out.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            script: Mutex::new(Script {
                steps: steps.into_iter().collect(),
                ..Script::default()
            }),
            clock: None,
        }
    }

    /// Records each request's time from `clock`.
    pub fn timed(mut self, clock: std::sync::Arc<inbox_core::clock::ManualClock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Answers `steps` after the current ones.
    pub fn then(&self, steps: impl IntoIterator<Item = Step>) {
        lock(&self.script).steps.extend(steps);
    }

    /// What [`Charger::find`] answers for `attempt`.
    pub fn set_found(&self, attempt: &str, found: Option<ChargeReply>) {
        lock(&self.script).found.insert(attempt.to_owned(), found);
    }

    /// Whether the provider is unreachable: every charge is indeterminate (nothing made), every
    /// look-up fails.
    pub fn set_down(&self, down: bool) {
        lock(&self.script).down = down;
    }

    /// Whether [`Charger::find`] cannot reach the provider.
    pub fn set_unavailable(&self, unavailable: bool) {
        lock(&self.script).unavailable = unavailable;
    }

    /// Every request received, with its time.
    pub fn requests(&self) -> Vec<(Millis, ChargeRequest)> {
        lock(&self.script).requests.clone()
    }

    /// The keys that made a charge (money moved), each once.
    pub fn charged_keys(&self) -> Vec<String> {
        lock(&self.script).charged.clone()
    }

    /// The distinct keys received.
    pub fn distinct_keys(&self) -> usize {
        let s = lock(&self.script);
        s.requests
            .iter()
            .map(|(_, r)| r.idempotency_key.as_str())
            .collect::<BTreeSet<_>>()
            .len()
    }
}

impl Charger for ScriptedCharger {
    async fn charge(&self, request: &ChargeRequest) -> ChargeReply {
        use inbox_core::clock::Clock;
        let at = self.clock.as_ref().map(|c| c.now()).unwrap_or_default();
        let mut s = lock(&self.script);
        s.requests.push((at, request.clone()));
        let key = request.idempotency_key.clone();
        if s.down {
            return ChargeReply {
                outcome: ChargeOutcome::Indeterminate,
                provider_ref: None,
                replayed: false,
                requests: 3,
            };
        }
        // Stripe keeps a key's answer for 24 hours.
        s.saved
            .retain(|_, (saved_at, _)| saved_at.get() + 86_400_000 > at.get());
        if let Some((_, saved)) = s.saved.get(&key) {
            return ChargeReply {
                replayed: true,
                ..saved.clone()
            };
        }
        let step = s
            .steps
            .pop_front()
            .unwrap_or(Step::Answer(ChargeOutcome::Succeeded));
        let n = s.requests.len();
        let made = |outcome| ChargeReply {
            outcome,
            provider_ref: Some(format!("pi_{n}")),
            replayed: false,
            requests: 1,
        };
        match step {
            Step::Answer(ChargeOutcome::Indeterminate) => ChargeReply {
                provider_ref: None,
                ..made(ChargeOutcome::Indeterminate)
            },
            Step::Answer(outcome) => {
                let reply = made(outcome.clone());
                if outcome == ChargeOutcome::Succeeded {
                    s.charged.push(key.clone());
                }
                s.saved.insert(key, (at, reply.clone()));
                s.latest.insert(request.attempt.clone(), reply.clone());
                reply
            }
            Step::ChargedButLost => {
                s.charged.push(key.clone());
                s.saved.insert(key, (at, made(ChargeOutcome::Succeeded)));
                s.latest
                    .insert(request.attempt.clone(), made(ChargeOutcome::Succeeded));
                ChargeReply {
                    provider_ref: None,
                    ..made(ChargeOutcome::Indeterminate)
                }
            }
        }
    }

    async fn find(
        &self,
        _tenant: &TenantId,
        attempt: &str,
    ) -> Result<Option<ChargeReply>, ProviderUnavailable> {
        let s = lock(&self.script);
        if s.unavailable || s.down {
            return Err(ProviderUnavailable("scripted".into()));
        }
        match s.found.get(attempt) {
            Some(found) => Ok(found.clone()),
            None => Ok(s.latest.get(attempt).cloned()),
        }
    }
}
