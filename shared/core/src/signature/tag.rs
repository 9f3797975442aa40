//! An HMAC-SHA256 signature ([`Tag`], exactly [`TAG_LEN`] bytes): decoded from a header's hex
//! (table-driven, without branches on the digits) or base64, and encoded for signing.

use base64::Engine as _;

/// HMAC-SHA256 output length in bytes; every decoded signature must have exactly this length.
pub(super) const TAG_LEN: usize = 32;

/// A decoded HMAC-SHA256 signature or MAC output.
pub(super) type Tag = [u8; TAG_LEN];

/// Each byte's value as a hex digit (either case), [`NOT_HEX`] for every other byte.
const HEX_VALUES: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut i = 0;
    while i < 16 {
        table[b"0123456789abcdef"[i] as usize] = i as u8;
        table[b"0123456789ABCDEF"[i] as usize] = i as u8;
        i += 1;
    }
    table
};
/// [`HEX_VALUES`]' mark for a byte that is not a hex digit (any bit above the low four).
const NOT_HEX: u8 = 0xF0;

/// Whether every byte of `text` is a hex digit: one table lookup per byte, no branch on the
/// digits (random hex defeats a branch predictor: a signature cost ~10 cycles a digit).
fn all_hex(text: &[u8]) -> bool {
    text.iter()
        .fold(0u8, |seen, &c| seen | HEX_VALUES[usize::from(c)])
        & NOT_HEX
        == 0
}

/// Decodes a hex signature (either case) of exactly 32 bytes.
pub(in crate::signature) fn decode_hex_tag(text: &str) -> Result<Tag, &'static str> {
    let text = text.as_bytes();
    if text.is_empty() {
        return Err("the signature is empty");
    }
    if !all_hex(text) {
        return Err("the signature is not hexadecimal");
    }
    if !text.len().is_multiple_of(2) {
        return Err("the signature has an odd number of hex digits");
    }
    if text.len() != 2 * TAG_LEN {
        return Err("the signature is not 32 bytes long");
    }
    let mut tag = [0u8; TAG_LEN];
    for (byte, pair) in tag.iter_mut().zip(text.chunks_exact(2)) {
        *byte = HEX_VALUES[usize::from(pair[0])] << 4 | HEX_VALUES[usize::from(pair[1])];
    }
    Ok(tag)
}

/// Decodes a standard-alphabet, padded base64 signature of exactly 32 bytes.
pub(in crate::signature) fn decode_base64_tag(text: &str) -> Result<Tag, &'static str> {
    const WRONG_LENGTH: &str = "the signature is not 32 bytes long";
    if text.is_empty() {
        return Err("the signature is empty");
    }
    // 88 characters decode to at most 66 bytes: enough room to tell "invalid" from "too long".
    if text.len() > 88 {
        return Err(WRONG_LENGTH);
    }
    let mut buf = [0u8; 66];
    let len = base64::engine::general_purpose::STANDARD
        .decode_slice(text, &mut buf)
        .map_err(|_| "the signature is not valid base64")?;
    let decoded = buf.get(..len).ok_or(WRONG_LENGTH)?;
    Tag::try_from(decoded).map_err(|_| WRONG_LENGTH)
}

/// Standard base64 (padded) of a tag.
pub(super) fn base64_tag(tag: &Tag) -> String {
    base64::engine::general_purpose::STANDARD.encode(tag)
}
