//! Form-encoded (`application/x-www-form-urlencoded`) bodies as Twilio signs them: the POST
//! parameters decoded (`+` is a space, percent-escapes UTF-8), names sorted, each name's distinct
//! values sorted (byte order, as Twilio's libraries sort), repeats dropped ([`sorted_params`]);
//! the signed content is every `name` + `value` concatenated after the URL. [`signed_params`] is
//! that concatenation, the part of the signed string that varies between a source's events: two
//! bodies with the same one carry the same signature, so they are one event (their
//! [`FieldRule::FormSha256`](super::FieldRule::FormSha256) id is its SHA-256).

use crate::domain::BodyDigest;

/// One form-encoded name or value, decoded (`+` is a space); `None` if it is not UTF-8 (Twilio
/// sends UTF-8, and a lossy decoding would let different bodies sign alike).
fn decode_form(part: &[u8]) -> Option<String> {
    let spaced: Vec<u8> = part
        .iter()
        .map(|&b| if b == b'+' { b' ' } else { b })
        .collect();
    percent_encoding::percent_decode(&spaced)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

/// The POST parameters in signing order: names sorted, each name's distinct values sorted.
/// `None` if the body is not form-encoded UTF-8.
pub(crate) fn sorted_params(body: &[u8]) -> Option<Vec<(String, String)>> {
    let mut params = Vec::new();
    for pair in body.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &b""[..]),
        };
        params.push((decode_form(name)?, decode_form(value)?));
    }
    params.sort_unstable();
    params.dedup();
    Some(params)
}

/// The signed parameters of `body` (every `name` + `value` of [`sorted_params`], concatenated),
/// or `None` if it is not form-encoded UTF-8.
pub(crate) fn signed_params(body: &[u8]) -> Option<Vec<u8>> {
    let params = sorted_params(body)?;
    let mut out = Vec::with_capacity(body.len());
    for (name, value) in &params {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    Some(out)
}

/// The SHA-256 of [`signed_params`].
pub(crate) fn signed_params_digest(body: &[u8]) -> Option<BodyDigest> {
    signed_params(body).map(|signed| BodyDigest::of(&signed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reordered_and_repeated_parameters_have_one_digest_and_other_values_another() {
        let digest = |b: &[u8]| signed_params_digest(b).unwrap();
        let body = b"MessageSid=SM1&MessageStatus=delivered&To=%2B15558675310";
        assert_eq!(
            signed_params(body).unwrap(),
            b"MessageSidSM1MessageStatusdeliveredTo+15558675310".to_vec()
        );
        for same in [
            &b"To=%2B15558675310&MessageStatus=delivered&MessageSid=SM1"[..],
            b"MessageSid=SM1&MessageSid=SM1&MessageStatus=delivered&To=%2B15558675310&",
            b"MessageSid=SM1&MessageStatus=delivered&To=+15558675310".as_slice(),
        ] {
            if same.ends_with(b"To=+15558675310") {
                // `+` is a space, not a plus: another value, another event.
                assert_ne!(digest(same), digest(body));
            } else {
                assert_eq!(
                    digest(same),
                    digest(body),
                    "{}",
                    String::from_utf8_lossy(same)
                );
            }
        }
        assert_ne!(
            digest(b"MessageSid=SM1&MessageStatus=failed&To=%2B15558675310"),
            digest(body)
        );
        assert_eq!(digest(b"MessageSid=SM1"), BodyDigest::of(b"MessageSidSM1"));
        assert_eq!(signed_params(b"a=%FF"), None);
    }
}
