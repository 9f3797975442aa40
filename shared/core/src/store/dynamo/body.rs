//! How a body is kept in the table, and read back.
//!
//! - **Inline, compressed**: a body of at most the inline limit is stored in the item's `body`
//!   as a zstd frame (level 3) with `body_enc = zstd`, or as it is when compression would not
//!   shrink it (no `body_enc`). Items written before bodies were compressed have the raw body and
//!   no `body_enc`, and read the same way.
//! - **In S3 (a claim check)**: above the inline limit, when a bucket is configured, the body is
//!   written to S3 first, under a content-addressed key (`{source}/{event_id}/{sha256 of the
//!   body}`, so a retried or repeated write of the same body is the same object, written once:
//!   `If-None-Match: *`; S3's 412 says the same bytes are there, its 409 `ConditionalRequestConflict`
//!   that another write of them is under way, and the put is tried again: `body/s3.rs`),
//!   encrypted (SSE-S3) and tagged for the bucket's lifecycle rule, which expires it the
//!   retention after it was written, or renewed by a replay or a resend ([`S3Bodies::renew`]);
//!   only then is the item written, with `body_ref` = that key
//!   and no `body`. So a 200 still means the body is durable. A failed message's body is exempted
//!   from expiry (its tag removed) when it fails, as failed messages never expire.
//!
//! Reading undoes either: `decode_item` decompresses, [`S3Bodies::get`] fetches. Where bodies go
//! is configured by [`BodyConfig`] (`BODY_BUCKET`, `BODY_INLINE_MAX_BYTES`).

use crate::config::{catalog, vars, ConfigError, Env};
use crate::domain::BodyDigest;
use crate::store::attr::{get_n, get_s};
use crate::store::schema::{BODY, BODY_ENC, BODY_REF, BODY_SHA256};
use crate::store::{Item, Original};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use std::cell::RefCell;

mod s3;
#[cfg(test)]
use s3::{put_answer, PutAnswer};
pub use s3::{BodyGone, S3Bodies};

/// `body_enc` of a zstd-compressed body.
pub const ZSTD: &str = "zstd";
/// The compression level: zstd's default, ~3x on provider JSON at a few µs per 2 KB.
const LEVEL: i32 = 3;
/// The default inline limit (raw bytes) when a bucket is configured: above it a body goes to S3.
/// At list prices one S3 PUT (+ a GET when processed) costs what about 9 write units do, and a
/// compressed body rides along in each write of its item (the ingest put and the processing
/// transaction, which counts twice), so inline stays cheaper up to about 8 KB of raw JSON
/// (`docs/benchmarks.md`, cost).
pub const DEFAULT_INLINE_MAX_BYTES: usize = 8 * 1024;
/// The largest raw body kept inline when no bucket is configured (DynamoDB's item limit is
/// 400 KB, attribute names and the message's other attributes included).
pub const MAX_INLINE_BYTES: usize = 350 * 1024;
/// The tag of an S3 body that the bucket's lifecycle rule expires after the retention.
pub const EXPIRY_TAG_KEY: &str = "inbox-expiry";
/// Its value.
pub const EXPIRY_TAG_VALUE: &str = "retention";

thread_local! {
    /// One compression context per thread, reused: creating one costs more than compressing a
    /// small body.
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
}

/// A body as the item stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredBody {
    /// In the item: a zstd frame (`zstd`) or the raw body.
    Inline { bytes: Vec<u8>, zstd: bool },
    /// In S3, under `key`.
    External { key: String, digest: BodyDigest },
}

impl StoredBody {
    /// `body` compressed when that makes it smaller.
    pub fn inline(body: &[u8]) -> Self {
        match compress(body) {
            Some(frame) if frame.len() < body.len() => Self::Inline {
                bytes: frame,
                zstd: true,
            },
            _ => Self::Inline {
                bytes: body.to_vec(),
                zstd: false,
            },
        }
    }

    /// The attributes that hold it (`body` + `body_enc`, or `body_ref` + `body_sha256`).
    pub fn put_into(self, item: &mut Item) {
        match self {
            Self::Inline { bytes, zstd } => {
                item.insert(BODY.into(), AttributeValue::B(Blob::new(bytes)));
                if zstd {
                    item.insert(BODY_ENC.into(), AttributeValue::S(ZSTD.into()));
                }
            }
            Self::External { key, digest } => {
                item.insert(BODY_REF.into(), AttributeValue::S(key));
                item.insert(BODY_SHA256.into(), AttributeValue::S(digest.to_hex()));
            }
        }
    }
}

fn compress(body: &[u8]) -> Option<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = zstd::bulk::Compressor::new(LEVEL).ok();
        }
        slot.as_mut()?.compress(body).ok()
    })
}

/// The raw body of a zstd frame; `len` (the item's `body_bytes`) sizes the output.
pub fn decompress(frame: &[u8], len: Option<usize>) -> Result<Vec<u8>, String> {
    match len {
        Some(len) => zstd::bulk::decompress(frame, len),
        None => zstd::stream::decode_all(frame),
    }
    .map_err(|e| format!("the stored body is not a valid zstd frame: {e}"))
}

/// Undoes the body's encoding in an item read from the table: afterwards `body` is the raw body
/// (or absent, when it is in S3: `body_ref`).
pub fn decode_item(item: &mut Item) -> Result<(), String> {
    let Some(enc) = item.remove(BODY_ENC) else {
        return Ok(());
    };
    if enc.as_s().map(String::as_str) != Ok(ZSTD) {
        return Err(format!("unknown body encoding {enc:?}"));
    }
    let len = get_n(item, crate::store::schema::BODY_BYTES).and_then(|n| usize::try_from(n).ok());
    let Some(AttributeValue::B(frame)) = item.get(BODY) else {
        return Err("a compressed body is missing".into());
    };
    let raw = decompress(frame.as_ref(), len)?;
    item.insert(BODY.into(), AttributeValue::B(Blob::new(raw)));
    Ok(())
}

/// The same for a stream image (the Lambda event's attribute values).
pub fn decode_image(image: &mut serde_dynamo::Item) -> Result<(), String> {
    use serde_dynamo::AttributeValue as V;
    let Some(enc) = image.remove(BODY_ENC) else {
        return Ok(());
    };
    if !matches!(&enc, V::S(s) if s == ZSTD) {
        return Err("unknown body encoding".into());
    }
    let len = match image.get(crate::store::schema::BODY_BYTES) {
        Some(V::N(n)) => n.parse().ok(),
        _ => None,
    };
    let Some(V::B(frame)) = image.get(BODY) else {
        return Err("a compressed body is missing".into());
    };
    let raw = decompress(frame, len)?;
    image.insert(BODY.into(), V::B(raw));
    Ok(())
}

/// What a duplicate's old image tells of the original body.
pub fn original_of(old: Option<&Item>) -> Original {
    let Some(old) = old else {
        return Original::Unknown;
    };
    let mut item = old.clone();
    if decode_item(&mut item).is_ok() {
        if let Some(AttributeValue::B(body)) = item.remove(BODY) {
            return Original::Body(body.into_inner());
        }
    }
    get_s(old, BODY_SHA256)
        .and_then(BodyDigest::from_hex)
        .map_or(Original::Unknown, Original::Digest)
}

/// Where message bodies are kept: the S3 bucket of bodies above the inline limit, if any
/// (`BODY_BUCKET`, `BODY_INLINE_MAX_BYTES`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyConfig {
    pub bucket: Option<String>,
    pub inline_max: usize,
}

impl BodyConfig {
    /// Reads `BODY_BUCKET` and `BODY_INLINE_MAX_BYTES` (at most what an item holds).
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let inline_max: usize = env.parse(&catalog::BODY_INLINE_MAX_BYTES)?;
        if inline_max > MAX_INLINE_BYTES {
            return Err(ConfigError::Invalid {
                var: vars::BODY_INLINE_MAX_BYTES,
                reason: format!("must be at most {MAX_INLINE_BYTES} (DynamoDB's item limit)"),
            });
        }
        Ok(Self {
            bucket: env.optional(&catalog::BODY_BUCKET),
            inline_max,
        })
    }

    /// The S3 side of the store, when a bucket is configured.
    pub fn s3(&self, aws: &aws_config::SdkConfig) -> Option<S3Bodies> {
        let bucket = self.bucket.as_ref()?;
        let config = aws_sdk_s3::config::Builder::from(aws)
            // Path-style addressing for a configured endpoint (`AWS_ENDPOINT_URL`: the emulator),
            // which serves no bucket subdomains.
            .force_path_style(aws.endpoint_url().is_some())
            .build();
        Some(S3Bodies::new(
            aws_sdk_s3::Client::from_conf(config),
            bucket.clone(),
            self.inline_max,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conditional_put_is_durable_on_412_and_tried_again_on_409() {
        for (status, code, answer) in [
            (Some(412), Some("PreconditionFailed"), PutAnswer::Durable),
            (Some(412), None, PutAnswer::Durable),
            (None, Some("PreconditionFailed"), PutAnswer::Durable),
            (
                Some(409),
                Some("ConditionalRequestConflict"),
                PutAnswer::Conflict,
            ),
            (Some(409), Some("OperationAborted"), PutAnswer::Conflict),
            (Some(409), None, PutAnswer::Conflict),
            (
                None,
                Some("ConditionalRequestConflict"),
                PutAnswer::Conflict,
            ),
            (Some(409), Some("BucketAlreadyExists"), PutAnswer::Failed),
            (Some(503), Some("SlowDown"), PutAnswer::Failed),
            (Some(403), Some("AccessDenied"), PutAnswer::Failed),
            (None, None, PutAnswer::Failed),
        ] {
            assert_eq!(put_answer(status, code), answer, "{status:?} {code:?}");
        }
    }

    #[test]
    fn json_bodies_are_compressed_and_read_back_byte_for_byte() {
        let body = br#"{"id":"evt_1","type":"checkout.session.completed","data":{"object":{"metadata":{"a":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}}}"#;
        let stored = StoredBody::inline(body);
        assert!(
            matches!(&stored, StoredBody::Inline { zstd: true, bytes } if bytes.len() < body.len())
        );
        let mut item = Item::from([(
            crate::store::schema::BODY_BYTES.to_string(),
            AttributeValue::N(body.len().to_string()),
        )]);
        stored.put_into(&mut item);
        assert_eq!(get_s(&item, BODY_ENC), Some(ZSTD));
        let original = original_of(Some(&item));
        assert_eq!(original, Original::Body(body.to_vec()));
        decode_item(&mut item).unwrap();
        assert_eq!(
            item.get(BODY),
            Some(&AttributeValue::B(Blob::new(body.to_vec())))
        );
        assert!(!item.contains_key(BODY_ENC));
    }

    #[test]
    fn bodies_compression_would_grow_stay_raw_and_old_items_read_as_they_are() {
        let tiny = b"{}";
        let stored = StoredBody::inline(tiny);
        assert_eq!(
            stored,
            StoredBody::Inline {
                bytes: tiny.to_vec(),
                zstd: false
            }
        );
        // An item of the old format: the raw body, its SHA-256, no `body_enc`.
        let mut old = Item::from([
            (
                BODY.to_string(),
                AttributeValue::B(Blob::new(b"raw".to_vec())),
            ),
            (
                BODY_SHA256.to_string(),
                AttributeValue::S(BodyDigest::of(b"raw").to_hex()),
            ),
        ]);
        assert_eq!(original_of(Some(&old)), Original::Body(b"raw".to_vec()));
        decode_item(&mut old).unwrap();
        assert_eq!(
            old.get(BODY),
            Some(&AttributeValue::B(Blob::new(b"raw".to_vec())))
        );
    }

    #[test]
    fn a_body_in_s3_is_compared_by_its_digest() {
        let digest = BodyDigest::of(b"big");
        let mut item = Item::new();
        StoredBody::External {
            key: "k".into(),
            digest,
        }
        .put_into(&mut item);
        assert_eq!(get_s(&item, BODY_REF), Some("k"));
        let original = original_of(Some(&item));
        assert_eq!(original, Original::Digest(digest));
        assert!(!original.differs_from(b"big"));
        assert!(original.differs_from(b"other"));
        assert_eq!(original_of(None), Original::Unknown);
    }

    #[test]
    fn a_damaged_frame_or_an_unknown_encoding_is_an_error() {
        let mut item = Item::from([
            (
                BODY.to_string(),
                AttributeValue::B(Blob::new(b"not zstd".to_vec())),
            ),
            (BODY_ENC.to_string(), AttributeValue::S(ZSTD.into())),
        ]);
        assert!(decode_item(&mut item).is_err());
        let mut item = Item::from([(BODY_ENC.to_string(), AttributeValue::S("lz9".into()))]);
        assert!(decode_item(&mut item).unwrap_err().contains("unknown"));
    }

    mod fuzz {
        //! The stored body's decoding on any bytes: a damaged or made-up zstd frame, a wrong
        //! `body_bytes`, an unknown `body_enc`, a body as S3 returned it: an error or the body,
        //! never a panic, and never more than `body_bytes` bytes out of a sized frame.
        use super::*;
        use proptest::prelude::*;

        fn item_with(body: Vec<u8>, enc: Option<AttributeValue>, len: Option<u64>) -> Item {
            let mut item = Item::from([(BODY.to_string(), AttributeValue::B(Blob::new(body)))]);
            if let Some(enc) = enc {
                item.insert(BODY_ENC.into(), enc);
            }
            if let Some(len) = len {
                item.insert(
                    crate::store::schema::BODY_BYTES.into(),
                    AttributeValue::N(len.to_string()),
                );
            }
            item
        }

        proptest! {
            #![proptest_config(crate::fuzz::config(128))]

            #[test]
            fn fuzz_bodies_round_trip_and_damaged_frames_are_errors(
                body in prop_oneof![
                    prop::collection::vec(any::<u8>(), 0..600),
                    "[a-z\\{\\}\":, ]{0,600}".prop_map(String::into_bytes),
                ],
                flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 0..4),
                cut in prop::option::of(any::<prop::sample::Index>()),
                claimed in prop::option::of(0u64..2048),
            ) {
                let stored = StoredBody::inline(&body);
                let StoredBody::Inline { bytes: mut frame, zstd } = stored.clone() else {
                    unreachable!("inline")
                };
                let mut item = Item::new();
                item.insert(
                    crate::store::schema::BODY_BYTES.into(),
                    AttributeValue::N(body.len().to_string()),
                );
                stored.put_into(&mut item);
                decode_item(&mut item).unwrap();
                prop_assert_eq!(item.get(BODY), Some(&AttributeValue::B(Blob::new(body.clone()))));
                if !zstd {
                    return Ok(());
                }
                for (at, bit) in &flips {
                    let at = at.index(frame.len());
                    frame[at] ^= 1 << bit;
                }
                if let Some(cut) = cut {
                    frame.truncate(cut.index(frame.len() + 1));
                }
                let sized = decompress(&frame, claimed.map(|n| n as usize));
                if let (Ok(out), Some(n)) = (&sized, claimed) {
                    prop_assert!(out.len() as u64 <= n);
                }
                let _ = decompress(&frame, None);
                let mut item = item_with(frame, Some(AttributeValue::S(ZSTD.into())), claimed);
                let _ = decode_item(&mut item);
                let _ = original_of(Some(&item));
            }

        }

        proptest! {
            #![proptest_config(crate::fuzz::config(128))]

            #[test]
            fn fuzz_any_stored_bytes_and_encoding_are_read_or_refused(
                body in prop::collection::vec(any::<u8>(), 0..300),
                enc in prop::option::of(prop_oneof![
                    Just(AttributeValue::S(ZSTD.into())),
                    "[ -~]{0,6}".prop_map(AttributeValue::S),
                    Just(AttributeValue::Null(true)),
                    Just(AttributeValue::N("1".into())),
                ]),
                claimed in prop::option::of(prop_oneof![0u64..1024, Just(u64::MAX)]),
                magic in any::<bool>(),
            ) {
                // A zstd frame header (magic number) in front makes the decoder read further.
                let mut bytes = if magic { vec![0x28, 0xb5, 0x2f, 0xfd] } else { Vec::new() };
                bytes.extend(body);
                let plain = enc.is_none();
                // As the item reads after its S3 body was fetched (`body_ref`, the fetched bytes).
                let mut item = item_with(bytes.clone(), enc.clone(), claimed.filter(|n| *n < 1024));
                item.insert(BODY_REF.into(), AttributeValue::S("src/evt/abc".into()));
                let result = decode_item(&mut item);
                if plain {
                    prop_assert!(result.is_ok());
                    prop_assert_eq!(item.get(BODY), Some(&AttributeValue::B(Blob::new(bytes.clone()))));
                }
                let _ = original_of(Some(&item));
                let mut image = serde_dynamo::Item::from(std::collections::HashMap::from([(
                    BODY.to_string(),
                    serde_dynamo::AttributeValue::B(bytes),
                )]));
                if enc.is_some() {
                    image.insert(BODY_ENC.to_string(), serde_dynamo::AttributeValue::S(ZSTD.into()));
                }
                if let Some(n) = claimed {
                    image.insert(
                        crate::store::schema::BODY_BYTES.to_string(),
                        serde_dynamo::AttributeValue::N(n.min(1023).to_string()),
                    );
                }
                let _ = decode_image(&mut image);
            }
        }
    }
}
