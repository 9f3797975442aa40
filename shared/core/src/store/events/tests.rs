use super::*;

fn pos(ms: i64, id: &str) -> Position {
    Position::parse(&format!("{ms:013}#stripe#{id}")).unwrap()
}

#[test]
fn a_position_is_checked_and_names_its_message() {
    let p = pos(1_796_032_800_123, "evt_1#x");
    assert_eq!(p.as_str(), "1796032800123#stripe#evt_1#x");
    let key = p.key().unwrap();
    assert_eq!(
        (key.source.as_str(), key.event_id.as_str()),
        ("stripe", "evt_1#x")
    );
    for bad in [
        "",
        "12345",
        "179603280012x#stripe#evt_1",
        "1796032800123stripe#evt_1",
        "1796032800123#stripe",
        "1796032800123#Not A Source#evt_1",
        "1796032800123#stripe#",
    ] {
        assert!(Position::parse(bad).is_err(), "{bad:?} accepted");
    }
    assert!(time_bound(5).as_str() < pos(5, "a").as_str());
    assert!(pos(4, "zzz") < pos(5, "a"), "time first");
}

#[test]
fn entries_past_the_furthest_frontier_wait_for_the_next_page() {
    // Shard A was read to its end; shard B stopped at 50 (everything older in B is unseen).
    let a = ShardRead {
        found: vec![pos(90, "a"), pos(40, "a2"), pos(10, "a3")],
        frontier: None,
    };
    let b = ShardRead {
        found: vec![pos(80, "b"), pos(50, "b2")],
        frontier: Some(pos(50, "b2")),
    };
    let (shown, next) = merge(vec![a.clone(), b.clone()], Direction::Older, 10);
    assert_eq!(shown, vec![pos(90, "a"), pos(80, "b"), pos(50, "b2")]);
    assert_eq!(next, Some(pos(50, "b2")), "a2 and a3 come on the next page");
    let (shown, next) = merge(vec![a, b], Direction::Older, 2);
    assert_eq!(shown, vec![pos(90, "a"), pos(80, "b")]);
    assert_eq!(next, Some(pos(80, "b")));
}

/// A partition as DynamoDB answers a query: the first `limit` entries past the range evaluated,
/// those matching returned, the last evaluated named when more remain.
fn query_shard(entries: &[(Position, bool)], q: &EventQuery, limit: usize) -> ShardRead {
    let mut inside: Vec<&(Position, bool)> = entries.iter().filter(|(p, _)| q.admits(p)).collect();
    inside.sort_by(|x, y| x.0.cmp(&y.0));
    if q.direction() == Direction::Older {
        inside.reverse();
    }
    let evaluated = &inside[..inside.len().min(limit)];
    ShardRead {
        found: evaluated
            .iter()
            .filter(|(_, m)| *m)
            .map(|(p, _)| p.clone())
            .collect(),
        frontier: (inside.len() > limit).then(|| evaluated[limit - 1].0.clone()),
    }
}

fn walk(
    shards: &[Vec<(Position, bool)>],
    rows: usize,
    dir: Direction,
    start: Option<(Direction, Position)>,
) -> Vec<Vec<Position>> {
    let mut q = EventQuery {
        rows,
        from: start,
        ..EventQuery::default()
    };
    let mut pages = Vec::new();
    for _ in 0..1000 {
        let reads = shards
            .iter()
            .map(|s| query_shard(s, &q, rows + 1))
            .collect();
        let Some((shown, older, newer)) = arrange(&q, reads) else {
            break;
        };
        pages.push(shown);
        let next = if dir == Direction::Older {
            older
        } else {
            newer
        };
        match next {
            Some(p) => q.from = Some((dir, p)),
            None => break,
        }
    }
    pages
}

#[test]
fn paging_shows_every_match_once_in_order_whatever_the_filter() {
    // 4 partitions, 300 entries, many sharing a millisecond (a batch's parts), 1 in 7 matching.
    let mut shards = vec![Vec::new(); 4];
    let mut all = Vec::new();
    for i in 0..300_i64 {
        let p = pos(1_000 + i / 5, &format!("evt_{i:03}"));
        let matching = i % 7 == 0;
        shards[(i * 31 % 4) as usize].push((p.clone(), matching));
        if matching {
            all.push(p);
        }
    }
    all.sort();
    all.reverse();
    for rows in [1, 5, 10] {
        let pages = walk(&shards, rows, Direction::Older, None);
        assert!(pages.iter().all(|p| p.len() <= rows));
        let seen: Vec<Position> = pages.concat();
        assert_eq!(seen, all, "older pages of {rows}");
        // Back from the oldest match: newer pages give the same entries, each once.
        let oldest = all.last().unwrap().clone();
        let back = walk(
            &shards,
            rows,
            Direction::Newer,
            Some((Direction::Newer, oldest.clone())),
        );
        let mut seen: Vec<Position> = back.iter().rev().flat_map(|p| p.iter().cloned()).collect();
        seen.push(oldest);
        let mut expected = all.clone();
        expected.sort();
        expected.reverse();
        // The walk back ends where the newest are: arrange hands that to the first page.
        assert!(seen.len() <= expected.len());
        assert_eq!(
            &expected[expected.len() - seen.len()..],
            &seen[..],
            "newer pages of {rows}"
        );
    }
}

#[test]
fn the_previous_page_is_the_one_before() {
    let shards: Vec<Vec<(Position, bool)>> = vec![(0..30)
        .map(|i| (pos(i, &format!("e{i:02}")), true))
        .collect()];
    let q = |from| EventQuery {
        rows: 10,
        from,
        ..EventQuery::default()
    };
    let page = |q: &EventQuery| arrange(q, shards.iter().map(|s| query_shard(s, q, 11)).collect());
    let (first, older, newer) = page(&q(None)).unwrap();
    assert_eq!(first.first(), Some(&pos(29, "e29")));
    assert_eq!(newer, None, "the first page has no previous one");
    let (second, _, back) = page(&q(Some((Direction::Older, older.unwrap())))).unwrap();
    assert_eq!(second.first(), Some(&pos(19, "e19")));
    assert_eq!(second.len(), 10);
    // From the second page, newer than its first row: the first page again, flagged as the
    // newest (None: the caller shows the first page).
    assert!(page(&q(Some((Direction::Newer, back.unwrap())))).is_none());
    // From the third, newer: the second.
    let (third, _, back) = page(&q(Some((Direction::Older, pos(10, "e10"))))).unwrap();
    assert_eq!(third.first(), Some(&pos(9, "e09")));
    let (again, older, newer) = page(&q(Some((Direction::Newer, back.unwrap())))).unwrap();
    assert_eq!(again, second);
    assert_eq!(older, Some(pos(10, "e10")));
    assert_eq!(newer, Some(pos(19, "e19")));
}
