//! SNS messages: their kinds, the documented string to sign, their timestamps
//! (`2012-04-26T20:45:04.751Z`), and topic ARNs.

use super::super::stamp::rfc3339;
use super::super::SignatureError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Notification,
    SubscriptionConfirmation,
    UnsubscribeConfirmation,
}

/// A parsed SNS message: what its signature covers and how to check it.
#[derive(Debug)]
pub(super) struct Envelope {
    pub(super) string_to_sign: String,
    pub(super) version: u8,
    pub(super) signature: Vec<u8>,
    pub(super) cert_url: String,
    pub(super) timestamp: i64,
}

/// The partition and region of an SNS topic ARN (`arn:aws:sns:<region>:<account>:<name>`), if
/// it is one.
pub(super) fn topic_partition_region(arn: &str) -> Option<(&str, &str)> {
    let parts: Vec<&str> = arn.split(':').collect();
    let valid = parts.len() == 6
        && parts[0] == "arn"
        && parts[1].starts_with("aws")
        && parts[2] == "sns"
        && !parts[3].is_empty()
        && parts[3]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && parts[4].len() == 12
        && parts[4].bytes().all(|b| b.is_ascii_digit())
        && !parts[5].is_empty();
    valid.then(|| (parts[1], parts[3]))
}

pub(super) fn malformed(field: &'static str, reason: &'static str) -> SignatureError {
    SignatureError::MalformedField { field, reason }
}

/// `2012-04-26T20:45:04.751Z` (fraction optional, UTC only) → Unix seconds.
pub(super) fn parse_timestamp(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let rest = &text[19..];
    let fraction_ok = match rest.strip_suffix('Z')? {
        "" => true,
        f => f.strip_prefix('.').is_some_and(|d| {
            !d.is_empty() && d.len() <= 9 && d.bytes().all(|c| c.is_ascii_digit())
        }),
    };
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !fraction_ok
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm), the inverse of stamp::rfc3339.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

/// `SNS Timestamp` of Unix seconds, with milliseconds as SNS writes it.
pub(super) fn sns_timestamp(secs: i64) -> String {
    let text = rfc3339(secs);
    format!("{}.000Z", text.trim_end_matches('Z'))
}

/// The documented string to sign, from the members' decoded values.
pub(super) fn string_to_sign(kind: Kind, get: &dyn Fn(&'static str) -> Option<String>) -> String {
    let names: &[&'static str] = match kind {
        Kind::Notification => &[
            "Message",
            "MessageId",
            "Subject",
            "Timestamp",
            "TopicArn",
            "Type",
        ],
        _ => &[
            "Message",
            "MessageId",
            "SubscribeURL",
            "Timestamp",
            "Token",
            "TopicArn",
            "Type",
        ],
    };
    let mut out = String::new();
    for name in names {
        if let Some(value) = get(name) {
            out.push_str(name);
            out.push('\n');
            out.push_str(&value);
            out.push('\n');
        }
    }
    out
}
