//! The calendar: the table in the module docs, three years without drift, leap days, month ends,
//! the year boundary, and finding the charge due after a given time.

use super::*;
use jiff::civil::date;

fn dates(anchor: Date, every: Every, n: u32) -> Vec<Date> {
    let s = Schedule::new(anchor, every);
    (0..n).map(|k| s.nth(k).unwrap()).collect()
}

#[test]
fn the_documented_table() {
    assert_eq!(
        dates(date(2027, 1, 31), Every::Month, 4),
        [
            date(2027, 1, 31),
            date(2027, 2, 28),
            date(2027, 3, 31),
            date(2027, 4, 30)
        ]
    );
    assert_eq!(
        dates(date(2028, 1, 31), Every::Month, 4),
        [
            date(2028, 1, 31),
            date(2028, 2, 29),
            date(2028, 3, 31),
            date(2028, 4, 30)
        ]
    );
    assert_eq!(
        dates(date(2027, 12, 31), Every::Month, 4),
        [
            date(2027, 12, 31),
            date(2028, 1, 31),
            date(2028, 2, 29),
            date(2028, 3, 31)
        ]
    );
    assert_eq!(
        dates(date(2028, 2, 29), Every::Year, 5),
        [
            date(2028, 2, 29),
            date(2029, 2, 28),
            date(2030, 2, 28),
            date(2031, 2, 28),
            date(2032, 2, 29)
        ]
    );
}

/// Three years of monthly charges: every charge is on the anchor's day, or its month's last day
/// when the month is shorter; none drifts after a short month.
#[test]
fn three_years_of_month_ends_do_not_drift() {
    for day in [28, 29, 30, 31] {
        let anchor = date(2027, 1, day);
        for (k, d) in dates(anchor, Every::Month, 37).into_iter().enumerate() {
            let k = i8::try_from(k).unwrap();
            assert_eq!(
                i64::from(d.year()),
                2027 + i64::from(k / 12),
                "{anchor} #{k}"
            );
            assert_eq!(d.month(), k % 12 + 1, "{anchor} #{k}");
            assert_eq!(d.day(), day.min(d.days_in_month()), "{anchor} #{k}");
        }
    }
}

#[test]
fn mid_month_anchors_keep_their_day() {
    let all = dates(date(2027, 11, 15), Every::Month, 4);
    assert_eq!(
        all,
        [
            date(2027, 11, 15),
            date(2027, 12, 15),
            date(2028, 1, 15),
            date(2028, 2, 15)
        ]
    );
}

#[test]
fn charges_are_due_at_midnight_utc() {
    let s = Schedule::new(date(2027, 1, 31), Every::Month);
    // 2027-02-28T00:00:00Z
    assert_eq!(s.due_at(1), Some(Millis::new(1_803_772_800_000)));
}

#[test]
fn the_calendar_ends_at_year_9999() {
    let s = Schedule::new(date(9999, 11, 30), Every::Month);
    assert_eq!(s.nth(1), Some(date(9999, 12, 30)));
    assert_eq!(s.nth(2), None);
    assert_eq!(
        Schedule::new(date(2027, 1, 1), Every::Year).nth(u32::MAX),
        None
    );
}

#[test]
fn the_first_charge_due_at_or_after_a_time() {
    let s = Schedule::new(date(2027, 1, 31), Every::Month);
    let due = |k| s.due_at(k).unwrap();
    assert_eq!(s.first_due_at_or_after(Millis::new(0)), Some((0, due(0))));
    assert_eq!(s.first_due_at_or_after(due(0)), Some((0, due(0))));
    assert_eq!(
        s.first_due_at_or_after(Millis::new(due(0).get() + 1)),
        Some((1, due(1)))
    );
    // February's renewal paid on March 7th after retries: the next is still March 31st.
    let paid_late = Schedule::new(date(2027, 3, 7), Every::Month)
        .due_at(0)
        .unwrap();
    assert_eq!(s.first_due_at_or_after(paid_late), Some((2, due(2))));
    assert_eq!(s.nth(2), Some(date(2027, 3, 31)));
    for k in 0..40 {
        assert_eq!(s.first_due_at_or_after(due(k)), Some((k, due(k))));
        assert_eq!(
            s.first_due_at_or_after(Millis::new(due(k).get() + 1)),
            Some((k + 1, due(k + 1)))
        );
    }
}

#[test]
fn every_is_parsed_by_name() {
    assert_eq!(Every::parse("month"), Some(Every::Month));
    assert_eq!(Every::parse("year"), Some(Every::Year));
    assert_eq!(Every::parse("week"), None);
    assert_eq!(Every::Year.as_str(), "year");
}

proptest::proptest! {
    /// Any anchor, either period: each charge keeps the anchor's day (or its month's last), the
    /// k-th is k periods after the anchor's month, and the charge found at its own due time is
    /// itself.
    #[test]
    fn any_anchor_any_charge(
        year in 1970i16..2400,
        month in 1i8..=12,
        day in 1i8..=31,
        yearly in proptest::bool::ANY,
        k in 0u32..600,
    ) {
        let first = date(year, month, 1);
        let anchor = date(year, month, day.min(first.days_in_month()));
        let every = if yearly { Every::Year } else { Every::Month };
        let s = Schedule::new(anchor, every);
        let d = s.nth(k).unwrap();
        let months = i64::from(year) * 12 + i64::from(month) - 1
            + i64::from(k) * if yearly { 12 } else { 1 };
        proptest::prop_assert_eq!(i64::from(d.year()) * 12 + i64::from(d.month()) - 1, months);
        proptest::prop_assert_eq!(d.day(), anchor.day().min(d.days_in_month()));
        let due = s.due_at(k).unwrap();
        proptest::prop_assert_eq!(s.first_due_at_or_after(due), Some((k, due)));
        proptest::prop_assert_eq!(
            s.first_due_at_or_after(Millis::new(due.get() + 1)),
            Some((k + 1, s.due_at(k + 1).unwrap()))
        );
    }
}
