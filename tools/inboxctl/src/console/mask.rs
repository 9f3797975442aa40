//! Which kept header values the console shows. A message keeps the headers its signature needs
//! (signatures, timestamps, ids), the ones its id and type come from, and `content-type`; a
//! signature value is secrets-adjacent, so values are shown only for names that are plainly not
//! one (an allowlist), and never for a name that looks like a signature, key or credential.

/// How a header value is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    Value(String),
    /// Masked: only its length.
    Masked {
        chars: usize,
    },
}

/// Parts of a header name that mark a secret-adjacent value, whatever else the name says.
const SECRET_PARTS: [&str; 8] = [
    "sig", "hmac", "auth", "token", "secret", "key", "password", "cookie",
];

/// Endings of header names whose values are shown (ids, types, times).
const PLAIN_ENDINGS: [&str; 6] = [
    "-id",
    "-event",
    "-event-type",
    "-delivery",
    "-timestamp",
    "-topic",
];

/// Whether the value of header `name` (any case) may be shown.
pub fn shows_value(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if SECRET_PARTS.iter().any(|p| name.contains(p)) {
        return false;
    }
    name == "content-type" || PLAIN_ENDINGS.iter().any(|e| name.ends_with(e))
}

/// Header `name`'s `value` as the console renders it.
pub fn shown(name: &str, value: &str) -> Shown {
    if shows_value(name) {
        Shown::Value(value.to_owned())
    } else {
        Shown::Masked {
            chars: value.chars().count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_masked_and_plain_headers_shown() {
        for masked in [
            "stripe-signature",
            "Stripe-Signature",
            "x-hub-signature-256",
            "webhook-signature",
            "svix-signature",
            "x-twilio-signature",
            "paddle-signature",
            "x-shopify-hmac-sha256",
            "x-square-hmacsha256-signature",
            "authorization",
            "x-api-key",
            "x-signature-id", // a secret part wins over a plain ending
            "x-custom",       // unknown: masked
            "twilio-email-event-webhook-signature",
        ] {
            assert!(!shows_value(masked), "{masked} must be masked");
        }
        for plain in [
            "content-type",
            "webhook-id",
            "webhook-timestamp",
            "x-github-event",
            "x-github-delivery",
            "x-shopify-topic",
            "x-event-id",
            "svix-timestamp",
        ] {
            assert!(shows_value(plain), "{plain} is shown");
        }
        assert_eq!(
            shown("stripe-signature", "t=1,v1=abc"),
            Shown::Masked { chars: 10 }
        );
        assert_eq!(
            shown("content-type", "application/json"),
            Shown::Value("application/json".into())
        );
    }
}
