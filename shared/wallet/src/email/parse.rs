//! The mailer's own delivery events (`message.sent`, `message.accepted`, `message.bounced`,
//! `message.deferred`, `message.complained`), and the [`EmailNotice`] every email provider's
//! event becomes ([`crate::email::providers`]).

use crate::balance::rules::{Bounce, EmailEvent};
use crate::parse::{tenant_of, text, unusable, Unusable};
use crate::tenant::TenantId;
use serde_json::Value;

/// An email delivery event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailNotice {
    pub tenant: TenantId,
    pub message_id: String,
    pub event: EmailEvent,
}

/// Parses an email delivery event (`message.sent`, `message.accepted`, `message.bounced`,
/// `message.deferred`, `message.complained`); `Ok(None)` for other types.
pub fn email(event_type: &str, body: &Value) -> Result<Option<EmailNotice>, Unusable> {
    let event = match event_type {
        "message.sent" => EmailEvent::Sent,
        "message.accepted" => EmailEvent::Accepted,
        "message.deferred" => EmailEvent::Deferred,
        "message.complained" => EmailEvent::Complained,
        "message.bounced" => {
            let kind = text(&body["data"]["bounce_type"]).map(|k| k.to_ascii_lowercase());
            match kind.as_deref() {
                Some("hard" | "permanent") => EmailEvent::Bounced(Bounce::Hard),
                Some("soft" | "transient") => EmailEvent::Bounced(Bounce::Soft),
                Some(other) => {
                    return Err(unusable(format!(
                        "data.bounce_type {other:?} is neither hard nor soft"
                    )))
                }
                None => return Err(unusable("data.bounce_type is missing")),
            }
        }
        _ => return Ok(None),
    };
    let data = &body["data"];
    let message_id =
        text(&data["message_id"]).ok_or_else(|| unusable("data.message_id is missing"))?;
    let tenant = text(&data["tenant"])
        .or_else(|| text(&data["metadata"]["tenant"]))
        .ok_or_else(|| unusable("data.tenant is missing"))?;
    let tenant = tenant_of(&tenant, "data.tenant")?;
    Ok(Some(EmailNotice {
        tenant,
        message_id,
        event,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn email_events() {
        let e = |t, data| email(t, &json!({"type": t, "data": data}));
        let base = json!({"message_id": "m1", "tenant": "acme"});
        assert_eq!(
            e("message.sent", base.clone()).unwrap().unwrap().event,
            EmailEvent::Sent
        );
        assert_eq!(
            e("message.accepted", base.clone()).unwrap().unwrap().event,
            EmailEvent::Accepted
        );
        assert_eq!(
            e("message.deferred", base.clone()).unwrap().unwrap().event,
            EmailEvent::Deferred
        );
        assert_eq!(
            e("message.complained", base.clone())
                .unwrap()
                .unwrap()
                .event,
            EmailEvent::Complained
        );
        let hard =
            json!({"message_id": "m1", "metadata": {"tenant": "acme"}, "bounce_type": "Hard"});
        assert_eq!(
            e("message.bounced", hard).unwrap().unwrap(),
            EmailNotice {
                tenant: TenantId::parse("acme").unwrap(),
                message_id: "m1".into(),
                event: EmailEvent::Bounced(Bounce::Hard)
            }
        );
        let soft = json!({"message_id": "m1", "tenant": "acme", "bounce_type": "soft"});
        assert_eq!(
            e("message.bounced", soft).unwrap().unwrap().event,
            EmailEvent::Bounced(Bounce::Soft)
        );
        assert!(
            e("message.bounced", base.clone()).is_err(),
            "a bounce must say which kind"
        );
        assert!(e("message.sent", json!({"tenant": "acme"}))
            .unwrap_err()
            .0
            .contains("message_id"));
        assert!(e("message.sent", json!({"message_id": "m1"}))
            .unwrap_err()
            .0
            .contains("tenant"));
        assert_eq!(e("message.opened", base), Ok(None));
    }
}
