//! The checks before anything is stored ([`Ingestor::verified`]), and what the handshakes of
//! `receive.rs` share with them: the request a scheme sees, the source by name.

use super::{decode_body, IngestError, IngestRequest, Ingestor};
use crate::clock::Clock;
use crate::signature::{Request, SignatureError};
use crate::sources::{Source, Sources};
use crate::store::Inbox;
use std::sync::Arc;

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    /// The checks before anything is stored, in their fixed order: method, source, body encoding
    /// and size, signature (re-reading the secrets once after a mismatch). Returns the sources
    /// the signature verified with, the decoded body and the time of arrival (ms).
    pub(super) async fn verified<'r>(
        &self,
        req: &IngestRequest<'r>,
    ) -> Result<(Arc<Sources>, std::borrow::Cow<'r, [u8]>, i64), IngestError> {
        if !req.method.eq_ignore_ascii_case("POST") {
            return Err(IngestError::MethodNotAllowed(
                req.method.chars().take(16).collect(),
            ));
        }
        if req.source.is_empty() {
            return Err(IngestError::NoSource);
        }
        let now_ms = self.clock.now_millis();
        let mut sources = self.sources.for_request(now_ms).await;
        source_of(&sources, req.source)?;
        let body = decode_body(req.body, req.body_is_base64, self.max_body_bytes)?;
        let now_secs = now_ms.div_euclid(1000);
        match verify(&sources, req, &body, now_secs).await {
            Err(IngestError::Signature(SignatureError::Mismatch)) => {
                // The provider may have moved to a secret stored since the last read.
                let Some(fresh) = self.sources.after_mismatch(now_ms).await else {
                    return Err(SignatureError::Mismatch.into());
                };
                verify(&fresh, req, &body, now_secs).await?;
                sources = fresh;
            }
            other => other?,
        }
        Ok((sources, body, now_ms))
    }
}

/// Verifies `req`'s signature with its source in `sources`.
async fn verify(
    sources: &Sources,
    req: &IngestRequest<'_>,
    body: &[u8],
    now_secs: i64,
) -> Result<(), IngestError> {
    let source = source_of(sources, req.source)?;
    source
        .scheme
        .verify(scheme_request(req, body, now_secs))
        .resolve()
        .await?;
    Ok(())
}

/// What a scheme sees of `req` (to verify it, or to recognize a handshake).
pub(super) fn scheme_request<'a>(
    req: &IngestRequest<'a>,
    body: &'a [u8],
    now_secs: i64,
) -> Request<'a> {
    let request = Request::new(req.headers, body, now_secs);
    match req.source_ip {
        Some(ip) => request.with_source_ip(ip),
        None => request,
    }
}

/// The source called `name`, or the 404.
pub(super) fn source_of<'a>(sources: &'a Sources, name: &str) -> Result<&'a Source, IngestError> {
    sources.get(name).ok_or_else(|| {
        // Echo the name only when it is a plausible source name (never arbitrary input).
        let shown = crate::domain::SourceName::parse(name)
            .map(|s| s.to_string())
            .unwrap_or_default();
        IngestError::UnknownSource(shown)
    })
}
