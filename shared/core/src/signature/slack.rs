//! Slack: `X-Slack-Signature: v0=<hex>` with `X-Slack-Request-Timestamp: <unix>`.
//!
//! The MAC is HMAC-SHA256, keyed with the signing secret's UTF-8 bytes, over
//! `"v0:{timestamp}:{raw body}"`, where the timestamp is the header's text exactly as sent (as
//! Slack's SDKs sign it; it must be digits only). A matching signature must then be within the
//! tolerance on both sides.

use http::{HeaderMap, HeaderName, HeaderValue};

use super::{
    decode_hex_tag, parse_timestamp, push_header, single_header, SignatureError, Verifier,
};

const SIGNATURE_LABEL: &str = "X-Slack-Signature";
const TIMESTAMP_LABEL: &str = "X-Slack-Request-Timestamp";
const PREFIX: &str = "v0=";
static SIGNATURE: HeaderName = HeaderName::from_static("x-slack-signature");
static TIMESTAMP: HeaderName = HeaderName::from_static("x-slack-request-timestamp");

pub(super) const SIGNED_HEADERS: &[&str] = &["x-slack-signature", "x-slack-request-timestamp"];

pub(super) fn verify(
    v: &Verifier,
    headers: &HeaderMap,
    body: &[u8],
    now_unix: i64,
) -> Result<(), SignatureError> {
    let signature = single_header(headers, &SIGNATURE, SIGNATURE_LABEL)?;
    let timestamp_text = single_header(headers, &TIMESTAMP, TIMESTAMP_LABEL)?;
    let (timestamp, _) =
        parse_timestamp(timestamp_text).map_err(|reason| SignatureError::Malformed {
            header: TIMESTAMP_LABEL,
            reason,
        })?;
    let malformed = |reason| SignatureError::Malformed {
        header: SIGNATURE_LABEL,
        reason,
    };
    let hex = signature
        .strip_prefix(PREFIX)
        .ok_or(malformed("the value does not start with `v0=`"))?;
    let tag = decode_hex_tag(hex).map_err(malformed)?;
    if !v.matches(
        &[b"v0:", timestamp_text.as_bytes(), b":", body],
        std::iter::once(tag),
    ) {
        return Err(SignatureError::Mismatch);
    }
    v.check_tolerance(timestamp, now_unix)
}

pub(super) fn sign(v: &Verifier, body: &[u8], timestamp: i64) -> Vec<(HeaderName, HeaderValue)> {
    let t = timestamp.to_string();
    let tag = v.sign_tag(&[b"v0:", t.as_bytes(), b":", body]);
    let mut out = Vec::with_capacity(2);
    push_header(&mut out, &TIMESTAMP, &t);
    push_header(
        &mut out,
        &SIGNATURE,
        &format!("{PREFIX}{}", hex::encode(tag)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SchemeConfig;
    use super::*;

    // The example of Slack's "Verifying requests from Slack" documentation.
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TS: &str = "1531420618";
    const T: i64 = 1_531_420_618;
    const BODY: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const EXPECTED: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn request(ts: &str, sig: &str) -> HeaderMap {
        headers(&[
            ("X-Slack-Request-Timestamp", ts),
            ("X-Slack-Signature", sig),
        ])
    }

    fn sig(secret: &str, ts: &str, body: &[u8]) -> String {
        let mut message = format!("v0:{ts}:").into_bytes();
        message.extend_from_slice(body);
        format!(
            "v0={}",
            hex::encode(reference_mac(secret.as_bytes(), &message))
        )
    }

    fn bad(header: &'static str, reason: &'static str) -> Result<(), SignatureError> {
        Err(malformed(header, reason))
    }

    #[test]
    fn documented_vector() {
        let v = verifier(SchemeConfig::Slack, &[SECRET]);
        assert_eq!(sig(SECRET, TS, BODY), EXPECTED);
        assert_eq!(v.verify(&request(TS, EXPECTED), BODY, T), Ok(()));
        let out = v.sign(BODY, T, "ignored");
        assert_eq!(value_of(&out, "x-slack-signature"), EXPECTED);
        assert_eq!(value_of(&out, "x-slack-request-timestamp"), TS);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn table() {
        let v = verifier(SchemeConfig::Slack, &[SECRET]);
        let hex = &EXPECTED[3..];
        let other = sig("other secret", TS, BODY);
        let zero_padded = sig(SECRET, "01531420618", BODY);
        let cases: Vec<(&str, String, &[u8], i64, Outcome)> = vec![
            (TS, EXPECTED.into(), BODY, T, Ok(())),
            (TS, format!("v0={}", hex.to_uppercase()), BODY, T, Ok(())),
            // The timestamp text is signed as sent.
            ("01531420618", zero_padded.clone(), BODY, T, Ok(())),
            (
                "01531420618",
                EXPECTED.into(),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            // Tolerance: exactly 300 s passes on both sides, 301 fails.
            (TS, EXPECTED.into(), BODY, T + 300, Ok(())),
            (TS, EXPECTED.into(), BODY, T - 300, Ok(())),
            (
                TS,
                EXPECTED.into(),
                BODY,
                T + 301,
                Err(SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                TS,
                EXPECTED.into(),
                BODY,
                T - 301,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            // Mismatch, checked before tolerance.
            (TS, other.clone(), BODY, T, Err(SignatureError::Mismatch)),
            (TS, other, BODY, T + 100_000, Err(SignatureError::Mismatch)),
            (
                TS,
                EXPECTED.into(),
                &BODY[1..],
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                "1531420619",
                EXPECTED.into(),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            // Malformed signature.
            (
                TS,
                "v0=".into(),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is empty"),
            ),
            (
                TS,
                hex.into(),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the value does not start with `v0=`"),
            ),
            (
                TS,
                format!("v1={hex}"),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the value does not start with `v0=`"),
            ),
            (
                TS,
                format!("v0={}", &hex[..62]),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not 32 bytes long"),
            ),
            (
                TS,
                format!("v0={}", &hex[..63]),
                BODY,
                T,
                bad(
                    SIGNATURE_LABEL,
                    "the signature has an odd number of hex digits",
                ),
            ),
            (
                TS,
                format!("v0={}q", &hex[..63]),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not hexadecimal"),
            ),
            // Malformed timestamp (reported before the signature is decoded).
            (
                "",
                EXPECTED.into(),
                BODY,
                T,
                bad(TIMESTAMP_LABEL, "the value is empty"),
            ),
            (
                "soon",
                "v0=".into(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                "-1531420618",
                EXPECTED.into(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                "1531420618.5",
                EXPECTED.into(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
        ];
        for (ts, signature, body, now, expected) in cases {
            assert_eq!(
                v.verify(&request(ts, &signature), body, now),
                expected,
                "{ts:?} {signature:?} now={now}"
            );
        }
    }

    #[test]
    fn missing_and_duplicated_headers() {
        let v = verifier(SchemeConfig::Slack, &[SECRET]);
        let cases: Vec<(Vec<(&str, &str)>, SignatureError)> = vec![
            (
                vec![],
                SignatureError::Missing {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![("x-slack-request-timestamp", TS)],
                SignatureError::Missing {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![("x-slack-signature", EXPECTED)],
                SignatureError::Missing {
                    header: TIMESTAMP_LABEL,
                },
            ),
            (
                vec![
                    ("x-slack-request-timestamp", TS),
                    ("x-slack-signature", EXPECTED),
                    ("x-slack-signature", EXPECTED),
                ],
                SignatureError::Duplicated {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![
                    ("x-slack-request-timestamp", TS),
                    ("x-slack-request-timestamp", TS),
                    ("x-slack-signature", EXPECTED),
                ],
                SignatureError::Duplicated {
                    header: TIMESTAMP_LABEL,
                },
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                v.verify(&headers(&pairs), BODY, T),
                Err(expected),
                "{pairs:?}"
            );
        }
        let mut map = request(TS, EXPECTED);
        map.insert(
            "x-slack-signature",
            HeaderValue::from_bytes(b"v0=\xfe").unwrap(),
        );
        assert_eq!(
            v.verify(&map, BODY, T),
            bad(SIGNATURE_LABEL, "the value is not visible ASCII")
        );
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier(SchemeConfig::Slack, &["rotated in", SECRET]);
        assert_eq!(v.verify(&request(TS, EXPECTED), BODY, T), Ok(()));
        let v = verifier(SchemeConfig::Slack, &["rotated in", "rotated out"]);
        assert_eq!(
            v.verify(&request(TS, EXPECTED), BODY, T),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        let v = verifier(SchemeConfig::Slack, &[SECRET]);
        for body in [BODY, BINARY_BODY, b"" as &[u8]] {
            let map = signed(v.sign(body, T, ""));
            assert_eq!(v.verify(&map, body, T), Ok(()));
            let mut tampered = body.to_vec();
            tampered.push(0);
            assert_eq!(v.verify(&map, &tampered, T), Err(SignatureError::Mismatch));
        }
        assert_eq!(
            v.verify(&request(TS, &sig(SECRET, TS, BINARY_BODY)), BINARY_BODY, T),
            Ok(())
        );
    }
}
