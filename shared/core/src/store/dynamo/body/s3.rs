//! Bodies above the inline limit, in an S3 bucket ([`S3Bodies`]): the conditional put of a
//! content-addressed key (412 and 409 sorted by [`put_answer`]), the read, the renewal a resend
//! makes, the expiry tag a failed message loses, and a body that is gone ([`BodyGone`]).

use super::super::classify;
use super::{EXPIRY_TAG_KEY, EXPIRY_TAG_VALUE};
use crate::domain::{BodyDigest, MessageKey};
use crate::store::StoreError;

/// How many times a conditional put that conflicted with another write of the same key is tried
/// again, and the pause before the first retry (doubling after each).
const PUT_CONFLICT_RETRIES: u32 = 3;
const PUT_CONFLICT_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// What a conditional (`If-None-Match: *`) `PutObject` of a content-addressed key answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PutAnswer {
    /// Written now, or already there (412: the key names the content, so the same bytes).
    Durable,
    /// Another write of the key was under way (409 `ConditionalRequestConflict`, or S3's older
    /// `OperationAborted`): S3 asks for the put to be tried again, which then answers 200 or 412.
    Conflict,
    /// Anything else: the store's error.
    Failed,
}

/// Sorts a conditional put's error by its HTTP status and S3 error code.
pub(crate) fn put_answer(status: Option<u16>, code: Option<&str>) -> PutAnswer {
    match (status, code) {
        (Some(412), _) | (_, Some("PreconditionFailed")) => PutAnswer::Durable,
        (Some(409), Some("ConditionalRequestConflict" | "OperationAborted") | None)
        | (_, Some("ConditionalRequestConflict")) => PutAnswer::Conflict,
        _ => PutAnswer::Failed,
    }
}

/// Bodies above the inline limit, in an S3 bucket.
#[derive(Debug, Clone)]
pub struct S3Bodies {
    client: aws_sdk_s3::Client,
    bucket: String,
    inline_max: usize,
}

impl S3Bodies {
    /// Bodies above `inline_max` raw bytes go to `bucket`.
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>, inline_max: usize) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            inline_max,
        }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Whether a body of `len` bytes goes to S3.
    pub fn takes(&self, len: usize) -> bool {
        len > self.inline_max
    }

    /// The content-addressed key of a message's body.
    pub fn key_of(key: &MessageKey, digest: &BodyDigest) -> String {
        format!("{}/{}/{}", key.source, key.event_id, digest.to_hex())
    }

    /// Writes `body` under `key` unless it is there (same key, same bytes), encrypted and
    /// tagged for expiry. A put that conflicted with another write of the key is tried again
    /// (up to [`PUT_CONFLICT_RETRIES`] times), as S3 asks: `Ok` only once the bytes are durable.
    pub async fn put(&self, key: &str, body: &[u8]) -> Result<(), StoreError> {
        let mut pause = PUT_CONFLICT_PAUSE;
        let mut retries = 0;
        loop {
            let Err(e) = self.put_once(key, body).await else {
                return Ok(());
            };
            let status = e.raw_response().map(|r| r.status().as_u16());
            let code = aws_sdk_s3::error::ProvideErrorMetadata::code(&e);
            match put_answer(status, code) {
                PutAnswer::Durable => return Ok(()),
                PutAnswer::Conflict if retries < PUT_CONFLICT_RETRIES => {
                    retries += 1;
                    tracing::info!(
                        retries,
                        "the body's S3 put conflicted with another write of it: trying again"
                    );
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                PutAnswer::Conflict | PutAnswer::Failed => return Err(classify(e)),
            }
        }
    }

    /// One conditional put of `body` under `key`.
    async fn put_once(
        &self,
        key: &str,
        body: &[u8],
    ) -> Result<
        aws_sdk_s3::operation::put_object::PutObjectOutput,
        aws_sdk_s3::error::SdkError<aws_sdk_s3::operation::put_object::PutObjectError>,
    > {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(aws_sdk_s3::primitives::ByteStream::from(body.to_vec()))
            .content_type("application/octet-stream")
            .server_side_encryption(aws_sdk_s3::types::ServerSideEncryption::Aes256)
            .tagging(format!("{EXPIRY_TAG_KEY}={EXPIRY_TAG_VALUE}"))
            .if_none_match("*")
            .send()
            .await
    }

    /// The body under `key`, as one buffer that deliveries share without copying. A body that is
    /// not there (expired, deleted) is [`StoreError::Unreadable`].
    pub async fn get(&self, key: &str) -> Result<bytes::Bytes, StoreError> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| gone_or(key, e))?;
        let bytes = out
            .body
            .collect()
            .await
            .map_err(|e| StoreError::Unavailable(Box::new(e)))?;
        Ok(bytes.into_bytes())
    }

    /// Makes the body under `key` live a whole retention from now, tagged for expiry again: a
    /// copy onto itself, which S3 dates now (the lifecycle rule counts from an object's date;
    /// a tag alone would not move it). For a replay or a resend of its message.
    pub async fn renew(&self, key: &str) -> Result<(), StoreError> {
        use aws_sdk_s3::types::{MetadataDirective, ServerSideEncryption, TaggingDirective};
        let source = format!(
            "{}/{}",
            self.bucket,
            percent_encoding::utf8_percent_encode(key, COPY_SOURCE)
        );
        self.client
            .copy_object()
            .bucket(&self.bucket)
            .key(key)
            .copy_source(source)
            // S3 copies an object onto itself only when something changes: the metadata is
            // replaced by the same.
            .metadata_directive(MetadataDirective::Replace)
            .content_type("application/octet-stream")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .tagging_directive(TaggingDirective::Replace)
            .tagging(format!("{EXPIRY_TAG_KEY}={EXPIRY_TAG_VALUE}"))
            .send()
            .await
            .map_err(|e| gone_or(key, e))?;
        Ok(())
    }

    /// Exempts the body under `key` from expiry (its message failed: it is kept until replayed
    /// or purged).
    pub async fn keep(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_object_tagging()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Deletes the body under `key` (its message was purged).
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }
}

/// What a copy source's key escapes (its `/` separate the key's parts and stay).
const COPY_SOURCE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The body is gone: the object is not there.
#[derive(Debug, thiserror::Error)]
#[error("the body in S3 under {0} is gone (expired after the retention, or deleted)")]
pub struct BodyGone(String);

/// An S3 error on the object `key`: a missing object is [`StoreError::Unreadable`], the rest
/// classified as any store error.
fn gone_or<E>(
    key: &str,
    e: aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> StoreError
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    use aws_sdk_s3::error::ProvideErrorMetadata as _;
    let status = e.raw_response().map(|r| r.status().as_u16());
    if e.code() == Some("NoSuchKey") || status == Some(404) {
        return StoreError::Unreadable(Box::new(BodyGone(key.to_owned())));
    }
    classify(e)
}
