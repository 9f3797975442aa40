//! Amazon SNS over HTTPS (Amazon SES event notifications are SNS messages): the signature is
//! inside the body (a JSON document sent as `text/plain`).
//!
//! **String to sign** (AWS's documented form): for a `Notification`, the lines `Message`, its
//! value, `MessageId`, its value, `Subject` and its value (only when present), `Timestamp`,
//! `TopicArn`, `Type`, each name and value followed by a newline; for a `SubscriptionConfirmation`
//! or `UnsubscribeConfirmation`: `Message`, `MessageId`, `SubscribeURL`, `Timestamp`, `Token`,
//! `TopicArn`, `Type`. Values are the JSON strings decoded. `Signature` is the base64 RSA
//! PKCS#1 v1.5 signature: `SignatureVersion` `1` = SHA1withRSA, `2` = SHA256withRSA.
//!
//! **The key** is the certificate at `SigningCertURL`, accepted only as
//! `https://sns.<region>.amazonaws.com/SimpleNotificationService-<hex>.pem` for the region of the
//! pinned topic (SNS's certificate names only: never another host or path, never plain HTTP),
//! fetched once (over TLS with the system's roots) and cached. A fetch that fails decides nothing
//! (`signing_key_unavailable`, 503: SNS retries), unless SNS answers it has no such certificate
//! (403/404/410: `signature_malformed`, 401, as no message SNS signed names it); either failure is
//! remembered for a minute, answered again without fetching (`sns/cert.rs`).
//!
//! **Order of checks**: the body's members (each required one present once, a string), `Type`,
//! `SignatureVersion`, `Signature` (base64), `Timestamp` (ISO 8601), `SigningCertURL` (the rule
//! above) and `TopicArn` (the source's `topic_arn`: a message of another topic is refused before
//! any fetch), then the signature, then the timestamp against the tolerance (SNS keeps a
//! message's `Timestamp` across retries: raise `tolerance_secs` above the topic's delivery
//! policy's retry span; the default policy retries within a minute).
//!
//! **Handshake**: a verified `SubscriptionConfirmation` is confirmed by visiting its
//! `SubscribeURL`, only SNS's confirmation URL of the pinned topic (`sns/subscribe.rs`), and
//! stored as nothing.
//!
//! Settings: `topic_arn` (required). Secrets: none in production (write `[]`); for `make dev`
//! and tests, a local signing identity (a PEM private key and its certificate), whose
//! certificate is trusted at the `SigningCertURL` its signatures name and never fetched.
//!
//! Event id: `/MessageId` (retries keep it). Type: the SES event's `eventType` inside `Message`,
//! else its `notificationType`, else the SNS `Type`. Sample: an SES `Delivery` notification.

mod cert;
mod message;
#[cfg(any(test, feature = "samples"))]
mod sample;
mod subscribe;

#[cfg(any(test, feature = "samples"))]
pub(super) use self::sample::samples;

use std::sync::Arc;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::RSA_PKCS1_SHA256;
use base64::Engine as _;
use http::HeaderName;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use self::cert::{allowed_cert_url, sns_host, Certificates, Identity};
use self::message::{
    malformed, parse_timestamp, sns_timestamp, string_to_sign, topic_partition_region, Envelope,
    Kind,
};
use super::fields::Fields;
use super::settings::settings;
use super::stamp::random_uuid;
use super::tolerance::Tolerance;
use super::{
    Fetcher, FromSpec, Handshake, HttpsFetcher, Request, Scheme, SchemeError, SignError,
    SignatureError, Signed, Spec, Unsigned, Verdict,
};
use crate::identity::FieldRule;

/// The largest signature decoded (RSA-4096 is 512 bytes).
const MAX_SIGNATURE_LEN: usize = 1024;

#[derive(Deserialize)]
struct Settings {
    topic_arn: Option<String>,
}

/// The SNS scheme of one source. `Debug` shows the number of local identities only.
pub(super) struct Sns {
    topic_arn: String,
    host: String,
    certificates: Certificates,
    /// Fetches certificates and visits confirmation URLs.
    fetcher: Arc<dyn Fetcher>,
    /// Local signing identities (the first signs).
    identities: Vec<Identity>,
    tolerance: Tolerance,
}

impl std::fmt::Debug for Sns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sns")
            .field("topic_arn", &self.topic_arn)
            .field("certificates", &self.certificates)
            .field(
                "identities",
                &format_args!("{} x <redacted>", self.identities.len()),
            )
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

impl Sns {
    /// Parses and checks everything but the signature itself and the tolerance.
    fn envelope(&self, body: &[u8]) -> Result<Envelope, SignatureError> {
        let fields = Fields::parse(body).ok_or(malformed(
            "Signature",
            "the body is not a JSON object, so it carries no signature",
        ))?;
        let kind = match fields.required("Type")?.as_str() {
            "Notification" => Kind::Notification,
            "SubscriptionConfirmation" => Kind::SubscriptionConfirmation,
            "UnsubscribeConfirmation" => Kind::UnsubscribeConfirmation,
            _ => return Err(malformed("Type", "not a message type SNS sends")),
        };
        let mut values: Vec<(&'static str, String)> = Vec::with_capacity(7);
        let required: &[&'static str] = match kind {
            Kind::Notification => &["Message", "MessageId", "Timestamp", "TopicArn"],
            _ => &[
                "Message",
                "MessageId",
                "SubscribeURL",
                "Timestamp",
                "Token",
                "TopicArn",
            ],
        };
        for name in required {
            values.push((name, fields.required(name)?));
        }
        if kind == Kind::Notification {
            if let Some(subject) = fields.string("Subject")? {
                values.push(("Subject", subject));
            }
        }
        values.push(("Type", fields.required("Type")?));
        let version = match fields.required("SignatureVersion")?.as_str() {
            "1" => 1,
            "2" => 2,
            _ => {
                return Err(malformed(
                    "SignatureVersion",
                    "neither 1 (SHA1withRSA) nor 2 (SHA256withRSA)",
                ))
            }
        };
        let signature = fields.required("Signature")?;
        let signature = base64::engine::general_purpose::STANDARD
            .decode(signature.as_bytes())
            .ok()
            .filter(|s| !s.is_empty() && s.len() <= MAX_SIGNATURE_LEN)
            .ok_or(malformed("Signature", "not base64 of an RSA signature"))?;
        let cert_url = fields.required("SigningCertURL")?;
        let get = |name: &'static str| {
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        let timestamp = get("Timestamp")
            .and_then(|t| parse_timestamp(&t))
            .ok_or(malformed("Timestamp", "not an ISO 8601 UTC time"))?;
        if !allowed_cert_url(&cert_url, &self.host) {
            return Err(malformed(
                "SigningCertURL",
                "not an HTTPS URL of SNS in the topic's region",
            ));
        }
        if get("TopicArn").as_deref() != Some(self.topic_arn.as_str()) {
            return Err(malformed("TopicArn", "not the topic this source accepts"));
        }
        Ok(Envelope {
            string_to_sign: string_to_sign(kind, &get),
            version,
            signature,
            cert_url,
            timestamp,
        })
    }

    fn finish(
        &self,
        envelope: &Envelope,
        key: &cert::CertKey,
        now_unix: i64,
    ) -> Result<(), SignatureError> {
        if !key.verifies(
            envelope.version,
            envelope.string_to_sign.as_bytes(),
            &envelope.signature,
        ) {
            return Err(SignatureError::Mismatch);
        }
        self.tolerance.check(envelope.timestamp, now_unix)
    }

    /// The envelope to sign: the body itself when it is an SNS message, else a `Notification`
    /// whose `Message` is the body.
    fn to_envelope(&self, message: &Unsigned<'_>) -> Result<Map<String, Value>, SignError> {
        let mut envelope = match serde_json::from_slice::<Value>(message.body) {
            Ok(Value::Object(map)) if map.get("Type").is_some_and(Value::is_string) => map,
            _ => {
                let text =
                    std::str::from_utf8(message.body).map_err(|_| SignError::Unsupported {
                        reason: "an SNS message is text",
                    })?;
                let id = if message.msg_id.is_empty() {
                    random_uuid()
                } else {
                    message.msg_id.to_owned()
                };
                let mut map = Map::new();
                map.insert("Type".into(), json!("Notification"));
                map.insert("MessageId".into(), json!(id));
                map.insert("TopicArn".into(), json!(self.topic_arn));
                map.insert("Message".into(), json!(text));
                map.insert(
                    "UnsubscribeURL".into(),
                    json!(format!(
                        "https://{}/?Action=Unsubscribe&SubscriptionArn={}:{}",
                        self.host,
                        self.topic_arn,
                        random_uuid()
                    )),
                );
                map
            }
        };
        envelope.insert("Timestamp".into(), json!(sns_timestamp(message.timestamp)));
        Ok(envelope)
    }
}

impl FromSpec for Sns {
    /// Setting `topic_arn` (required); secrets: local signing identities (optional).
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        let invalid = |reason: &str| SchemeError::InvalidConfig {
            reason: format!("`topic_arn` {reason}"),
        };
        let Settings { topic_arn } = settings(spec)?;
        let topic_arn = topic_arn
            .ok_or_else(|| invalid("is required: the ARN of the SNS topic this source accepts"))?;
        let (partition, region) = topic_partition_region(&topic_arn).ok_or_else(|| {
            invalid("is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)")
        })?;
        let host = sns_host(partition, region);
        let mut identities = Vec::with_capacity(spec.secrets.len());
        for (index, secret) in spec.secrets.iter().enumerate() {
            identities.push(
                Identity::parse(secret.expose(), &host)
                    .map_err(|reason| SchemeError::Invalid { index, reason })?,
            );
        }
        let fetcher = spec.fetcher.map_or_else(HttpsFetcher::shared, Arc::clone);
        Ok(Self {
            certificates: Certificates::new(Arc::clone(&fetcher), &identities),
            fetcher,
            topic_arn,
            host,
            identities,
            tolerance: Tolerance::new(spec.tolerance),
        })
    }
}

impl Scheme for Sns {
    /// Decided at once when the certificate is known; after fetching it otherwise.
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        let envelope = match self.envelope(request.body) {
            Ok(envelope) => envelope,
            Err(e) => return Err(e).into(),
        };
        let now = request.now_unix;
        match self.certificates.cached(&envelope.cert_url, now) {
            Some(Ok(key)) => self.finish(&envelope, &key, now).into(),
            Some(Err(recently_failed)) => Err(recently_failed).into(),
            None => Verdict::Pending(Box::pin(async move {
                let key = self.certificates.fetch(&envelope.cert_url, now).await?;
                self.finish(&envelope, &key, now)
            })),
        }
    }

    /// Signs with the first local identity (SignatureVersion 2); the body sent is the signed
    /// SNS message (a body that is not one becomes its `Message`).
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let identity = self.identities.first().ok_or(SignError::Unsupported {
            reason: "no local signing identity is configured (SNS signs with AWS's keys)",
        })?;
        let mut envelope = self.to_envelope(message)?;
        let kind = match envelope.get("Type").and_then(Value::as_str) {
            Some("Notification") => Kind::Notification,
            Some("SubscriptionConfirmation") => Kind::SubscriptionConfirmation,
            _ => Kind::UnsubscribeConfirmation,
        };
        let text = {
            let get = |name: &'static str| {
                envelope
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            string_to_sign(kind, &get)
        };
        let mut signature = vec![0u8; identity.key.public_modulus_len()];
        identity
            .key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                text.as_bytes(),
                &mut signature,
            )
            .map_err(|_| SignError::Unsupported {
                reason: "the RSA signature could not be computed",
            })?;
        envelope.insert("SignatureVersion".into(), json!("2"));
        envelope.insert(
            "Signature".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(signature)),
        );
        envelope.insert("SigningCertURL".into(), json!(identity.url));
        Ok(Signed {
            headers: Vec::new(),
            body: Some(Value::Object(envelope).to_string().into_bytes()),
        })
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &[]
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::json_pointer("/MessageId")
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::FirstOf(vec![
            FieldRule::json_pointer("/Message/eventType"),
            FieldRule::json_pointer("/Message/notificationType"),
            FieldRule::json_pointer("/Type"),
        ]))
    }

    /// Signed: the fields of the string to sign in the body; the others (`UnsubscribeURL`,
    /// `SigningCertURL`, …) and so the body's hash are not.
    fn signs(&self, rule: &FieldRule) -> bool {
        const SIGNED: [&str; 8] = [
            "Message",
            "MessageId",
            "Subject",
            "Timestamp",
            "TopicArn",
            "Type",
            "SubscribeURL",
            "Token",
        ];
        match rule {
            FieldRule::JsonPointer(p) => p
                .strip_prefix('/')
                .and_then(|p| p.split('/').next())
                .is_some_and(|first| SIGNED.contains(&first)),
            FieldRule::FirstOf(rules) => rules.iter().all(|r| self.signs(r)),
            FieldRule::Header(_) | FieldRule::BodySha256 | FieldRule::FormSha256 => false,
        }
    }

    /// A `SubscriptionConfirmation`: confirmed by visiting its `SubscribeURL` (`subscribe.rs`).
    fn handshake<'a>(&'a self, request: Request<'a>) -> Option<Handshake<'a>> {
        subscribe::handshake(&self.fetcher, &self.host, &self.topic_arn, request.body)
    }
}

#[cfg(test)]
pub(super) mod tests;
