//! Signing an outbound delivery the Standard Webhooks way, with the core's own
//! `standard-webhooks` scheme (no second HMAC implementation): `webhook-id`, `webhook-timestamp`
//! and `webhook-signature: v1,<base64> [v1,<base64> …]`, one `v1` entry per active secret of the
//! destination (newest first), so a receiver holding any of them verifies it during a rotation.

use super::destination::SecretText;
use crate::signature::{self, Scheme, Secret, Spec, Unsigned};
use std::sync::Arc;
use std::time::Duration;

/// The headers that carry a delivery's signature and identity.
pub const WEBHOOK_ID: &str = "webhook-id";
pub const WEBHOOK_TIMESTAMP: &str = "webhook-timestamp";
pub const WEBHOOK_SIGNATURE: &str = "webhook-signature";
/// The headers naming the event's source and type (not signed; the body is).
pub const SOURCE_HEADER: &str = "webhook-source";
pub const TYPE_HEADER: &str = "webhook-event-type";

/// Signs with a set of secrets (built once per destination version: each secret's key schedule
/// runs once).
#[derive(Debug, Clone)]
pub struct Signer {
    schemes: Vec<Arc<dyn Scheme>>,
}

/// A secret could not key the scheme (never quotes it).
#[derive(Debug, thiserror::Error)]
#[error("a destination secret cannot sign: {0}")]
pub struct SignerError(String);

impl Signer {
    /// A signer for `secrets` (newest first).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a SecretText>) -> Result<Self, SignerError> {
        let settings = serde_json::Map::new();
        let schemes = secrets
            .into_iter()
            .map(|s| {
                let secrets = [Secret::from(s.expose())];
                let spec = Spec::new(&settings, &secrets, Duration::from_secs(300));
                signature::build("standard-webhooks", &spec).map_err(|e| SignerError(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if schemes.is_empty() {
            return Err(SignerError("no active secret".into()));
        }
        Ok(Self { schemes })
    }

    /// The three Standard Webhooks headers for `body` sent as `webhook_id` at `timestamp` (s).
    pub fn sign(
        &self,
        webhook_id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Result<Vec<(String, String)>, SignerError> {
        let mut signatures = Vec::with_capacity(self.schemes.len());
        for scheme in &self.schemes {
            let signed = scheme
                .sign(&Unsigned::new(body, timestamp, webhook_id))
                .map_err(|e| SignerError(e.to_string()))?;
            for (name, value) in signed.headers {
                if name.as_str() == WEBHOOK_SIGNATURE {
                    let v = value.to_str().map_err(|e| SignerError(e.to_string()))?;
                    signatures.push(v.to_owned());
                }
            }
        }
        Ok(vec![
            (WEBHOOK_ID.to_owned(), webhook_id.to_owned()),
            (WEBHOOK_TIMESTAMP.to_owned(), timestamp.to_string()),
            (WEBHOOK_SIGNATURE.to_owned(), signatures.join(" ")),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::Request;

    /// The Standard Webhooks reference vector.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn verifier(secret: &str) -> Arc<dyn Scheme> {
        let settings = serde_json::Map::new();
        let secrets = [Secret::from(secret)];
        signature::build(
            "standard-webhooks",
            &Spec::new(&settings, &secrets, Duration::from_secs(300)),
        )
        .unwrap()
    }

    fn verifies(headers: &[(String, String)], secret: &str, body: &[u8], now: i64) -> bool {
        let mut map = http::HeaderMap::new();
        for (k, v) in headers {
            map.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        verifier(secret)
            .verify(Request::new(&map, body, now))
            .ready()
            .unwrap()
            .is_ok()
    }

    #[test]
    fn the_reference_vector_and_every_secret() {
        let one = SecretText::parse(SECRET).unwrap();
        let body = br#"{"test": 2432232314}"#;
        let h = Signer::new([&one])
            .unwrap()
            .sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body)
            .unwrap();
        assert_eq!(h[2].1, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let two = SecretText::generate();
        let h = Signer::new([&two, &one])
            .unwrap()
            .sign("msg_x", 1_700_000_000, b"{}")
            .unwrap();
        assert_eq!(h[2].1.split(' ').count(), 2, "{}", h[2].1);
        assert!(h[2].1.split(' ').all(|e| e.starts_with("v1,")));
        assert!(
            verifies(&h, SECRET, b"{}", 1_700_000_000),
            "the old secret verifies"
        );
        assert!(
            verifies(&h, two.expose(), b"{}", 1_700_000_000),
            "the new secret verifies"
        );
        assert!(!verifies(
            &h,
            SecretText::generate().expose(),
            b"{}",
            1_700_000_000
        ));
        assert!(
            !verifies(&h, SECRET, b"{ }", 1_700_000_000),
            "the body is signed"
        );
        assert!(Signer::new([]).is_err());
        assert!(!format!("{:?}", Signer::new([&one]).unwrap()).contains("MfKQ9r8"));
    }
}
