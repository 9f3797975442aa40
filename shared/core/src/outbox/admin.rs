//! Managing destinations: add, change (pause, resume, disable, rotate a secret …), remove, read the
//! journal. Every change is ONE transaction: the destination item, conditioned on its version, and
//! a journal item naming who changed what (never a secret). Used by `inboxctl dest …` and by the
//! deliver function (a 410, the circuit breaker).

use super::destination::{Destination, DestinationError, DestinationId, JournalEntry};
use super::schema::*;
use crate::store::attr::{n, s};
use crate::store::schema::{PK, SK, VERSION};
use crate::store::{Applied, Effect, ItemStore, ItemWriter, StoreError};
use aws_sdk_dynamodb::types::{Delete, TransactWriteItem};

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Destination(#[from] DestinationError),
    #[error("no destination {0:?}")]
    Missing(String),
    #[error("destination {0:?} already exists")]
    Exists(String),
    #[error("destination {0:?} changed meanwhile; try again")]
    Conflict(String),
}

/// One destination.
pub async fn get<S: ItemStore>(
    store: &S,
    id: &DestinationId,
) -> Result<Option<Destination>, AdminError> {
    let item = store
        .get_item(DESTINATIONS_PK, &destination_sk(id.as_str()))
        .await?;
    Ok(item.map(Destination::from_item).transpose()?)
}

/// Every destination, by id.
pub async fn list<S: ItemStore>(store: &S) -> Result<Vec<Destination>, AdminError> {
    let items = store
        .query_items(DESTINATIONS_PK, DESTINATION_PREFIX)
        .await?;
    Ok(items
        .into_iter()
        .map(Destination::from_item)
        .collect::<Result<_, _>>()?)
}

/// Adds a new destination (never overwrites one); `allow_http` accepts `http://` URLs (local use).
pub async fn add<S: ItemWriter>(
    store: &S,
    d: &Destination,
    actor: &str,
    allow_http: bool,
) -> Result<(), AdminError> {
    d.validate(allow_http)?;
    let patterns: Vec<String> = d.patterns.iter().map(ToString::to_string).collect();
    let entry = JournalEntry::new(
        d.created_at,
        actor,
        "added",
        format!("url {}, patterns {}", d.url, patterns.join(" ")),
    );
    let effects = vec![
        Effect::Replace {
            item: d.to_item()?,
            expected_version: None,
        },
        Effect::Create(entry.to_item(&d.id)?),
    ];
    match store.commit(effects).await? {
        Applied::Done => Ok(()),
        _ => Err(AdminError::Exists(d.id.to_string())),
    }
}

/// Changes a destination: `change` edits it and says what it did (for the journal), or refuses;
/// the result is validated (URLs as stored are kept) and written if nobody changed it meanwhile.
pub async fn update<S: ItemStore + ItemWriter>(
    store: &S,
    id: &DestinationId,
    actor: &str,
    action: &str,
    now: i64,
    change: impl FnOnce(&mut Destination) -> Result<String, DestinationError>,
) -> Result<Destination, AdminError> {
    let Some(mut d) = get(store, id).await? else {
        return Err(AdminError::Missing(id.to_string()));
    };
    let version = d.version;
    let detail = change(&mut d)?;
    d.updated_at = now;
    d.validate(true)?;
    let effects = vec![
        Effect::Replace {
            item: d.to_item()?,
            expected_version: Some(version),
        },
        Effect::Create(JournalEntry::new(now, actor, action, detail).to_item(id)?),
    ];
    match store.commit(effects).await? {
        Applied::Done => {
            d.version = version + 1;
            Ok(d)
        }
        _ => Err(AdminError::Conflict(id.to_string())),
    }
}

/// Removes a destination (its journal stays, with the removal; its deliveries stay and fail when
/// next due).
pub async fn remove<S: ItemStore + ItemWriter>(
    store: &S,
    table: &str,
    id: &DestinationId,
    actor: &str,
    now: i64,
) -> Result<(), AdminError> {
    let Some(d) = get(store, id).await? else {
        return Err(AdminError::Missing(id.to_string()));
    };
    let delete = Delete::builder()
        .table_name(table)
        .key(PK, s(DESTINATIONS_PK))
        .key(SK, s(destination_sk(id.as_str())))
        .condition_expression("#version = :v")
        .expression_attribute_names("#version", VERSION)
        .expression_attribute_values(":v", n(d.version as i64))
        .build()
        .map_err(|e| StoreError::Rejected(Box::new(e)))?;
    let effects = vec![
        Effect::Raw(Box::new(
            TransactWriteItem::builder().delete(delete).build(),
        )),
        Effect::Create(
            JournalEntry::new(now, actor, "removed", format!("url was {}", d.url)).to_item(id)?,
        ),
    ];
    match store.commit(effects).await? {
        Applied::Done => Ok(()),
        _ => Err(AdminError::Conflict(id.to_string())),
    }
}

/// A destination's journal, oldest first.
pub async fn journal<S: ItemStore>(
    store: &S,
    id: &DestinationId,
) -> Result<Vec<JournalEntry>, AdminError> {
    let items = store
        .query_items(&destination_pk(id.as_str()), LOG_PREFIX)
        .await?;
    items
        .into_iter()
        .map(|i| {
            serde_dynamo::from_item(i)
                .map_err(|e| AdminError::Destination(DestinationError::Corrupt(e.to_string())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::destination::did;
    use crate::outbox::destination::DestinationState;
    use crate::outbox::pattern::Pattern;
    use crate::store::memory::MemoryStore;

    fn dest() -> Destination {
        Destination::new(
            &did("crm"),
            "https://crm.example.com/h",
            vec![Pattern::parse("*").unwrap()],
            None,
            1,
        )
    }

    #[tokio::test]
    async fn changes_are_versioned_and_journaled() {
        let store = MemoryStore::new();
        add(&store, &dest(), "ana", false).await.unwrap();
        assert!(matches!(
            add(&store, &dest(), "ana", false).await,
            Err(AdminError::Exists(_))
        ));
        let mut bad = dest();
        bad.id = did("other");
        bad.url = "http://x.example/".into();
        assert!(matches!(
            add(&store, &bad, "ana", false).await,
            Err(AdminError::Destination(_))
        ));
        let d = update(&store, &did("crm"), "bob", "paused", 5, |d| {
            d.state = DestinationState::Paused;
            d.reason = Some("maintenance".into());
            Ok("maintenance".into())
        })
        .await
        .unwrap();
        assert_eq!((d.state, d.version), (DestinationState::Paused, 1));
        let stored = get(&store, &did("crm")).await.unwrap().unwrap();
        assert_eq!(
            (stored.state, stored.version, stored.updated_at),
            (DestinationState::Paused, 1, 5)
        );
        let refused = update(&store, &did("crm"), "bob", "x", 6, |_| {
            Err(DestinationError::Invalid("no".into()))
        })
        .await;
        assert!(matches!(refused, Err(AdminError::Destination(_))));
        assert!(matches!(
            update(&store, &did("nope"), "bob", "x", 6, |_| Ok(String::new())).await,
            Err(AdminError::Missing(_))
        ));
        let log = journal(&store, &did("crm")).await.unwrap();
        let actions: Vec<_> = log
            .iter()
            .map(|e| (e.actor.as_str(), e.action.as_str()))
            .collect();
        assert_eq!(actions, vec![("ana", "added"), ("bob", "paused")]);
        assert!(
            !log.iter().any(|e| e.detail.contains("whsec_")),
            "the journal never holds a secret"
        );
        assert_eq!(list(&store).await.unwrap().len(), 1);
    }
}
