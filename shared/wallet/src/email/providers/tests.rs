//! Each provider's events as its documentation shows them (fields the wallet does not read kept,
//! to show they are ignored), mapped onto the wallet's events; and [`sample`], the minimal event of
//! each provider for a kind, used by the property tests in `crate::tests`.

use super::*;
use serde_json::json;

/// A minimal event of `provider` meaning `kind` (`sent`, `accepted`, `hard`, `soft`, `deferred`,
/// `complained`) for `message_id` of `tenant`: its type as the source's rule reads it, and its
/// body. `None`: the provider has no such event (Postmark reports nothing before delivery).
pub(crate) fn sample(
    provider: EmailProvider,
    kind: &str,
    message_id: &str,
    tenant: &str,
) -> Option<(String, Value)> {
    let (t, body) = match provider {
        EmailProvider::Mailer => {
            let (t, extra) = match kind {
                "sent" => ("message.sent", json!({})),
                "accepted" => ("message.accepted", json!({})),
                "hard" => ("message.bounced", json!({"bounce_type": "hard"})),
                "soft" => ("message.bounced", json!({"bounce_type": "soft"})),
                "deferred" => ("message.deferred", json!({})),
                _ => ("message.complained", json!({})),
            };
            let mut data = json!({"message_id": message_id, "tenant": tenant});
            data.as_object_mut()?.extend(extra.as_object()?.clone());
            (t.to_owned(), json!({"type": t, "data": data}))
        }
        EmailProvider::Ses => {
            let (t, detail) = match kind {
                "sent" => ("Send", json!({"send": {}})),
                "accepted" => (
                    "Delivery",
                    json!({"delivery": {"recipients": ["c@example.com"]}}),
                ),
                "hard" => (
                    "Bounce",
                    json!({"bounce": {"bounceType": "Permanent", "bounceSubType": "General"}}),
                ),
                "soft" => (
                    "Bounce",
                    json!({"bounce": {"bounceType": "Transient", "bounceSubType": "MailboxFull"}}),
                ),
                "deferred" => (
                    "DeliveryDelay",
                    json!({"deliveryDelay": {"delayType": "MailboxFull"}}),
                ),
                _ => (
                    "Complaint",
                    json!({"complaint": {"complainedRecipients": []}}),
                ),
            };
            let mut ses = json!({"eventType": t, "mail": {"messageId": message_id, "tags": {"tenant": [tenant]}}});
            ses.as_object_mut()?.extend(detail.as_object()?.clone());
            let envelope =
                json!({"Type": "Notification", "MessageId": "n-1", "Message": ses.to_string()});
            (t.to_owned(), envelope)
        }
        EmailProvider::Sendgrid => {
            let (t, extra) = match kind {
                "sent" => ("processed", json!({})),
                "accepted" => ("delivered", json!({"response": "250 OK"})),
                "hard" => ("bounce", json!({"type": "bounce"})),
                "soft" => ("bounce", json!({"type": "blocked"})),
                "deferred" => ("deferred", json!({"attempt": "1"})),
                _ => ("spamreport", json!({})),
            };
            let mut e = json!({"event": t, "sg_event_id": "e", "tenant": tenant,
                "sg_message_id": format!("{message_id}.filterdrecv-p3mdw1-1.12345.0")});
            e.as_object_mut()?.extend(extra.as_object()?.clone());
            (t.to_owned(), e)
        }
        EmailProvider::Mailgun => {
            let (t, extra) = match kind {
                "sent" => ("accepted", json!({})),
                "accepted" => ("delivered", json!({})),
                "hard" => ("failed", json!({"severity": "permanent"})),
                "soft" | "deferred" => ("failed", json!({"severity": "temporary"})),
                _ => ("complained", json!({})),
            };
            let mut data = json!({"event": t, "user-variables": {"tenant": tenant},
                "message": {"headers": {"message-id": message_id}}});
            data.as_object_mut()?.extend(extra.as_object()?.clone());
            (t.to_owned(), json!({"signature": {}, "event-data": data}))
        }
        EmailProvider::Postmark => {
            let (t, extra) = match kind {
                "sent" => return None,
                "accepted" => ("Delivery", json!({})),
                "hard" => ("Bounce", json!({"Type": "HardBounce"})),
                "soft" => ("Bounce", json!({"Type": "SoftBounce"})),
                "deferred" => ("Bounce", json!({"Type": "Transient"})),
                _ => ("SpamComplaint", json!({"Type": "SpamComplaint"})),
            };
            let mut r =
                json!({"RecordType": t, "MessageID": message_id, "Metadata": {"tenant": tenant}});
            r.as_object_mut()?.extend(extra.as_object()?.clone());
            (t.to_owned(), r)
        }
        EmailProvider::Resend => {
            let (t, extra) = match kind {
                "sent" => ("email.sent", json!({})),
                "accepted" => ("email.delivered", json!({})),
                "hard" => ("email.bounced", json!({"bounce": {"type": "Permanent"}})),
                "soft" => ("email.bounced", json!({"bounce": {"type": "Transient"}})),
                "deferred" => ("email.delivery_delayed", json!({})),
                _ => ("email.complained", json!({})),
            };
            let mut data = json!({"email_id": message_id, "tags": {"tenant": tenant}});
            data.as_object_mut()?.extend(extra.as_object()?.clone());
            (t.to_owned(), json!({"type": t, "data": data}))
        }
    };
    Some((t, body))
}

fn event_of(
    provider: EmailProvider,
    t: &str,
    body: &Value,
) -> Option<(String, String, EmailEvent)> {
    provider
        .notice(t, body)
        .unwrap()
        .map(|n| (n.tenant.to_string(), n.message_id, n.event))
}

#[test]
fn every_provider_maps_every_kind_as_the_readme_table_says() {
    use EmailEvent::*;
    let expected = [
        ("sent", Some(Sent)),
        ("accepted", Some(Accepted)),
        ("hard", Some(Bounced(Bounce::Hard))),
        ("soft", Some(Bounced(Bounce::Soft))),
        ("deferred", Some(Deferred)),
        ("complained", Some(Complained)),
    ];
    for provider in EmailProvider::ALL {
        for (kind, event) in expected {
            let Some((t, body)) = sample(provider, kind, "m-1", "acme") else {
                assert_eq!((provider, kind), (EmailProvider::Postmark, "sent"));
                continue;
            };
            let mapped = event_of(provider, &t, &body);
            let want = match (provider, kind) {
                // Postmark's transient bounce and Mailgun's temporary failure are soft bounces.
                (EmailProvider::Postmark | EmailProvider::Mailgun, "deferred") => {
                    Some(Bounced(Bounce::Soft))
                }
                _ => event,
            };
            assert_eq!(
                mapped,
                want.map(|e| ("acme".to_owned(), "m-1".to_owned(), e)),
                "{provider:?} {kind}"
            );
        }
        assert_eq!(
            EmailProvider::parse(&provider.as_str().to_uppercase()),
            Some(provider)
        );
    }
    assert_eq!(EmailProvider::parse("sparkpost"), None);
}

#[test]
fn ses_event_publishing_and_notifications_as_documented() {
    // The SES developer guide's bounce event (event publishing), abridged.
    let bounce = json!({
        "eventType": "Bounce",
        "bounce": {"bounceType": "Permanent", "bounceSubType": "General",
            "bouncedRecipients": [{"emailAddress": "recipient@example.com", "action": "failed",
                "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1 user unknown"}],
            "timestamp": "2017-08-05T00:41:02.669Z", "feedbackId": "01000157c44f053b"},
        "mail": {"timestamp": "2017-08-05T00:40:02.012Z", "source": "Sender Name <sender@example.com>",
            "sendingAccountId": "123456789012",
            "messageId": "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000000",
            "destination": ["recipient@example.com"],
            "tags": {"ses:configuration-set": ["ConfigSet"], "tenant": ["acme"]}}
    });
    let envelope =
        |ses: &Value| json!({"Type": "Notification", "MessageId": "x", "Message": ses.to_string()});
    assert_eq!(
        event_of(EmailProvider::Ses, "Bounce", &envelope(&bounce)),
        Some((
            "acme".into(),
            "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000000".into(),
            EmailEvent::Bounced(Bounce::Hard)
        ))
    );
    // A notification (notificationType) reads the same; an undetermined bounce is soft.
    let mut note = bounce.clone();
    note.as_object_mut().unwrap().remove("eventType");
    note["notificationType"] = json!("Bounce");
    note["bounce"]["bounceType"] = json!("Undetermined");
    assert_eq!(
        event_of(EmailProvider::Ses, "Bounce", &envelope(&note)).map(|e| e.2),
        Some(EmailEvent::Bounced(Bounce::Soft))
    );
    // SES refused the message (a virus): never sent, like a hard bounce.
    let reject =
        json!({"eventType": "Reject", "reject": {"reason": "Bad content"}, "mail": bounce["mail"]});
    assert_eq!(
        event_of(EmailProvider::Ses, "Reject", &envelope(&reject)).map(|e| e.2),
        Some(EmailEvent::Bounced(Bounce::Hard))
    );
    // Opens, SNS's own text notification, a confirmation: not the wallet's.
    let open = json!({"eventType": "Open", "mail": bounce["mail"]});
    assert_eq!(
        EmailProvider::Ses.notice("Open", &envelope(&open)),
        Ok(None)
    );
    let text = json!({"Type": "Notification", "Message": "Successfully validated SNS topic for Amazon SES event publishing."});
    assert_eq!(EmailProvider::Ses.notice("Notification", &text), Ok(None));
    // A bounce without its type, an email without the tenant tag: refused with the reason.
    let mut untyped = bounce.clone();
    untyped["bounce"]
        .as_object_mut()
        .unwrap()
        .remove("bounceType");
    assert!(EmailProvider::Ses
        .notice("Bounce", &envelope(&untyped))
        .unwrap_err()
        .0
        .contains("bounceType"));
    let mut untagged = bounce;
    untagged["mail"]["tags"] = json!({});
    assert_eq!(
        EmailProvider::Ses
            .notice("Bounce", &envelope(&untagged))
            .unwrap_err()
            .0,
        "Message.mail.tags.tenant is missing"
    );
}

#[test]
fn sendgrid_events_as_documented() {
    // SendGrid's Event Webhook reference (each event is one element of the posted array).
    let bounce = json!({"email": "example@test.com", "timestamp": 1513299569,
        "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>", "event": "bounce", "category": "cat facts",
        "sg_event_id": "6g4ZI7SA-xmRDv57GoPIPw==",
        "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
        "reason": "500 unknown recipient", "status": "5.0.0", "type": "bounce", "tenant": "acme"});
    assert_eq!(
        event_of(EmailProvider::Sendgrid, "bounce", &bounce),
        Some(("acme".into(), "14c5d75ce93".into(), EmailEvent::Bounced(Bounce::Hard))),
        "the message id is the X-Message-Id the send API answered: sg_message_id before its first dot"
    );
    let mut blocked = bounce.clone();
    blocked["type"] = json!("blocked");
    assert_eq!(
        event_of(EmailProvider::Sendgrid, "bounce", &blocked).map(|e| e.2),
        Some(EmailEvent::Bounced(Bounce::Soft))
    );
    let mut dropped = bounce.clone();
    dropped["event"] = json!("dropped");
    dropped["reason"] = json!("Bounced Address");
    assert_eq!(
        event_of(EmailProvider::Sendgrid, "dropped", &dropped).map(|e| e.2),
        Some(EmailEvent::Bounced(Bounce::Hard))
    );
    // An explicit `message_id` custom arg wins.
    let mut tagged = bounce.clone();
    tagged["message_id"] = json!("mine-1");
    assert_eq!(
        event_of(EmailProvider::Sendgrid, "bounce", &tagged)
            .unwrap()
            .1,
        "mine-1"
    );
    assert_eq!(EmailProvider::Sendgrid.notice("open", &bounce), Ok(None));
    let mut anonymous = bounce;
    anonymous.as_object_mut().unwrap().remove("tenant");
    assert_eq!(
        EmailProvider::Sendgrid
            .notice("bounce", &anonymous)
            .unwrap_err()
            .0,
        "tenant (a custom arg) is missing"
    );
}

#[test]
fn mailgun_events_as_documented() {
    // Mailgun's `failed` webhook sample, abridged.
    let failed = json!({
        "signature": {"timestamp": "1529006854", "token": "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0", "signature": "d2271d12299f6592d9d44cd9d250f0704e4674c30d79d07c47a66f95ce71cf55"},
        "event-data": {"event": "failed", "id": "G9Bn5sl1TC6nu79C8C0bwg", "timestamp": 1521233195.375624,
            "log-level": "error", "severity": "permanent", "reason": "suppress-bounce",
            "recipient": "alice@example.com",
            "message": {"headers": {"to": "Alice <alice@example.com>",
                "message-id": "20130503192659.13651.20287@sandbox.mailgun.org", "from": "Bob <bob@sandbox.mailgun.org>"}},
            "user-variables": {"tenant": "acme", "my_var_2": "awesome"},
            "delivery-status": {"code": 605, "message": "", "description": "Not delivering to previously bounced address"}}
    });
    assert_eq!(
        event_of(EmailProvider::Mailgun, "failed", &failed),
        Some((
            "acme".into(),
            "20130503192659.13651.20287@sandbox.mailgun.org".into(),
            EmailEvent::Bounced(Bounce::Hard)
        ))
    );
    let mut temporary = failed.clone();
    temporary["event-data"]["severity"] = json!("temporary");
    assert_eq!(
        event_of(EmailProvider::Mailgun, "failed", &temporary).map(|e| e.2),
        Some(EmailEvent::Bounced(Bounce::Soft))
    );
    let mut unknown = failed.clone();
    unknown["event-data"]["severity"] = json!("maybe");
    assert!(EmailProvider::Mailgun.notice("failed", &unknown).is_err());
    assert_eq!(EmailProvider::Mailgun.notice("opened", &failed), Ok(None));
}

#[test]
fn postmark_records_as_documented() {
    // Postmark's bounce webhook example, abridged.
    let bounce = json!({"RecordType": "Bounce", "ID": 4323372036854775807_i64, "Type": "HardBounce",
        "TypeCode": 1, "Name": "Hard bounce", "Tag": "Invitation",
        "MessageID": "883953f4-6105-42a2-a16a-77a8eac79483", "Metadata": {"tenant": "acme", "b": "c"},
        "ServerID": 23, "MessageStream": "outbound", "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
        "Email": "john@example.com", "From": "sender@example.com", "BouncedAt": "2019-11-05T16:33:54.9070259Z",
        "Inactive": true, "CanActivate": true, "Subject": "Test subject"});
    assert_eq!(
        event_of(EmailProvider::Postmark, "Bounce", &bounce),
        Some((
            "acme".into(),
            "883953f4-6105-42a2-a16a-77a8eac79483".into(),
            EmailEvent::Bounced(Bounce::Hard)
        ))
    );
    for (kind, how) in [
        ("SoftBounce", Bounce::Soft),
        ("Transient", Bounce::Soft),
        ("Blocked", Bounce::Soft),
        ("BadEmailAddress", Bounce::Hard),
        ("DMARCPolicy", Bounce::Hard),
    ] {
        let mut b = bounce.clone();
        b["Type"] = json!(kind);
        assert_eq!(
            event_of(EmailProvider::Postmark, "Bounce", &b).map(|e| e.2),
            Some(EmailEvent::Bounced(how)),
            "{kind}"
        );
    }
    let delivery = json!({"RecordType": "Delivery", "ServerID": 23, "MessageStream": "outbound",
        "MessageID": "00000000-0000-0000-0000-000000000000", "Recipient": "john@example.com",
        "Tag": "welcome-email", "DeliveredAt": "2019-11-05T16:33:54Z", "Details": "Test delivery webhook details",
        "Metadata": {"tenant": "acme"}});
    assert_eq!(
        event_of(EmailProvider::Postmark, "Delivery", &delivery).map(|e| e.2),
        Some(EmailEvent::Accepted)
    );
    assert_eq!(EmailProvider::Postmark.notice("Open", &delivery), Ok(None));
}

#[test]
fn resend_events_as_documented() {
    // Resend's `email.bounced` example.
    let bounced = json!({"type": "email.bounced", "created_at": "2024-11-22T23:41:12.126Z",
        "data": {"created_at": "2024-11-22T23:41:11.894719+00:00",
            "email_id": "56761188-7520-42d8-8898-ff6fc54ce618", "from": "Acme <onboarding@resend.dev>",
            "to": ["delivered@resend.dev"], "subject": "Sending this example",
            "bounce": {"message": "The recipient's email address is on the suppression list because it has a recent history of producing hard bounces.",
                "subType": "Suppressed", "type": "Permanent"},
            "tags": {"tenant": "acme"}}});
    assert_eq!(
        event_of(EmailProvider::Resend, "email.bounced", &bounced),
        Some((
            "acme".into(),
            "56761188-7520-42d8-8898-ff6fc54ce618".into(),
            EmailEvent::Bounced(Bounce::Hard)
        ))
    );
    // Tags as the send API takes them (a list of name/value pairs).
    let mut listed = bounced.clone();
    listed["data"]["tags"] =
        json!([{"name": "category", "value": "x"}, {"name": "tenant", "value": "beta"}]);
    assert_eq!(
        event_of(EmailProvider::Resend, "email.bounced", &listed)
            .unwrap()
            .0,
        "beta"
    );
    let mut transient = bounced.clone();
    transient["data"]["bounce"]["type"] = json!("Transient");
    assert_eq!(
        event_of(EmailProvider::Resend, "email.bounced", &transient).map(|e| e.2),
        Some(EmailEvent::Bounced(Bounce::Soft))
    );
    assert_eq!(
        EmailProvider::Resend.notice("email.opened", &bounced),
        Ok(None)
    );
    let mut untagged = bounced;
    untagged["data"]["tags"] = json!({});
    assert_eq!(
        EmailProvider::Resend
            .notice("email.bounced", &untagged)
            .unwrap_err()
            .0,
        "data.tags.tenant is missing"
    );
}
