//! SNS's sample events for `inboxctl send`: an unsigned `Notification` of the source's topic whose
//! `Message` is an SES event.

use std::sync::Arc;

use serde_json::json;

use super::message::sns_timestamp;
use super::Settings;
use crate::signature::sample::random_alnum;
use crate::signature::settings::settings;
use crate::signature::stamp::{random_uuid, rfc3339};
use crate::signature::{Sample, Sampler, SchemeError, Spec};

/// SNS's sample events (SES events of the source's topic), for `inboxctl send`.
#[derive(Debug)]
pub(in crate::signature) struct Samples {
    pub(super) topic_arn: String,
}

/// The samples of a source: its `topic_arn` (checked when its scheme is built).
pub(in crate::signature) fn samples(spec: &Spec<'_>) -> Result<Arc<dyn Sampler>, SchemeError> {
    let Settings { topic_arn } = settings(spec)?;
    Ok(Arc::new(Samples {
        topic_arn: topic_arn.unwrap_or_default(),
    }))
}

impl Sampler for Samples {
    fn sample_id(&self) -> String {
        random_uuid()
    }

    fn sample_type(&self) -> &'static str {
        "Delivery"
    }

    /// An unsigned SNS `Notification` whose `Message` is an SES event (event publishing).
    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        let ses = json!({
            "eventType": event_type,
            "mail": {
                "timestamp": rfc3339(now_secs),
                "source": "billing@example.com",
                "messageId": format!("0100{}-{}-000000", random_alnum(12).to_ascii_lowercase(), random_uuid()),
                "destination": ["customer@example.com"],
                "tags": {"tenant": ["acme"]}
            },
            "delivery": {
                "timestamp": rfc3339(now_secs),
                "recipients": ["customer@example.com"],
                "smtpResponse": "250 2.6.0 Message received"
            }
        });
        let envelope = json!({
            "Type": "Notification",
            "MessageId": event_id,
            "TopicArn": self.topic_arn,
            "Message": ses.to_string(),
            "Timestamp": sns_timestamp(now_secs),
        });
        Sample {
            body: envelope.to_string().into_bytes(),
            content_type: "text/plain; charset=UTF-8",
        }
    }
}
