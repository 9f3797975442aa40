use super::*;

const NOW: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

fn cp(covered_until: Option<i64>, resume_from: Option<i64>) -> Checkpoint {
    Checkpoint {
        covered_until,
        resume_from,
    }
}

#[test]
fn the_window_starts_as_its_table_says() {
    let settled = NOW - SETTLE_SECS;
    let oldest = NOW - 30 * DAY + RETENTION_SLACK_SECS;
    // (checkpoint, created_gte, created_lte, why)
    let table = [
        (cp(None, None), NOW - 3 * DAY, settled, Start::First),
        (
            cp(Some(NOW - 3600), None),
            NOW - 3600 - OVERLAP_SECS,
            settled,
            Start::AfterLast,
        ),
        (
            cp(Some(NOW - 3600), Some(NOW - 2 * DAY)),
            NOW - 2 * DAY,
            settled,
            Start::Resume,
        ),
        // A backlog: 3 days a run, oldest first.
        (
            cp(None, Some(NOW - 10 * DAY)),
            NOW - 10 * DAY,
            NOW - 7 * DAY,
            Start::Resume,
        ),
        (
            cp(Some(NOW - 20 * DAY), None),
            NOW - 20 * DAY - OVERLAP_SECS,
            NOW - 17 * DAY - OVERLAP_SECS,
            Start::AfterLast,
        ),
        (
            cp(Some(NOW - 40 * DAY), None),
            oldest,
            oldest + 3 * DAY,
            Start::Capped,
        ),
        (
            cp(None, Some(NOW - 31 * DAY)),
            oldest,
            oldest + 3 * DAY,
            Start::Capped,
        ),
        // A clock that went back: never an inverted window.
        (
            cp(Some(NOW + 3600), None),
            settled,
            settled,
            Start::AfterLast,
        ),
    ];
    for (checkpoint, gte, lte, why) in table {
        let w = window(&checkpoint, NOW);
        assert_eq!(
            (w.created_gte, w.created_lte, w.start),
            (gte, lte, why),
            "{checkpoint:?}"
        );
    }
}

#[test]
fn consecutive_windows_overlap_and_the_one_after_a_cut_short_run_resumes_where_it_stopped() {
    let first = window(&Checkpoint::default(), NOW);
    let done = after_run(&Checkpoint::default(), &first, Ended::Complete).unwrap();
    assert_eq!(done, cp(Some(NOW - SETTLE_SECS), None));
    // An hour later: from just before what the last run covered.
    let next = window(&done, NOW + 3600);
    assert!(
        next.created_gte < first.created_lte,
        "{next:?} overlaps {first:?}"
    );
    assert_eq!(next.created_gte, first.created_lte - OVERLAP_SECS);

    // Cut short at an event of two days ago: the covered time stays, the next run resumes there.
    let cut = after_run(&done, &next, Ended::StoppedAt(NOW - 100)).unwrap();
    assert_eq!(cut, cp(done.covered_until, Some(NOW - 100)));
    let resumed = window(&cut, NOW + 7200);
    assert_eq!(
        (resumed.created_gte, resumed.start),
        (NOW - 100, Start::Resume)
    );
    // ... and once that run completes, it covers up to its own end and forgets the resume point.
    let after = after_run(&cut, &resumed, Ended::Complete).unwrap();
    assert_eq!(after, cp(Some(NOW + 7200 - SETTLE_SECS), None));
}

#[test]
fn a_thirty_day_backlog_is_worked_through_in_windows_that_touch_and_end_now() {
    let mut checkpoint = cp(Some(NOW - 40 * DAY), None);
    let mut now = NOW;
    let mut covered = Vec::new();
    for _ in 0..20 {
        let w = window(&checkpoint, now);
        covered.push((w.created_gte, w.created_lte));
        checkpoint = after_run(&checkpoint, &w, Ended::Complete).unwrap_or(checkpoint);
        if w.created_lte == now - SETTLE_SECS {
            break;
        }
        now += 15 * 60;
    }
    assert_eq!(covered.len(), 11, "{covered:?}");
    for pair in covered.windows(2) {
        assert!(pair[1].0 <= pair[0].1, "no gap between {pair:?}");
    }
}

#[test]
fn the_checkpoint_never_moves_back_and_a_failed_listing_writes_nothing() {
    let ahead = cp(Some(NOW + 3600), None);
    let w = window(&ahead, NOW);
    assert_eq!(
        after_run(&ahead, &w, Ended::Complete),
        None,
        "unchanged: nothing to write"
    );
    assert_eq!(after_run(&ahead, &w, Ended::Nothing), None);
    let w = window(&Checkpoint::default(), NOW);
    assert_eq!(after_run(&Checkpoint::default(), &w, Ended::Nothing), None);
    // A stop before the window's start (an event Stripe listed older than asked) resumes at it.
    let stopped = after_run(&Checkpoint::default(), &w, Ended::StoppedAt(0)).unwrap();
    assert_eq!(stopped.resume_from, Some(w.created_gte));
}
