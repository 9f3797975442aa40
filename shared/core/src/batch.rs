//! Batched bodies: a provider that posts several events at once (SendGrid's Event Webhook: a JSON
//! array of up to ~1,000 events) signs the whole body, while each event becomes a message of its
//! own. [`split`] finds the events of a JSON array (each element's exact bytes) and the bytes
//! around them; each stored event keeps a [`BatchPart`]: the SHA-256 of the signed body, its
//! position, and the bytes between it and the previous event (`[` or `,` and any whitespace; the
//! last one also the closing `]`). [`reassemble`] puts the events of one batch back together byte
//! for byte, so a batch whose events are all still stored can be re-verified with the signature
//! headers kept on each of them (and checked against the digest).
//!
//! [`split_at_most`] bounds the number of events a request may become: the elements are counted
//! first without keeping any (a 6 MiB `[1,1,…]` has three million), and an array with more than
//! the limit is refused whole ([`TooManyEvents`]) before a single part is built.
//!
//! Splitting is the ingest's business (`crate::ingest`'s batch path); this module is pure.

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer as _, Serialize};
use serde_json::value::RawValue;

use crate::domain::BodyDigest;

/// Where a message split from a batch came from (kept with the message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchPart {
    /// Lower-case hex SHA-256 of the whole signed body.
    pub sha256: String,
    /// The event's position in the batch, from 0.
    pub index: u32,
    /// How many events the batch has.
    pub count: u32,
    /// The bytes between the previous event (or the body's start) and this one.
    pub before: String,
    /// For the last event only: the bytes after it (the closing `]` and any whitespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// One event of a batch: its bytes (a slice of the body) and its part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    pub bytes: &'a [u8],
    pub part: BatchPart,
}

/// A JSON array with more elements than a request may become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the batch has {count} events; the limit is {limit} per request")]
pub struct TooManyEvents {
    /// How many elements the array has.
    pub count: usize,
    /// The most events one request may be split into.
    pub limit: usize,
}

/// The events of `body` if it is a JSON array (each element's exact bytes, in order, with its
/// [`BatchPart`]); `None` if it is not a JSON array (a single event: stored as it is). An empty
/// array has no events. No limit on their number: the ingest uses [`split_at_most`].
pub fn split(body: &[u8]) -> Option<Vec<Split<'_>>> {
    split_at_most(body, usize::MAX).unwrap_or(None)
}

/// [`split`], refusing an array of more than `limit` elements (counted without keeping them, so
/// the refusal costs one pass over the body and no allocation per element).
pub fn split_at_most(body: &[u8], limit: usize) -> Result<Option<Vec<Split<'_>>>, TooManyEvents> {
    let Some(count) = count_elements(body) else {
        return Ok(None);
    };
    if count > limit {
        return Err(TooManyEvents { count, limit });
    }
    Ok(split_array(body))
}

/// How many elements `body` has if it is exactly one JSON array (whitespace around it allowed).
fn count_elements(body: &[u8]) -> Option<usize> {
    struct Count;
    impl<'de> Visitor<'de> for Count {
        type Value = usize;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON array")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut count = 0usize;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                count += 1;
            }
            Ok(count)
        }
    }
    let first = body.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'[' {
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let count = (&mut de).deserialize_seq(Count).ok()?;
    de.end().ok()?;
    Some(count)
}

/// The parts of a body already known to be a JSON array.
fn split_array(body: &[u8]) -> Option<Vec<Split<'_>>> {
    let elements: Vec<&RawValue> = serde_json::from_slice(body).ok()?;
    let count = u32::try_from(elements.len()).ok()?;
    let sha256 = BodyDigest::of(body).to_hex();
    let base = body.as_ptr() as usize;
    let mut parts = Vec::with_capacity(elements.len());
    let mut end_of_previous = 0usize;
    for (index, element) in (0u32..).zip(&elements) {
        let text = element.get().as_bytes();
        // A borrowed raw value is a slice of the body: its offset is where it starts.
        let start = (text.as_ptr() as usize).checked_sub(base)?;
        let end = start.checked_add(text.len())?;
        let bytes = body.get(start..end)?;
        let before = std::str::from_utf8(body.get(end_of_previous..start)?).ok()?;
        let after = if index + 1 == count {
            Some(std::str::from_utf8(body.get(end..)?).ok()?.to_owned())
        } else {
            None
        };
        parts.push(Split {
            bytes,
            part: BatchPart {
                sha256: sha256.clone(),
                index,
                count,
                before: before.to_owned(),
                after,
            },
        });
        end_of_previous = end;
    }
    Some(parts)
}

/// Why a batch could not be put back together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReassembleError {
    #[error("no event of the batch was given")]
    Empty,
    #[error("the events belong to different batches")]
    MixedBatches,
    #[error("event {0} of the batch is missing")]
    Missing(u32),
    #[error("the reassembled body does not have the batch's SHA-256")]
    DigestMismatch,
}

/// The signed body of one batch from ALL its events (each event's bytes with its part, in any
/// order), checked against the batch's digest.
pub fn reassemble<'a>(
    events: impl IntoIterator<Item = (&'a [u8], &'a BatchPart)>,
) -> Result<Vec<u8>, ReassembleError> {
    let mut events: Vec<(&[u8], &BatchPart)> = events.into_iter().collect();
    let (_, first) = events.first().ok_or(ReassembleError::Empty)?;
    let (sha256, count) = (first.sha256.clone(), first.count);
    if events
        .iter()
        .any(|(_, p)| p.sha256 != sha256 || p.count != count)
    {
        return Err(ReassembleError::MixedBatches);
    }
    events.sort_by_key(|(_, p)| p.index);
    events.dedup_by_key(|(_, p)| p.index);
    let mut body = Vec::new();
    for expected in 0..count {
        let (bytes, part) = events
            .get(expected as usize)
            .filter(|(_, p)| p.index == expected)
            .ok_or(ReassembleError::Missing(expected))?;
        body.extend_from_slice(part.before.as_bytes());
        body.extend_from_slice(bytes);
        if let Some(after) = &part.after {
            body.extend_from_slice(after.as_bytes());
        }
    }
    if BodyDigest::of(&body).to_hex() != sha256 {
        return Err(ReassembleError::DigestMismatch);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_arrays_into_exact_elements_with_their_glue() {
        let body = b" [ {\"a\":1} ,\n{\"b\":[2,3]},\"x\" ]\n";
        let parts = split(body).unwrap();
        let texts: Vec<&[u8]> = parts.iter().map(|p| p.bytes).collect();
        assert_eq!(texts, vec![&b"{\"a\":1}"[..], b"{\"b\":[2,3]}", b"\"x\""]);
        let glue: Vec<(&str, Option<&str>)> = parts
            .iter()
            .map(|p| (p.part.before.as_str(), p.part.after.as_deref()))
            .collect();
        assert_eq!(
            glue,
            vec![(" [ ", None), (" ,\n", None), (",", Some(" ]\n"))]
        );
        assert!(parts.iter().all(|p| p.part.count == 3));
        let pairs = parts.iter().rev().map(|p| (p.bytes, &p.part));
        assert_eq!(reassemble(pairs).unwrap(), body.to_vec());
    }

    #[test]
    fn only_arrays_are_batches() {
        for single in [&b"{\"a\":1}"[..], b"", b"  ", b"[1,", b"text", b"[1] x"] {
            assert_eq!(split(single), None, "{}", String::from_utf8_lossy(single));
        }
        assert_eq!(split(b"[]").unwrap(), Vec::new());
        assert_eq!(split(b" [ ] ").unwrap(), Vec::new());
    }

    #[test]
    fn an_array_above_the_limit_is_refused_before_any_part_is_built() {
        assert_eq!(split_at_most(b"[1,2,3]", 3).unwrap().unwrap().len(), 3);
        assert_eq!(
            split_at_most(b" [1, [2, 3], {\"a\": [4]}] ", 2),
            Err(TooManyEvents { count: 3, limit: 2 }),
            "nested arrays count once"
        );
        assert_eq!(split_at_most(b"[]", 0).unwrap(), Some(Vec::new()));
        // What is not one JSON array is no batch, whatever its length.
        for single in [&b"{\"a\":1}"[..], b"[1,2,3", b"[1,2,3] x", b"[1,,2]"] {
            assert_eq!(split_at_most(single, 1), Ok(None));
        }
        // Six MiB of `1,`: three million elements, counted and refused.
        let mut huge = Vec::with_capacity(6 << 20);
        huge.push(b'[');
        while huge.len() < (6 << 20) - 2 {
            huge.extend_from_slice(b"1,");
        }
        huge.extend_from_slice(b"1]");
        let count = huge.iter().filter(|&&b| b == b'1').count();
        assert_eq!(
            split_at_most(&huge, 1000),
            Err(TooManyEvents { count, limit: 1000 })
        );
        assert!(count > 3_000_000);
    }

    #[test]
    fn reassembly_needs_every_event_of_one_batch() {
        let a = split(b"[1,2,3]").unwrap();
        let b = split(b"[1,2,4]").unwrap();
        fn pairs<'a>(v: &[Split<'a>]) -> Vec<(&'a [u8], BatchPart)> {
            v.iter().map(|p| (p.bytes, p.part.clone())).collect()
        }
        let (a, b) = (pairs(&a), pairs(&b));
        let refs = |v: &[(&[u8], BatchPart)]| {
            reassemble(
                v.iter()
                    .map(|(bytes, part)| (*bytes, part))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(refs(&a).unwrap(), b"[1,2,3]".to_vec());
        assert_eq!(refs(&a[..2]), Err(ReassembleError::Missing(2)));
        assert_eq!(refs(&a[1..]), Err(ReassembleError::Missing(0)));
        assert_eq!(refs(&[]), Err(ReassembleError::Empty));
        let mixed = vec![a[0].clone(), a[1].clone(), b[2].clone()];
        assert_eq!(refs(&mixed), Err(ReassembleError::MixedBatches));
        let mut tampered = a.clone();
        tampered[1].0 = b"9";
        assert_eq!(refs(&tampered), Err(ReassembleError::DigestMismatch));
        let duplicated = vec![a[0].clone(), a[0].clone(), a[1].clone(), a[2].clone()];
        assert_eq!(refs(&duplicated).unwrap(), b"[1,2,3]".to_vec());
    }

    proptest! {
        #[test]
        fn any_array_splits_and_reassembles_byte_for_byte(
            values in prop::collection::vec(any::<(u32, String, bool)>(), 0..20),
            spaces in prop::collection::vec("[ \n\t\r]{0,3}", 42),
        ) {
            let mut body = String::new();
            body.push_str(&spaces[0]);
            body.push('[');
            for (i, (n, s, b)) in values.iter().enumerate() {
                if i > 0 { body.push(','); }
                body.push_str(&spaces[(2 * i + 1) % spaces.len()]);
                body.push_str(&serde_json::json!({"n": n, "s": s, "b": b}).to_string());
                body.push_str(&spaces[(2 * i + 2) % spaces.len()]);
            }
            body.push(']');
            body.push_str(&spaces[41]);
            let parts = split(body.as_bytes()).unwrap();
            prop_assert_eq!(parts.len(), values.len());
            for (p, (n, s, _)) in parts.iter().zip(&values) {
                let v: serde_json::Value = serde_json::from_slice(p.bytes).unwrap();
                prop_assert_eq!(&v["n"], &serde_json::json!(n));
                prop_assert_eq!(&v["s"], &serde_json::json!(s));
            }
            if !parts.is_empty() {
                let again = reassemble(parts.iter().map(|p| (p.bytes, &p.part))).unwrap();
                prop_assert_eq!(again, body.into_bytes());
            }
        }
    }

    proptest! {
        #![proptest_config(crate::fuzz::config(256))]

        /// Any bytes: never a panic; a split is exactly serde_json's array, element by element,
        /// and puts the body back together byte for byte.
        #[test]
        fn fuzz_split_takes_any_bytes(
            bytes in prop::collection::vec(any::<u8>(), 0..96),
            pieces in prop::collection::vec(
                prop::sample::select(vec![
                    "[", "]", "{", "}", ",", ":", " ", "\n", "\"", "\\", "1", "-0", "1e5",
                    "null", "true", "\"a\"", "{\"id\":1}", "[]", "\u{e9}", "\u{1}", "\u{feff}",
                ]),
                0..20,
            ),
            raw in any::<bool>(),
        ) {
            let body = if raw { bytes } else { pieces.concat().into_bytes() };
            let Some(parts) = split(&body) else {
                return Ok(());
            };
            let elements: Vec<serde_json::Value> = serde_json::from_slice(&body).unwrap();
            prop_assert_eq!(parts.len(), elements.len());
            for (part, element) in parts.iter().zip(&elements) {
                let parsed: serde_json::Value = serde_json::from_slice(part.bytes).unwrap();
                prop_assert_eq!(&parsed, element);
            }
            if !parts.is_empty() {
                let again = reassemble(parts.iter().map(|p| (p.bytes, &p.part))).unwrap();
                prop_assert_eq!(again, body);
            }
        }
    }
}
