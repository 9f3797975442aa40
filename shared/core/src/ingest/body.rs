//! Body decoding: undoing the transport's base64 and enforcing the size limit.

use super::IngestError;
use base64::Engine;
use std::borrow::Cow;

/// Undoes API Gateway's base64 and enforces the size limit, without decoding an oversized body.
pub fn decode_body(
    body: Option<&str>,
    is_base64: bool,
    limit: usize,
) -> Result<Cow<'_, [u8]>, IngestError> {
    let Some(body) = body else {
        return Ok(Cow::Borrowed(&[]));
    };
    if !is_base64 {
        if body.len() > limit {
            return Err(IngestError::TooLarge {
                len: body.len(),
                limit,
            });
        }
        return Ok(Cow::Borrowed(body.as_bytes()));
    }
    let engine = &base64::engine::general_purpose::STANDARD;
    let decoded_len = base64::decoded_len_estimate(body.len());
    // The estimate may exceed the real length by up to 2 bytes of padding.
    if decoded_len > limit.saturating_add(2) {
        return Err(IngestError::TooLarge {
            len: decoded_len,
            limit,
        });
    }
    let bytes = engine
        .decode(body)
        .map_err(|_| IngestError::BadBodyEncoding)?;
    if bytes.len() > limit {
        return Err(IngestError::TooLarge {
            len: bytes.len(),
            limit,
        });
    }
    Ok(Cow::Owned(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::fuzz::config(512))]

        /// Any body text, either flag, any limit: the body, or refused; never a panic, never a
        /// body above the limit, and a valid base64 body within the limit is never refused
        /// (the early refusal by estimated length is never wrong).
        #[test]
        fn fuzz_bodies_decode_within_the_limit(
            raw in prop::collection::vec(any::<u8>(), 0..300),
            noise in "[A-Za-z0-9+/=\\- _\\n]{0,40}",
            encode in any::<bool>(),
            is_base64 in any::<bool>(),
            limit in 0usize..320,
        ) {
            let engine = &base64::engine::general_purpose::STANDARD;
            let text = if encode { engine.encode(&raw) } else { noise };
            let decoded = decode_body(Some(&text), is_base64, limit);
            match (&decoded, is_base64) {
                (Ok(bytes), true) => {
                    prop_assert!(bytes.len() <= limit);
                    prop_assert_eq!(Some(bytes.to_vec()), engine.decode(&text).ok());
                }
                (Ok(bytes), false) => prop_assert_eq!(&bytes[..], text.as_bytes()),
                (Err(_), true) => prop_assert!(
                    engine.decode(&text).map_or(true, |b| b.len() > limit),
                    "{:?} refused under the limit {}", text, limit
                ),
                (Err(_), false) => prop_assert!(text.len() > limit),
            }
        }
    }

    #[test]
    fn no_body_is_an_empty_one() {
        assert_eq!(decode_body(None, true, 0).unwrap().len(), 0);
    }
}
