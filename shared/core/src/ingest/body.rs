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
