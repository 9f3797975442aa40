//! `wallet autopay set|pause|resume|rm` as changes of the ledger's [`Autopay`] record, checked
//! before anything is read or written: [`SetPlan::parse`] reads the words (which flags go
//! together, dates, the ladder, amounts within `WALLET_MAX_AMOUNT`), [`SetPlan::build`] makes the
//! rules in the wallet's currency with the ledger's own constructors ([`TopUpRule`],
//! [`MonthlyCap`], [`Schedule`]), and [`Change::apply`] edits the record and says what it did,
//! for the journal.
//!
//! | flags | top-up | recurring |
//! |---|---|---|
//! | `--threshold T --target G` | to G when at or below T | unchanged |
//! | `--threshold T --amount A` | A when at or below T | unchanged |
//! | `--every month --anchor D --amount A` | unchanged | A on D, then each month from D |
//! | `--threshold T --target G --every year --anchor D --amount A` | to G | A each year from D |
//! | `--threshold T --amount A --every …` | refused: which does `--amount` belong to? | |
//! | `--no-top-up`, `--no-recurring`, `--no-cap` | removed | removed |

use super::super::amount_arg;
use crate::cli::{AutopaySetArgs, EveryArg};
use crate::error::{usage, Result};
use inbox_core::clock::Millis;
use jiff::civil::Date;
use wallet_ledger::autopay::{
    Autopay, AutopayStatus, Every, Ladder, MonthlyCap, Recurring, SavedMethod, Schedule, TopUpRule,
};
use wallet_ledger::{Currency, Money};

/// What to do with one part of the settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit<T> {
    Keep,
    Clear,
    Set(T),
}

/// A threshold top-up, in minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TopUpPlan {
    ToTarget { threshold: i64, target: i64 },
    Fixed { threshold: i64, amount: i64 },
}

/// A recurring charge, in minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RecurringPlan {
    pub every: Every,
    pub anchor: Date,
    pub amount: i64,
}

/// `wallet autopay set`, read and checked (no currency yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SetPlan {
    pub top_up: Edit<TopUpPlan>,
    pub recurring: Edit<RecurringPlan>,
    pub cap: Edit<i64>,
    pub ladder: Option<Ladder>,
    pub method: Option<SavedMethod>,
}

/// An id of the provider's (customer, payment method): one printable word.
fn provider_id(what: &str, text: &str) -> Result<String> {
    let ok = !text.is_empty() && text.len() <= 255 && text.chars().all(|c| c.is_ascii_graphic());
    if ok {
        Ok(text.to_owned())
    } else {
        Err(usage(format!(
            "{what} {text:?} is not an id (one word of printable ASCII, at most 255 characters)"
        )))
    }
}

impl SetPlan {
    /// The flags of `set` as a plan; `max` is the largest accepted amount (`WALLET_MAX_AMOUNT`).
    pub(super) fn parse(args: &AutopaySetArgs, max: i64) -> Result<Self> {
        let amount = |what: &str, v: i64| amount_arg(what, v, max);
        let top_up = match (args.threshold, args.target, args.amount, args.every) {
            (None, ..) if args.no_top_up => Edit::Clear,
            (None, ..) => Edit::Keep,
            (Some(t), Some(g), None, _) | (Some(t), Some(g), Some(_), Some(_)) => {
                Edit::Set(TopUpPlan::ToTarget {
                    threshold: amount("the threshold", t)?,
                    target: amount("the target", g)?,
                })
            }
            (Some(_), Some(_), Some(_), None) => {
                return Err(usage(
                    "--target and --amount both size the top-up: give one (--amount goes with --every for a recurring charge)",
                ))
            }
            (Some(t), None, Some(a), None) => Edit::Set(TopUpPlan::Fixed {
                threshold: amount("the threshold", t)?,
                amount: amount("the top-up amount", a)?,
            }),
            (Some(_), None, Some(_), Some(_)) => {
                return Err(usage(
                    "--amount is ambiguous with both --threshold and --every: size the top-up with --target, or set the two rules in two commands",
                ))
            }
            (Some(_), None, None, _) => {
                return Err(usage(
                    "--threshold needs --target (top up to a level in one charge) or --amount (a fixed top-up)",
                ))
            }
        };
        let recurring = match (args.every, &args.anchor, args.amount) {
            (None, ..) if args.no_recurring => Edit::Clear,
            (None, ..) => Edit::Keep,
            (Some(every), Some(anchor), Some(a)) => Edit::Set(RecurringPlan {
                every: match every {
                    EveryArg::Month => Every::Month,
                    EveryArg::Year => Every::Year,
                },
                anchor: anchor.trim().parse::<Date>().map_err(|e| {
                    usage(format!(
                        "--anchor {anchor:?} is not a date (YYYY-MM-DD): {e}"
                    ))
                })?,
                amount: amount("the recurring amount", a)?,
            }),
            (Some(_), ..) => return Err(usage("--every needs --anchor and --amount")),
        };
        if args.amount.is_some() && args.threshold.is_none() && args.every.is_none() {
            return Err(usage(
                "--amount goes with --threshold (a fixed top-up) or --every (a recurring charge)",
            ));
        }
        let cap = match args.cap {
            Some(c) => Edit::Set(amount("the monthly cap", c)?),
            None if args.no_cap => Edit::Clear,
            None => Edit::Keep,
        };
        let ladder = args
            .ladder
            .as_deref()
            .map(|l| Ladder::parse(l).map_err(|e| usage(e.to_string())))
            .transpose()?;
        let method = match (&args.customer, &args.payment_method) {
            (Some(c), Some(pm)) => Some(SavedMethod {
                customer: provider_id("--customer", c)?,
                payment_method: provider_id("--payment-method", pm)?,
            }),
            (None, None) => None,
            _ => return Err(usage("--customer and --payment-method go together")),
        };
        let plan = Self {
            top_up,
            recurring,
            cap,
            ladder,
            method,
        };
        if plan.is_empty() {
            return Err(usage(
                "nothing to set: give --threshold, --every, --cap, --ladder, --customer/--payment-method or a --no-… flag",
            ));
        }
        Ok(plan)
    }

    fn is_empty(&self) -> bool {
        self.top_up == Edit::Keep
            && self.recurring == Edit::Keep
            && self.cap == Edit::Keep
            && self.ladder.is_none()
            && self.method.is_none()
    }

    /// The rules in the wallet's `currency`, checked by the ledger's constructors (a target above
    /// the threshold, positive amounts and cap); `now` places a new recurring charge's next
    /// date (the first at or after now: a past anchor charges no past period).
    pub(super) fn build(&self, currency: Currency, now: Millis) -> Result<Change> {
        let money = |minor| Money::new(minor, currency);
        let top_up = match self.top_up {
            Edit::Keep => Edit::Keep,
            Edit::Clear => Edit::Clear,
            Edit::Set(TopUpPlan::ToTarget { threshold, target }) => Edit::Set(
                TopUpRule::to_target(money(threshold), money(target))
                    .map_err(|e| usage(e.to_string()))?,
            ),
            Edit::Set(TopUpPlan::Fixed { threshold, amount }) => Edit::Set(
                TopUpRule::fixed(money(threshold), money(amount))
                    .map_err(|e| usage(e.to_string()))?,
            ),
        };
        let recurring = match self.recurring {
            Edit::Keep => Edit::Keep,
            Edit::Clear => Edit::Clear,
            Edit::Set(r) => {
                if r.amount <= 0 {
                    return Err(usage(format!(
                        "the recurring amount {} must be positive",
                        money(r.amount)
                    )));
                }
                let schedule = Schedule::new(r.anchor, r.every);
                let (next, _) = schedule.first_due_at_or_after(now).ok_or_else(|| {
                    usage(format!(
                        "--anchor {} has no charge left before year 9999",
                        r.anchor
                    ))
                })?;
                Edit::Set(Recurring {
                    schedule,
                    amount: money(r.amount),
                    next,
                })
            }
        };
        let cap = match self.cap {
            Edit::Keep => Edit::Keep,
            Edit::Clear => Edit::Clear,
            Edit::Set(c) => Edit::Set(MonthlyCap::new(money(c)).map_err(|e| usage(e.to_string()))?),
        };
        Ok(Change::Set {
            top_up,
            recurring,
            cap,
            ladder: self.ladder.clone(),
            method: self.method.clone(),
        })
    }
}

/// One change of a wallet's autopay, ready to apply to the stored record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Set {
        top_up: Edit<TopUpRule>,
        recurring: Edit<Recurring>,
        cap: Edit<MonthlyCap>,
        ladder: Option<Ladder>,
        method: Option<SavedMethod>,
    },
    Pause {
        reason: Option<String>,
    },
    Resume,
    Remove,
}

fn describe_top_up(rule: &TopUpRule) -> String {
    match rule {
        TopUpRule::ToTarget { threshold, target } => {
            format!("top up to {target} at or below {threshold}")
        }
        TopUpRule::Fixed { threshold, amount } => {
            format!("top up {amount} at or below {threshold}")
        }
    }
}

fn describe_recurring(r: &Recurring) -> String {
    format!(
        "{} every {} from {}",
        r.amount,
        r.schedule.every().as_str(),
        r.schedule.anchor()
    )
}

impl Change {
    /// The journal's name of the change.
    pub(crate) fn action(&self) -> &'static str {
        match self {
            Self::Set { .. } => "set",
            Self::Pause { .. } => "pause",
            Self::Resume => "resume",
            Self::Remove => "rm",
        }
    }

    /// Edits `a` and says what changed (for the journal). A recurring charge set again with the
    /// same calendar keeps its place in it (no period charged twice, none skipped).
    pub(crate) fn apply(&self, a: &mut Autopay) -> String {
        match self {
            Self::Set {
                top_up,
                recurring,
                cap,
                ladder,
                method,
            } => {
                let mut said = Vec::new();
                match top_up {
                    Edit::Keep => {}
                    Edit::Clear => {
                        a.top_up = None;
                        said.push("no top-up".to_owned());
                    }
                    Edit::Set(rule) => {
                        a.top_up = Some(*rule);
                        said.push(describe_top_up(rule));
                    }
                }
                match recurring {
                    Edit::Keep => {}
                    Edit::Clear => {
                        a.recurring = None;
                        said.push("no recurring charge".to_owned());
                    }
                    Edit::Set(r) => {
                        let next = match &a.recurring {
                            Some(old) if old.schedule == r.schedule => old.next,
                            _ => r.next,
                        };
                        a.recurring = Some(Recurring { next, ..r.clone() });
                        said.push(describe_recurring(r));
                    }
                }
                match cap {
                    Edit::Keep => {}
                    Edit::Clear => {
                        a.cap = None;
                        said.push("no monthly cap".to_owned());
                    }
                    Edit::Set(c) => {
                        a.cap = Some(*c);
                        said.push(format!("at most {} a month", c.cap()));
                    }
                }
                if let Some(l) = ladder {
                    a.ladder = l.clone();
                    said.push(format!("ladder {:?} days", l.days()));
                }
                if let Some(m) = method {
                    a.method = Some(m.clone());
                    said.push(format!(
                        "charge customer {} with {}",
                        m.customer, m.payment_method
                    ));
                }
                said.join("; ")
            }
            Self::Pause { reason } => {
                a.status = AutopayStatus::Paused;
                match reason {
                    Some(r) => format!("paused: {r}"),
                    None => "paused".to_owned(),
                }
            }
            Self::Resume => {
                let was = match &a.status {
                    AutopayStatus::Active => "active".to_owned(),
                    AutopayStatus::Paused => "paused".to_owned(),
                    AutopayStatus::Suspended { reason } => format!("suspended: {reason}"),
                };
                a.status = AutopayStatus::Active;
                format!("resumed (was {was})")
            }
            Self::Remove => {
                a.top_up = None;
                a.recurring = None;
                a.cap = None;
                a.method = None;
                "removed the rules and the saved payment method".to_owned()
            }
        }
    }
}
