//! The email providers' delivery events, mapped onto the wallet's [`EmailEvent`]s: which source
//! carries which provider's events is configuration (`WALLET_MAILER_SOURCE`,
//! `WALLET_EMAIL_SOURCES`: [`crate::config`]); each [`EmailProvider`] knows its event names, where
//! the provider puts the tenant (the metadata the sender attached to the email) and the message
//! id (what the provider's send API answered: one price per sent message).
//!
//! | provider | sent (hold) | delivered (debit) | hard bounce (release / refund) | nothing | tenant | message id |
//! |---|---|---|---|---|---|---|
//! | `mailer` | `message.sent` | `message.accepted` | `message.bounced`, `bounce_type` hard | soft bounce, `message.deferred`, `message.complained` | `data.tenant` (or `data.metadata.tenant`) | `data.message_id` |
//! | `ses` (through SNS) | `Send` | `Delivery` | `Bounce` `Permanent`; `Reject` | `Bounce` `Transient`/`Undetermined`, `DeliveryDelay`, `Complaint` | `mail.tags.tenant[0]` | `mail.messageId` |
//! | `sendgrid` | `processed` | `delivered` | `bounce` (`type` `bounce` or absent); `dropped` | `bounce` `blocked`, `deferred`, `spamreport` | custom arg `tenant` | custom arg `message_id`, else `sg_message_id` up to its first `.` |
//! | `mailgun` | `accepted` | `delivered` | `failed` `permanent`; `rejected` | `failed` `temporary`, `complained` | `user-variables.tenant` | `message.headers.message-id` |
//! | `postmark` | — | `Delivery` | `Bounce` `HardBounce`, `BadEmailAddress`, `ManuallyDeactivated`, `DMARCPolicy`, `TemplateRenderingFailed` | any other `Bounce` type, `SpamComplaint` | `Metadata.tenant` | `MessageID` |
//! | `resend` | `email.sent` | `email.delivered` | `email.bounced` (unless `bounce.type` is `Transient`/`Undetermined`); `email.failed` | those bounces, `email.delivery_delayed`, `email.complained` | tag `tenant` | `data.email_id` |
//!
//! Other events (opens, clicks, unsubscribes, …) are not the wallet's: `Ok(None)`. An event the
//! wallet handles but cannot read (no tenant, no message id, a bounce without its kind) is
//! [`Unusable`]: it fails permanently with the reason.

use serde_json::Value;

use crate::balance::rules::{Bounce, EmailEvent};
use crate::email::parse::{self as mailer, EmailNotice};
use crate::parse::{self, text, Unusable};

/// The format of a source's email delivery events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmailProvider {
    /// This product's own mailer format (Standard Webhooks, `message.*` events).
    Mailer,
    /// Amazon SES event publishing (or notifications) through SNS.
    Ses,
    Sendgrid,
    Mailgun,
    Postmark,
    Resend,
}

impl EmailProvider {
    /// Every provider, in the order of the providers table in `docs/wallet.md`.
    pub const ALL: [Self; 6] = [
        Self::Mailer,
        Self::Ses,
        Self::Sendgrid,
        Self::Mailgun,
        Self::Postmark,
        Self::Resend,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mailer => "mailer",
            Self::Ses => "ses",
            Self::Sendgrid => "sendgrid",
            Self::Mailgun => "mailgun",
            Self::Postmark => "postmark",
            Self::Resend => "resend",
        }
    }

    /// The provider called `name` (as in `WALLET_EMAIL_SOURCES`, any case).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(name.trim()))
    }

    /// What an event of this provider means for the wallet; `Ok(None)` for events that are not
    /// the wallet's business. `event_type` is the stored message's type (the source's rule).
    pub fn notice(self, event_type: &str, body: &Value) -> Result<Option<EmailNotice>, Unusable> {
        match self {
            Self::Mailer => mailer::email(event_type, body),
            Self::Ses => ses(body),
            Self::Sendgrid => sendgrid(event_type, body),
            Self::Mailgun => mailgun(event_type, body),
            Self::Postmark => postmark(event_type, body),
            Self::Resend => resend(event_type, body),
        }
    }
}

fn unusable(s: impl Into<String>) -> Unusable {
    Unusable(s.into())
}

/// The notice, once the event is known to be the wallet's: the tenant and message id read.
fn notice(
    event: EmailEvent,
    tenant: Option<String>,
    tenant_at: &str,
    message_id: Option<String>,
    message_id_at: &str,
) -> Result<Option<EmailNotice>, Unusable> {
    let message_id = message_id.ok_or_else(|| unusable(format!("{message_id_at} is missing")))?;
    let tenant = tenant.ok_or_else(|| unusable(format!("{tenant_at} is missing")))?;
    let tenant = parse::tenant_of(&tenant, tenant_at)?;
    Ok(Some(EmailNotice {
        tenant,
        message_id,
        event,
    }))
}

/// SES: the SNS envelope's `Message` is the SES event (`eventType` for event publishing,
/// `notificationType` for notifications).
fn ses(envelope: &Value) -> Result<Option<EmailNotice>, Unusable> {
    let Some(message) = envelope["Message"].as_str() else {
        return Ok(None);
    };
    let Ok(ses) = serde_json::from_str::<Value>(message) else {
        return Ok(None);
    };
    let kind = text(&ses["eventType"]).or_else(|| text(&ses["notificationType"]));
    let event = match kind.as_deref() {
        Some("Send") => EmailEvent::Sent,
        Some("Delivery") => EmailEvent::Accepted,
        Some("Reject") => EmailEvent::Bounced(Bounce::Hard),
        Some("Bounce") => match text(&ses["bounce"]["bounceType"]).as_deref() {
            Some("Permanent") => EmailEvent::Bounced(Bounce::Hard),
            Some("Transient" | "Undetermined") => EmailEvent::Bounced(Bounce::Soft),
            Some(other) => {
                return Err(unusable(format!(
                "Message.bounce.bounceType {other:?} is none of Permanent, Transient, Undetermined"
            )))
            }
            None => return Err(unusable("Message.bounce.bounceType is missing")),
        },
        Some("DeliveryDelay") => EmailEvent::Deferred,
        Some("Complaint") => EmailEvent::Complained,
        _ => return Ok(None),
    };
    let mail = &ses["mail"];
    notice(
        event,
        text(&mail["tags"]["tenant"][0]).or_else(|| text(&mail["tags"]["tenant"])),
        "Message.mail.tags.tenant",
        text(&mail["messageId"]),
        "Message.mail.messageId",
    )
}

/// SendGrid: one event of a batch (ingest splits batches); custom args are top-level members.
fn sendgrid(event_type: &str, e: &Value) -> Result<Option<EmailNotice>, Unusable> {
    let event = match event_type {
        "processed" => EmailEvent::Sent,
        "delivered" => EmailEvent::Accepted,
        "dropped" => EmailEvent::Bounced(Bounce::Hard),
        "bounce" => match text(&e["type"]).as_deref() {
            None | Some("bounce") => EmailEvent::Bounced(Bounce::Hard),
            Some("blocked") => EmailEvent::Bounced(Bounce::Soft),
            Some(other) => {
                return Err(unusable(format!(
                    "type {other:?} of a bounce is neither bounce nor blocked"
                )))
            }
        },
        "deferred" => EmailEvent::Deferred,
        "spamreport" => EmailEvent::Complained,
        _ => return Ok(None),
    };
    let sent_id = text(&e["sg_message_id"])
        .and_then(|id| id.split('.').next().map(str::to_owned))
        .filter(|id| !id.is_empty());
    notice(
        event,
        text(&e["tenant"]),
        "tenant (a custom arg)",
        text(&e["message_id"]).or(sent_id),
        "sg_message_id",
    )
}

/// Mailgun: `event-data` beside the signature.
fn mailgun(event_type: &str, body: &Value) -> Result<Option<EmailNotice>, Unusable> {
    let data = &body["event-data"];
    let event = match event_type {
        "accepted" => EmailEvent::Sent,
        "delivered" => EmailEvent::Accepted,
        "rejected" => EmailEvent::Bounced(Bounce::Hard),
        "failed" => match text(&data["severity"]).as_deref() {
            Some("permanent") => EmailEvent::Bounced(Bounce::Hard),
            Some("temporary") => EmailEvent::Bounced(Bounce::Soft),
            Some(other) => {
                return Err(unusable(format!(
                    "event-data.severity {other:?} is neither permanent nor temporary"
                )))
            }
            None => return Err(unusable("event-data.severity is missing")),
        },
        "complained" => EmailEvent::Complained,
        _ => return Ok(None),
    };
    notice(
        event,
        text(&data["user-variables"]["tenant"]),
        "event-data.user-variables.tenant",
        text(&data["message"]["headers"]["message-id"]),
        "event-data.message.headers.message-id",
    )
}

/// The Postmark bounce types after which the message will never be delivered.
const POSTMARK_HARD: [&str; 5] = [
    "HardBounce",
    "BadEmailAddress",
    "ManuallyDeactivated",
    "DMARCPolicy",
    "TemplateRenderingFailed",
];

/// Postmark: one record per post; no event before delivery.
fn postmark(event_type: &str, r: &Value) -> Result<Option<EmailNotice>, Unusable> {
    let event = match event_type {
        "Delivery" => EmailEvent::Accepted,
        "Bounce" => {
            let kind = text(&r["Type"]).ok_or_else(|| unusable("Type of a bounce is missing"))?;
            EmailEvent::Bounced(if POSTMARK_HARD.contains(&kind.as_str()) {
                Bounce::Hard
            } else {
                Bounce::Soft
            })
        }
        "SpamComplaint" => EmailEvent::Complained,
        _ => return Ok(None),
    };
    notice(
        event,
        text(&r["Metadata"]["tenant"]),
        "Metadata.tenant",
        text(&r["MessageID"]),
        "MessageID",
    )
}

/// Resend: `data` with the email's id and tags (an object, or a list of `{name, value}`).
fn resend(event_type: &str, body: &Value) -> Result<Option<EmailNotice>, Unusable> {
    let data = &body["data"];
    let event = match event_type {
        "email.sent" => EmailEvent::Sent,
        "email.delivered" => EmailEvent::Accepted,
        "email.failed" => EmailEvent::Bounced(Bounce::Hard),
        "email.bounced" => EmailEvent::Bounced(match text(&data["bounce"]["type"]).as_deref() {
            Some("Transient" | "Undetermined") => Bounce::Soft,
            _ => Bounce::Hard,
        }),
        "email.delivery_delayed" => EmailEvent::Deferred,
        "email.complained" => EmailEvent::Complained,
        _ => return Ok(None),
    };
    let tags = &data["tags"];
    let tenant = text(&tags["tenant"]).or_else(|| {
        tags.as_array()?
            .iter()
            .find(|t| t["name"] == "tenant")
            .and_then(|t| text(&t["value"]))
    });
    notice(
        event,
        tenant,
        "data.tags.tenant",
        text(&data["email_id"]),
        "data.email_id",
    )
}

#[cfg(test)]
pub(crate) mod tests;
