//! Where the scheduled catch-up keeps its [`Checkpoint`]: one small item beside the Stripe
//! account's token bucket (partition [`CHECKPOINT_PK`], the account's; sort key
//! `CATCH-UP#<source>`), read with one `GetItem` and written with one conditional `PutItem` at the
//! version read ([`Effect::Replace`]): two runs at once cannot both move it (the later write is a
//! conflict, left as it is: the next run's window covers it).

use super::window::Checkpoint;
use crate::client::BUCKET_PK;
use inbox_core::store::attr::{get_n, n, s};
use inbox_core::store::schema::{KIND, PK, SK, UPDATED_AT, VERSION};
use inbox_core::store::{Applied, Effect, Item, ItemStore, ItemWriter, StoreError};

/// The checkpoint's partition: the Stripe account's (the token bucket's).
pub const CHECKPOINT_PK: &str = BUCKET_PK;
/// Its sort key's prefix (then the inbox source the events are stored as).
pub const CHECKPOINT_SK_PREFIX: &str = "CATCH-UP#";
pub const CHECKPOINT_KIND: &str = "stripe_catch_up";
const COVERED_UNTIL: &str = "covered_until";
const RESUME_FROM: &str = "resume_from";

/// A checkpoint as read, with the version a write must find.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stored {
    pub checkpoint: Checkpoint,
    /// `None`: there is no item yet.
    pub version: Option<u64>,
}

fn sk(source: &str) -> String {
    format!("{CHECKPOINT_SK_PREFIX}{source}")
}

/// The checkpoint of `source` (the default one, a first run's, when there is none).
pub async fn load<S: ItemStore>(store: &S, source: &str) -> Result<Stored, StoreError> {
    let Some(item) = store.get_item(CHECKPOINT_PK, &sk(source)).await? else {
        return Ok(Stored::default());
    };
    Ok(Stored {
        checkpoint: Checkpoint {
            covered_until: get_n(&item, COVERED_UNTIL),
            resume_from: get_n(&item, RESUME_FROM),
        },
        version: get_n(&item, VERSION).and_then(|v| u64::try_from(v).ok()),
    })
}

/// Writes `next` in place of `read`: `Ok(false)` when another run moved it meanwhile (nothing
/// written).
pub async fn save<W: ItemWriter>(
    writer: &W,
    source: &str,
    read: &Stored,
    next: &Checkpoint,
    at_ms: i64,
) -> Result<bool, StoreError> {
    let mut item = Item::from([
        (PK.to_owned(), s(CHECKPOINT_PK)),
        (SK.to_owned(), s(sk(source))),
        (KIND.to_owned(), s(CHECKPOINT_KIND)),
        (UPDATED_AT.to_owned(), n(at_ms)),
    ]);
    if let Some(until) = next.covered_until {
        item.insert(COVERED_UNTIL.to_owned(), n(until));
    }
    if let Some(from) = next.resume_from {
        item.insert(RESUME_FROM.to_owned(), n(from));
    }
    let applied = writer
        .commit(vec![Effect::Replace {
            item,
            expected_version: read.version,
        }])
        .await?;
    Ok(applied == Applied::Done)
}
