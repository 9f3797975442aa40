//! `inboxctl dest …`: the outbox's destinations, through the core's journaled management
//! ([`inbox_core::outbox::admin`]): every change is one transaction with its journal entry, naming
//! the operator. Secrets are printed once, when generated; afterwards only their ages show.

use crate::cli::{DestAddArgs, DestCommand, DestIdArgs, DestReasonArgs, DestRotateArgs};
use crate::context::Context;
use crate::error::{failed, usage, Error, Result};
use crate::output::{fields, or_dash, print_json, say, table};
use crate::secret_input;
use crate::when;
use circuit::CircuitView;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::admin::{self, AdminError};
use inbox_core::outbox::breaker::BreakerConfig;
use inbox_core::outbox::destination::{
    Destination, DestinationError, DestinationId, DestinationState, SecretText,
};
use inbox_core::outbox::parking;
use inbox_core::outbox::pattern::Pattern;
use inbox_core::outbox::queue::SqsOutboxQueues;
use inbox_core::outbox::resend;
use inbox_core::outbox::schedule::{parse_duration, RetrySchedule};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::store::dynamo::DynamoTable;
use serde_json::json;

mod circuit;

pub async fn run(ctx: &Context, command: DestCommand) -> Result<()> {
    match command {
        DestCommand::Add(args) => add(ctx, args).await,
        DestCommand::List => list(ctx).await,
        DestCommand::Show(args) => show(ctx, args).await,
        DestCommand::Pause(args) => pause(ctx, args).await,
        DestCommand::Resume(args) => resume(ctx, args).await,
        DestCommand::RotateSecret(args) => rotate(ctx, args).await,
        DestCommand::Rm(args) => remove(ctx, args).await,
    }
}

/// Admin errors: bad input and a missing or existing destination are usage errors.
pub(crate) fn admin_error(e: AdminError) -> Error {
    match e {
        AdminError::Destination(DestinationError::Invalid(m)) => usage(m),
        e @ (AdminError::Missing(_) | AdminError::Exists(_)) => usage(e.to_string()),
        AdminError::Store(e) => Error::from(e),
        other => failed(other),
    }
}

/// The secret given by `--secret` or `INBOXCTL_SECRET` (checked), if any; and a warning when it
/// is going to be stored in plaintext (no `DESTINATION_SECRETS_KEY`).
fn given_secret(ctx: &Context, flag: &Option<String>) -> Result<Option<SecretText>> {
    if ctx
        .env()
        .optional(&inbox_core::config::catalog::DESTINATION_SECRETS_KEY)
        .is_none_or(|k| k.is_empty())
    {
        eprintln!(
            "warning: DESTINATION_SECRETS_KEY is not set: the signing secret is stored in \
             plaintext (set it to the stack's DestinationSecretsKeyArn output)"
        );
    }
    let given = secret_input::secrets_from(
        flag.as_slice(),
        ctx.env(),
        secret_input::Ask::Never,
        Vec::new,
    )?;
    given
        .first()
        .map(|s| SecretText::parse(s).map_err(|e| usage(e.to_string())))
        .transpose()
}

async fn add(ctx: &Context, args: DestAddArgs) -> Result<()> {
    let store = ctx.store().await?;
    let patterns = args
        .patterns
        .iter()
        .map(|p| Pattern::parse(p).map_err(|e| usage(e.to_string())))
        .collect::<Result<Vec<_>>>()?;
    let secret = given_secret(ctx, &args.secret)?;
    let generated = secret.is_none();
    let now = SystemClock.now_millis();
    let mut d = Destination::new(&args.id, &args.url, patterns, secret, now);
    d.rate_per_sec = args.rate;
    d.burst = args.burst;
    d.max_in_flight = args.max_in_flight;
    d.timeout_ms = args.timeout_ms;
    if let Some(s) = &args.schedule {
        d.schedule = RetrySchedule::parse(s).map_err(|e| usage(e.to_string()))?;
    }
    admin::add(&store, &d, &args.operator, args.allow_http)
        .await
        .map_err(admin_error)?;
    let secret = d.secrets[0].secret.expose();
    if ctx.json() {
        return print_json(&json!({
            "id": d.id, "url": d.url, "state": "active",
            "secret": if generated { Some(secret) } else { None },
        }));
    }
    say(format!(
        "destination {} added: {} for {}",
        d.id,
        d.url,
        patterns_text(&d)
    ))?;
    if generated {
        say(format!(
            "signing secret (shown once; give it to the receiver): {secret}"
        ))?;
    }
    Ok(())
}

pub(crate) fn patterns_text(d: &Destination) -> String {
    d.patterns
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn state_text(d: &Destination) -> String {
    match &d.reason {
        Some(r) if d.state != DestinationState::Active => format!("{} ({r})", d.state.as_str()),
        _ => d.state.as_str().to_owned(),
    }
}

async fn list(ctx: &Context) -> Result<()> {
    let store = ctx.store().await?;
    let destinations = admin::list(&store).await.map_err(admin_error)?;
    let now = SystemClock.now_millis();
    let cfg = BreakerConfig::default();
    let mut rows = Vec::new();
    for d in &destinations {
        let circuit = store.worker_state(&d.id).await?.circuit.state(&cfg, now);
        rows.push((d, circuit));
    }
    if ctx.json() {
        let out: Vec<_> = rows
            .iter()
            .map(|(d, c)| {
                json!({"id": d.id, "url": d.url, "state": d.state, "reason": d.reason,
                       "patterns": d.patterns, "rate_per_sec": d.rate_per_sec, "burst": d.burst,
                       "circuit": c, "version": d.version})
            })
            .collect();
        return print_json(&out);
    }
    if rows.is_empty() {
        return say(
            "no destinations (add one: inboxctl dest add ID --url https://… --pattern '*')",
        );
    }
    let mut t = table(["id", "state", "url", "patterns", "rate", "circuit"]);
    for (d, c) in rows {
        t.add_row(vec![
            d.id.to_string(),
            state_text(d),
            d.url.clone(),
            patterns_text(d),
            format!("{}/s burst {}", d.rate_per_sec, d.burst),
            c.as_str().to_owned(),
        ]);
    }
    say(t)
}

async fn show(ctx: &Context, args: DestIdArgs) -> Result<()> {
    let store = ctx.store().await?;
    let d = admin::get(&store, &args.id)
        .await
        .map_err(admin_error)?
        .ok_or_else(|| usage(format!("no destination {:?}", args.id.as_str())))?;
    let journal = admin::journal(&store, &args.id)
        .await
        .map_err(admin_error)?;
    let state = store.worker_state(&args.id).await?;
    let now = SystemClock.now_millis();
    let circuit = CircuitView::of(&state.circuit, &BreakerConfig::default(), now);
    let backlog = parking::backlog(&store, &args.id, 10_000).await?;
    let secrets: Vec<_> = d
        .secrets
        .iter()
        .map(|s| json!({"created_at": when::rfc3339(s.created_at), "expires_at": s.expires_at.map(when::rfc3339),
                        "active": s.expires_at.is_none_or(|e| e > now)}))
        .collect();
    if ctx.json() {
        return print_json(&json!({
            "id": d.id, "url": d.url, "state": d.state, "reason": d.reason, "patterns": d.patterns,
            "rate_per_sec": d.rate_per_sec, "burst": d.burst, "max_in_flight": d.max_in_flight,
            "timeout_ms": d.timeout_ms, "schedule": d.schedule.to_string(), "secrets": secrets,
            "circuit": circuit.state, "breaker": circuit.json(),
            "failing_since": state.circuit.failing_since.map(when::rfc3339),
            "backlog": backlog, "backlog_oldest": backlog.oldest.map(when::rfc3339),
            "version": d.version, "journal": journal,
        }));
    }
    say(fields([
        ("id", d.id.to_string()),
        ("url", d.url.clone()),
        ("state", state_text(&d)),
        ("patterns", patterns_text(&d)),
        (
            "rate",
            format!(
                "{}/s, burst {}, {} in flight per worker",
                d.rate_per_sec, d.burst, d.max_in_flight
            ),
        ),
        ("timeout", format!("{} ms", d.timeout_ms)),
        ("schedule", d.schedule.to_string()),
        ("circuit", circuit.text(&backlog)),
        (
            "secrets",
            format!(
                "{} ({} active)",
                d.secrets.len(),
                d.active_secrets(now).count()
            ),
        ),
        ("created", when::rfc3339(d.created_at)),
        ("updated", when::rfc3339(d.updated_at)),
    ]))?;
    let mut t = table(["at (UTC)", "who", "action", "detail"]);
    for e in &journal {
        t.add_row(vec![
            when::human(e.at),
            e.actor.clone(),
            e.action.clone(),
            or_dash(Some(&e.detail).filter(|d| !d.is_empty())),
        ]);
    }
    say(t)
}

/// One journaled change of a destination ([`admin::update`]).
async fn change(
    store: &DynamoTable,
    id: &DestinationId,
    operator: &str,
    action: &str,
    edit: impl FnOnce(&mut Destination) -> std::result::Result<String, DestinationError>,
) -> Result<Destination> {
    admin::update(store, id, operator, action, SystemClock.now_millis(), edit)
        .await
        .map_err(admin_error)
}

fn report(ctx: &Context, d: &Destination, what: &str) -> Result<()> {
    if ctx.json() {
        return print_json(
            &json!({"id": d.id, "state": d.state, "reason": d.reason, "version": d.version}),
        );
    }
    say(format!(
        "destination {} {what} (now {})",
        d.id,
        state_text(d)
    ))
}

async fn pause(ctx: &Context, args: DestReasonArgs) -> Result<()> {
    let store = ctx.store().await?;
    let d = pause_destination(&store, &args.id, &args.operator, args.reason.clone()).await?;
    report(ctx, &d, "paused: its deliveries wait")
}

/// Pauses a destination (journaled, naming `operator`; the reason defaults to "paused by …").
pub(crate) async fn pause_destination(
    store: &DynamoTable,
    id: &DestinationId,
    operator: &str,
    reason: Option<String>,
) -> Result<Destination> {
    let reason = reason.unwrap_or_else(|| format!("paused by {operator}"));
    change(store, id, operator, "paused", |d| {
        d.state = DestinationState::Paused;
        d.reason = Some(reason.clone());
        Ok(reason.clone())
    })
    .await
}

/// Resumes a destination (journaled) and releases its parked backlog at its rate, oldest first,
/// through the delivery queue when there is one (else the sweep picks them up): the destination
/// and how many were released.
pub(crate) async fn resume_destination(
    store: &DynamoTable,
    queue: Option<&SqsOutboxQueues>,
    id: &DestinationId,
    operator: &str,
) -> Result<(Destination, usize)> {
    let d = change(store, id, operator, "resumed", |d| {
        let was = format!("was {}", d.state.as_str());
        d.state = DestinationState::Active;
        d.reason = None;
        Ok(was)
    })
    .await?;
    let redriven = resend::resume(
        store,
        queue,
        &d.id,
        operator,
        SystemClock.now_millis(),
        resend::RESUME_DELAY,
    )
    .await?;
    Ok((d, redriven))
}

async fn resume(ctx: &Context, args: DestIdArgs) -> Result<()> {
    let store = ctx.store().await?;
    let queue = super::deliveries::queue(ctx).await;
    let (d, redriven) =
        resume_destination(&store, queue.as_ref(), &args.id, &args.operator).await?;
    let how = if queue.is_some() {
        "through the delivery queue"
    } else {
        "by the sweep (no --delivery-queue-url)"
    };
    report(
        ctx,
        &d,
        &format!(
            "resumed: {redriven} parked deliveries released at its rate {how}, the first in {} s",
            resend::RESUME_DELAY.as_secs()
        ),
    )
}

async fn rotate(ctx: &Context, args: DestRotateArgs) -> Result<()> {
    let keep = parse_duration(&args.keep_old_for).ok_or_else(|| {
        usage(format!(
            "--keep-old-for {:?}: a duration such as 30m, 24h, 7d",
            args.keep_old_for
        ))
    })?;
    let given = given_secret(ctx, &args.secret)?;
    let generated = given.is_none();
    let secret = given.unwrap_or_else(SecretText::generate);
    let shown = secret.expose().to_owned();
    let now = SystemClock.now_millis();
    let store = ctx.store().await?;
    let d = change(&store, &args.id, &args.operator, "secret-rotated", |d| {
        d.rotate(secret, keep, now);
        Ok(format!(
            "new secret; the previous ones sign until {}",
            when::rfc3339(now + keep.as_millis() as i64)
        ))
    })
    .await?;
    if ctx.json() {
        return print_json(
            &json!({"id": d.id, "secret": generated.then_some(shown), "active_secrets": d.active_secrets(now).count()}),
        );
    }
    say(format!("destination {}: new signing secret; every delivery is signed with each of its {} active secrets", d.id, d.active_secrets(now).count()))?;
    if generated {
        say(format!("new secret (shown once): {shown}"))?;
    }
    Ok(())
}

async fn remove(ctx: &Context, args: DestIdArgs) -> Result<()> {
    let (store, now) = (ctx.store().await?, SystemClock.now_millis());
    admin::remove(&store, store.table(), &args.id, &args.operator, now)
        .await
        .map_err(admin_error)?;
    let queue = super::deliveries::queue(ctx).await;
    let parked = parking::release_removed(&store, queue.as_ref(), &args.id, now).await?;
    if ctx.json() {
        return print_json(&json!({"id": args.id, "removed": true, "parked_released": parked}));
    }
    say(format!(
        "destination {} removed (its journal stays; pending deliveries to it fail, {parked} parked)",
        args.id
    ))
}
