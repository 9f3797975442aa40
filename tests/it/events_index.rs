//! The events index on DynamoDB Local (a table made from `template.yaml`): messages written by
//! the ingest path's own write are listed a page at a time, newest first, each once, by the
//! cursor both ways, with the filters within the page and the time bounds in the key; and the
//! template's index is the one the code queries.

use inbox_core::domain::{EventId, EventType, MessageKey, SourceName};
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::events::{Direction, Position};
use inbox_core::store::schema::{EVENTS_INDEX, LIST_AT, LIST_SHARD};
use inbox_core::store::{EventIndex as _, EventQuery, Inbox as _, NewMessage};
use integration_tests::{create_table, sdk_config, table_definition, unique};

const T0: i64 = 1_796_032_800_000;

fn message(i: i64) -> NewMessage {
    let source = if i % 3 == 0 { "github" } else { "stripe" };
    NewMessage {
        key: MessageKey::new(
            SourceName::parse(source).unwrap(),
            EventId::parse(&format!("evt_{i:03}")).unwrap(),
        ),
        event_type: Some(EventType::parse("invoice.paid").unwrap()),
        // Four at each millisecond: ties are ordered by source and id.
        received_at_ms: T0 + i / 4,
        body: br#"{"ok":true}"#.to_vec(),
        body_digest: None,
        headers: Vec::new(),
        provider_id: (i == 77).then(|| EventId::parse("prov_77").unwrap()),
        unidentified: None,
        batch: None,
    }
}

/// Every page from the first by `older`, then back by `newer`: (ids older, ids back newer).
async fn walk(store: &DynamoTable, base: &EventQuery) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let ids = |p: &inbox_core::store::EventPage| -> Vec<String> {
        p.messages.iter().map(|m| m.event_id.to_string()).collect()
    };
    let mut pages = Vec::new();
    let mut q = base.clone();
    let mut newest_cursor = Vec::new();
    loop {
        let page = store.page(&q).await.unwrap();
        assert!(page.read_units > 0.0, "DynamoDB reports what a page read");
        assert!(page.messages.len() <= q.rows);
        pages.push(ids(&page));
        newest_cursor.push(page.newer.clone());
        match page.older {
            Some(c) => q.from = Some((Direction::Older, c)),
            None => break,
        }
    }
    // Back from the last page by its `newer` cursor, until the first page.
    let mut back = Vec::new();
    let mut cursor = newest_cursor.last().cloned().flatten();
    while let Some(c) = cursor {
        let page = store
            .page(&EventQuery {
                from: Some((Direction::Newer, c)),
                ..base.clone()
            })
            .await
            .unwrap();
        back.push(ids(&page));
        cursor = page.newer;
    }
    (pages, back)
}

#[tokio::test]
async fn pages_of_the_index_show_each_match_once_newest_first_both_ways() {
    let client = aws_sdk_dynamodb::Client::new(&sdk_config().await);
    let table = unique("events-index-");
    create_table(&client, &table).await;
    let store = DynamoTable::new(client.clone(), table.clone());
    for i in 0..120 {
        store.put_if_absent(&message(i)).await.unwrap();
    }
    let expected = |keep: &dyn Fn(i64) -> bool| -> Vec<String> {
        let mut v: Vec<(Position, String)> = (0..120)
            .filter(|i| keep(*i))
            .map(|i| {
                let m = message(i);
                (
                    Position::parse(&inbox_core::store::schema::list_at(
                        m.received_at_ms,
                        &m.key,
                    ))
                    .unwrap(),
                    m.key.event_id.to_string(),
                )
            })
            .collect();
        v.sort();
        v.reverse();
        v.into_iter().map(|(_, id)| id).collect()
    };

    // Everything, pages of 7: 18 pages (17 of 7, one of 1), each once, newest first.
    let all = EventQuery {
        rows: 7,
        ..EventQuery::default()
    };
    let (pages, back) = walk(&store, &all).await;
    assert_eq!(pages.concat(), expected(&|_| true));
    assert!(
        pages.iter().rev().skip(1).all(|p| p.len() == 7),
        "{pages:?}"
    );
    // Back newer from the last page: the pages before it, in reverse, the last one the first.
    let mut again: Vec<Vec<String>> = back.into_iter().rev().collect();
    again.push(pages.last().unwrap().clone());
    assert_eq!(
        again.concat(),
        pages.concat(),
        "newer pages give the same rows"
    );

    // A source (filtered within the page), and a time window (the key's range).
    let github = EventQuery {
        source: Some("github".into()),
        ..all.clone()
    };
    let (pages, _) = walk(&store, &github).await;
    assert_eq!(pages.concat(), expected(&|i| i % 3 == 0));
    let window = EventQuery {
        since: Some(T0 + 5),
        until: Some(T0 + 20),
        ..all.clone()
    };
    let (pages, _) = walk(&store, &window).await;
    assert_eq!(pages.concat(), expected(&|i| (20..80).contains(&i)));

    // The search: part of an event id, or a whole provider id.
    let page = store
        .page(&EventQuery {
            search: Some("prov_77".into()),
            rows: 50,
            ..EventQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(page.messages.len(), 1);
    assert_eq!(page.messages[0].event_id.as_str(), "evt_077");
    let page = store
        .page(&EventQuery {
            search: Some("_11".into()),
            rows: 50,
            ..EventQuery::default()
        })
        .await
        .unwrap();
    let ids: Vec<String> = page
        .messages
        .iter()
        .map(|m| m.event_id.to_string())
        .collect();
    assert_eq!(
        ids,
        expected(&|i| (110..120).contains(&i)),
        "ties by source, then id"
    );

    // DynamoDB Local counts the index as it is.
    assert_eq!(store.estimate().await.unwrap(), Some(120));
}

#[test]
fn the_template_declares_the_index_the_code_queries() {
    let def = table_definition();
    let index = def["GlobalSecondaryIndexes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["IndexName"] == EVENTS_INDEX)
        .expect("events-index in template.yaml");
    let keys: Vec<&str> = index["KeySchema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["AttributeName"].as_str().unwrap())
        .collect();
    assert_eq!(keys, vec![LIST_SHARD, LIST_AT]);
    let projected: Vec<&str> = index["Projection"]["NonKeyAttributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    // What the page filters on, and nothing that a transition changes.
    assert_eq!(
        projected,
        vec!["source", "event_id", "event_type", "provider_id"]
    );
}
