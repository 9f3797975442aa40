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
    let lte = NOW - SETTLE_SECS;
    // (checkpoint, created_gte, why)
    let table = [
        (cp(None, None), NOW - 72 * 3600, Start::First),
        (
            cp(Some(NOW - 3600), None),
            NOW - 3600 - OVERLAP_SECS,
            Start::AfterLast,
        ),
        (
            cp(Some(NOW - 3600), Some(NOW - 2 * DAY)),
            NOW - 2 * DAY,
            Start::Resume,
        ),
        (cp(None, Some(NOW - DAY)), NOW - DAY, Start::Resume),
        (
            cp(Some(NOW - 40 * DAY), None),
            NOW - 30 * DAY + RETENTION_SLACK_SECS,
            Start::Capped,
        ),
        (
            cp(None, Some(NOW - 31 * DAY)),
            NOW - 30 * DAY + RETENTION_SLACK_SECS,
            Start::Capped,
        ),
        // A clock that went back: never an inverted window.
        (cp(Some(NOW + 3600), None), lte, Start::AfterLast),
    ];
    for (checkpoint, gte, why) in table {
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
