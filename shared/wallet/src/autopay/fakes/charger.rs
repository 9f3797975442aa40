//! [`ScriptedCharger`]: a [`Charger`] answering from a script, modelled on Stripe's documented
//! behaviour where it matters for never charging twice:
//!
//! - every answer that names a charge made a charge object (an intent) that the provider keeps,
//!   with its status now ([`Charger::lookup`]) and its metadata ([`Charger::find`], a strongly
//!   consistent list);
//! - a key's first answer is saved and replayed for the same key, and the key is PRUNED once it is
//!   24 hours old (Stripe keeps keys "at least 24 hours"): the same key then runs anew and makes
//!   another charge;
//! - a pending charge ([`ChargeOutcome::Pending`], Stripe's `processing`) settles later, when the
//!   test says ([`ScriptedCharger::settle`]).
//!
//! It counts the charges made per attempt and try, so a test asserts "one charge per try".

use super::lock;
use crate::autopay::charge::{ChargeReply, ChargeRequest, Charger, Find, ProviderUnavailable};
use crate::autopay::ladder::ChargeOutcome;
use inbox_core::clock::{Clock, ManualClock, Millis};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// How long the fake keeps a key: the least Stripe promises.
const KEY_KEPT_MS: i64 = 86_400_000;

/// One answer of the script: what a NEW key (or a pruned one) gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Answer(ChargeOutcome),
    /// The charge is made but the answer is lost (a 500 after the commit, a reset): the caller
    /// sees `Indeterminate` naming no charge; a repeat of the key gets the saved success.
    ChargedButLost,
    /// The process running the call dies in it: the call never returns. `reached`: the request
    /// got to the provider, which made the charge (and saved its answer under the key); else it
    /// never left (nothing recorded, no request counted).
    Killed {
        reached: bool,
    },
}

/// A charge object the provider keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    pub id: String,
    pub attempt: String,
    pub try_no: u32,
    pub customer: String,
    pub key: String,
    pub outcome: ChargeOutcome,
    pub created: Millis,
}

impl Intent {
    fn reply(&self) -> ChargeReply {
        ChargeReply {
            outcome: self.outcome.clone(),
            provider_ref: Some(self.id.clone()),
            replayed: false,
            requests: 1,
        }
    }
}

#[derive(Debug, Default)]
struct Script {
    steps: VecDeque<Step>,
    /// Each key's first answer, with when it was saved.
    saved: HashMap<String, (Millis, ChargeReply)>,
    intents: Vec<Intent>,
    down: bool,
    requests: Vec<(Millis, ChargeRequest)>,
    found: HashMap<String, Option<ChargeReply>>,
    unavailable: bool,
    lookups: usize,
    finds: usize,
}

/// A [`Charger`] answering from a script, with the provider's idempotency and records.
#[derive(Debug, Default)]
pub struct ScriptedCharger {
    script: Mutex<Script>,
    clock: Option<Arc<ManualClock>>,
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

    /// Takes each request's time from `clock` (and prunes keys by it).
    pub fn timed(mut self, clock: Arc<ManualClock>) -> Self {
        self.clock = Some(clock);
        self
    }

    fn now(&self) -> Millis {
        self.clock.as_ref().map(|c| c.now()).unwrap_or_default()
    }

    /// Answers `steps` after the current ones.
    pub fn then(&self, steps: impl IntoIterator<Item = Step>) {
        lock(&self.script).steps.extend(steps);
    }

    /// What [`Charger::find`] answers for `attempt`, whatever the records say.
    pub fn set_found(&self, attempt: &str, found: Option<ChargeReply>) {
        lock(&self.script).found.insert(attempt.to_owned(), found);
    }

    /// Whether the provider is unreachable: every charge is indeterminate (nothing made), every
    /// look-up fails.
    pub fn set_down(&self, down: bool) {
        lock(&self.script).down = down;
    }

    /// Whether look-ups ([`Charger::find`], [`Charger::lookup`]) cannot reach the provider.
    pub fn set_unavailable(&self, unavailable: bool) {
        lock(&self.script).unavailable = unavailable;
    }

    /// A pending charge settles: its status becomes `outcome` (as its webhook would say).
    pub fn settle(&self, provider_ref: &str, outcome: ChargeOutcome) {
        let mut s = lock(&self.script);
        if let Some(i) = s.intents.iter_mut().find(|i| i.id == provider_ref) {
            i.outcome = outcome;
        }
    }

    /// Every request received, with its time.
    pub fn requests(&self) -> Vec<(Millis, ChargeRequest)> {
        lock(&self.script).requests.clone()
    }

    /// Every charge object made, in order.
    pub fn intents(&self) -> Vec<Intent> {
        lock(&self.script).intents.clone()
    }

    /// The keys whose charge took or will take money (succeeded or pending), each once.
    pub fn charged_keys(&self) -> Vec<String> {
        lock(&self.script)
            .intents
            .iter()
            .filter(|i| matches!(i.outcome, ChargeOutcome::Succeeded | ChargeOutcome::Pending))
            .map(|i| i.key.clone())
            .collect()
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

    /// Look-ups by reference and finds made.
    pub fn lookups(&self) -> (usize, usize) {
        let s = lock(&self.script);
        (s.lookups, s.finds)
    }
}

impl ScriptedCharger {
    /// The scripted answer to `request` (`None`: the call never returns).
    fn answer(&self, request: &ChargeRequest) -> Option<ChargeReply> {
        let at = self.now();
        let mut s = lock(&self.script);
        s.requests.push((at, request.clone()));
        let key = request.idempotency_key.clone();
        if s.down {
            return Some(ChargeReply {
                outcome: ChargeOutcome::Indeterminate,
                provider_ref: None,
                replayed: false,
                requests: 3,
            });
        }
        // Keys are pruned once 24 hours old: the same key then runs anew.
        s.saved
            .retain(|_, (saved_at, _)| saved_at.get() + KEY_KEPT_MS > at.get());
        if let Some((_, saved)) = s.saved.get(&key) {
            return Some(ChargeReply {
                replayed: true,
                ..saved.clone()
            });
        }
        let step = s
            .steps
            .pop_front()
            .unwrap_or(Step::Answer(ChargeOutcome::Succeeded));
        let intent = |outcome: ChargeOutcome, n: usize| Intent {
            id: format!("pi_{n}"),
            attempt: request.attempt.clone(),
            try_no: request.try_no,
            customer: request.customer.clone(),
            key: key.clone(),
            outcome,
            created: at,
        };
        let n = s.intents.len() + 1;
        Some(match step {
            // Nothing made (a 5xx before the endpoint ran, a timeout before it was reached).
            Step::Answer(ChargeOutcome::Indeterminate) => ChargeReply {
                outcome: ChargeOutcome::Indeterminate,
                provider_ref: None,
                replayed: false,
                requests: 1,
            },
            Step::Answer(outcome) => {
                let made = intent(outcome, n);
                let reply = made.reply();
                s.intents.push(made);
                s.saved.insert(key, (at, reply.clone()));
                reply
            }
            Step::Killed { reached } => {
                if reached {
                    let made = intent(ChargeOutcome::Succeeded, n);
                    s.saved.insert(key, (at, made.reply()));
                    s.intents.push(made);
                } else {
                    s.requests.pop();
                }
                return None;
            }
            Step::ChargedButLost => {
                let made = intent(ChargeOutcome::Succeeded, n);
                s.saved.insert(key, (at, made.reply()));
                s.intents.push(made);
                ChargeReply {
                    outcome: ChargeOutcome::Indeterminate,
                    provider_ref: None,
                    replayed: false,
                    requests: 1,
                }
            }
        })
    }
}

impl Charger for ScriptedCharger {
    async fn charge(&self, request: &ChargeRequest) -> ChargeReply {
        match self.answer(request) {
            Some(reply) => reply,
            // Killed in the call: it never returns.
            None => std::future::pending().await,
        }
    }

    async fn lookup(&self, provider_ref: &str) -> Result<ChargeReply, ProviderUnavailable> {
        let mut s = lock(&self.script);
        s.lookups += 1;
        if s.unavailable || s.down {
            return Err(ProviderUnavailable("scripted".into()));
        }
        s.intents
            .iter()
            .find(|i| i.id == provider_ref)
            .map(Intent::reply)
            .ok_or_else(|| ProviderUnavailable(format!("no such intent {provider_ref}")))
    }

    async fn find(&self, find: &Find) -> Result<Option<ChargeReply>, ProviderUnavailable> {
        let mut s = lock(&self.script);
        s.finds += 1;
        if s.unavailable || s.down {
            return Err(ProviderUnavailable("scripted".into()));
        }
        if let Some(found) = s.found.get(&find.attempt) {
            return Ok(found.clone());
        }
        Ok(s.intents
            .iter()
            .rev()
            .find(|i| {
                i.attempt == find.attempt
                    && find.try_no.is_none_or(|t| t == i.try_no)
                    && i.created.get().div_euclid(1000) >= find.since_secs
            })
            .map(Intent::reply))
    }
}
