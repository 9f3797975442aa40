use super::*;

const MIN: i64 = 60_000;

fn head() -> Head<'static> {
    Head {
        id: "c",
        title: "Events per minute",
        desc: "by status",
        half: false,
    }
}

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

#[test]
fn axes_end_at_one_two_or_five_times_a_power_of_ten() {
    for (max, top) in [
        (0.0, 1.0),
        (-3.0, 1.0),
        (f64::NAN, 1.0),
        (1.0, 1.0),
        (3.0, 5.0),
        (7.0, 10.0),
        (11.0, 20.0),
        (0.3, 0.5),
        (2_000.0, 2_000.0),
        (2_001.0, 5_000.0),
    ] {
        assert_eq!(nice_max(max), top, "{max}");
    }
}

#[test]
fn a_scale_maps_its_ends_and_a_flat_range_to_its_start() {
    let s = Scale {
        lo: 0.0,
        hi: 10.0,
        from: 100.0,
        to: 0.0,
    };
    assert_eq!((s.at(0.0), s.at(10.0), s.at(5.0)), (100.0, 0.0, 50.0));
    let flat = Scale { hi: 0.0, ..s };
    assert_eq!(flat.at(3.0), 100.0);
}

#[test]
fn one_rect_per_nonzero_status_and_minute_stacked_in_order() {
    let w = Window::last(3 * MIN - 1, 3 * MIN, MIN);
    let ok = [2, 0, 1];
    let failed = [0, 0, 3];
    let svg = stacked_bars(
        &head(),
        &w,
        &[
            Stack {
                name: "processed",
                color: "#2e9d57",
                counts: &ok,
            },
            Stack {
                name: "failed",
                color: "#c0392b",
                counts: &failed,
            },
        ],
        None,
    )
    .into_string();
    assert_eq!(count(&svg, "<rect "), 3, "{svg}");
    assert_eq!(count(&svg, r##"data-status="processed""##), 2);
    assert_eq!(count(&svg, r##"data-status="failed" data-count="3""##), 1);
    // The tallest bar (4) sets the axis's top at 5: the last minute's failed part sits on its
    // processed part: from 1 up to 4 of 5.
    let plot = HEIGHT - BOTTOM - TOP;
    let y4 = px(HEIGHT - BOTTOM - plot * 4.0 / 5.0);
    assert!(svg.contains(&format!(r##"y="{y4}""##)), "{svg}");
    assert!(svg.contains(r##"role="img" aria-labelledby="c-title c-desc""##));
    assert!(svg.contains(r##"<title id="c-title">Events per minute</title>"##));
    assert!(svg.contains("<title>00:02 UTC: 3 failed</title>"));
    assert!(!svg.contains("unread"));
}

#[test]
fn the_unread_part_of_a_capped_read_is_a_band() {
    let w = Window::last(3 * MIN - 1, 3 * MIN, MIN);
    let svg = stacked_bars(&head(), &w, &[], Some(MIN)).into_string();
    assert_eq!(count(&svg, r##"<rect class="unread""##), 1, "{svg}");
    assert!(svg.contains("not read: before 00:01 UTC"));
    // A cut at or before the window's start shows nothing.
    let svg = stacked_bars(&head(), &w, &[], Some(0)).into_string();
    assert!(!svg.contains("unread"));
}

#[test]
fn empty_and_all_zero_series_draw_axes_only() {
    let w = Window::last(3 * MIN - 1, 3 * MIN, MIN);
    let zeros = [0, 0, 0];
    let svg = stacked_bars(
        &head(),
        &w,
        &[Stack {
            name: "processed",
            color: "#2e9d57",
            counts: &zeros,
        }],
        None,
    )
    .into_string();
    assert_eq!(count(&svg, "<rect"), 0);
    // The axis still reads 0 to 1, not NaN.
    assert!(svg.contains(">1</text>") && !svg.contains("NaN"), "{svg}");
    let svg = lines(&head(), (0, MIN), &[], None, &|v| format!("{v}")).into_string();
    assert_eq!(count(&svg, "<circle"), 0);
    assert!(!svg.contains("NaN"));
}

#[test]
fn every_text_is_escaped() {
    let w = Window::last(MIN - 1, MIN, MIN);
    let one = [1];
    let hostile = Head {
        id: "c",
        title: "<script>alert(1)</script>",
        desc: "\"><img src=x>",
        half: false,
    };
    let svg = stacked_bars(
        &hostile,
        &w,
        &[Stack {
            name: "<b>",
            color: "\"red",
            counts: &one,
        }],
        None,
    )
    .into_string();
    assert!(!svg.contains("<script>") && !svg.contains("<img") && !svg.contains("<b>"));
    assert!(svg.contains("&lt;script&gt;") && svg.contains("data-status=\"&lt;b&gt;\""));
    assert!(svg.contains("fill=\"&quot;red\""));
}

fn point(at: i64, value: f64) -> Point {
    Point {
        at,
        value,
        text: format!("{value} at {at}"),
    }
}

#[test]
fn a_line_has_a_dot_per_point_and_a_stepped_one_holds_its_value() {
    let straight = Line {
        name: "p50",
        color: "#2857c5",
        points: vec![point(0, 10.0), point(MIN, 20.0)],
        step: false,
    };
    let svg = lines(&head(), (0, MIN), &[straight], None, &|v| format!("{v} ms")).into_string();
    assert_eq!(count(&svg, "<circle"), 2);
    assert_eq!(count(&svg, "<polyline"), 1);
    // 0 → x 76, 60 s → x 712; 10 of 20 → the plot's middle, 20 → its top.
    assert!(svg.contains(r##"points="76.0,69.0 712.0,8.0""##), "{svg}");
    assert!(svg.contains("<title>10 at 0</title>"));
    assert!(svg.contains(">20 ms</text>"));

    let stepped = Line {
        name: "balance",
        color: "#2857c5",
        points: vec![point(0, 10.0), point(MIN, 20.0)],
        step: true,
    };
    let svg = lines(&head(), (0, MIN), &[stepped], None, &|v| format!("{v}")).into_string();
    assert!(
        svg.contains(r##"points="76.0,69.0 712.0,69.0 712.0,8.0""##),
        "{svg}"
    );
}

#[test]
fn one_point_is_a_dot_without_a_line_and_negatives_go_below_zero() {
    let one = Line {
        name: "rate",
        color: "#2857c5",
        points: vec![point(0, 100.0)],
        step: false,
    };
    let svg = lines(&head(), (0, MIN), &[one], Some(100.0), &|v| format!("{v}%")).into_string();
    assert_eq!((count(&svg, "<circle"), count(&svg, "<polyline")), (1, 0));
    assert!(svg.contains(">100%</text>"));
    let overdrawn = Line {
        name: "balance",
        color: "#2857c5",
        points: vec![point(0, 300.0), point(MIN, -150.0)],
        step: true,
    };
    let svg = lines(&head(), (0, MIN), &[overdrawn], None, &|v| format!("{v}")).into_string();
    // From −200 to 500: the ticks read −200, 150 and 500.
    assert!(
        svg.contains(">-200</text>") && svg.contains(">500</text>"),
        "{svg}"
    );
}

#[test]
fn a_small_chart_renders_exactly_so() {
    // A snapshot: one bucket, one bar of 1. Any change to the drawing shows here.
    let w = Window::last(MIN - 1, MIN, MIN);
    let one = [1];
    let svg = stacked_bars(
        &head(),
        &w,
        &[Stack {
            name: "processed",
            color: "#2e9d57",
            counts: &one,
        }],
        None,
    )
    .into_string();
    let expected = concat!(
        r##"<svg class="chart" id="c" data-chart="c" role="img" aria-labelledby="c-title c-desc" width="100%" viewBox="0 0 720 150" xmlns="http://www.w3.org/2000/svg">"##,
        r##"<title id="c-title">Events per minute</title><desc id="c-desc">by status</desc>"##,
        r##"<g class="axes" stroke="#dde2ea">"##,
        r##"<line x1="76.0" x2="712.0" y1="130.0" y2="130.0"></line>"##,
        r##"<line x1="76.0" x2="712.0" y1="69.0" y2="69.0"></line>"##,
        r##"<line x1="76.0" x2="712.0" y1="8.0" y2="8.0"></line></g>"##,
        r##"<g class="ticks" fill="#6b7483" font-size="10">"##,
        r##"<text x="72.0" y="133.0" text-anchor="end">0</text>"##,
        r##"<text x="72.0" y="72.0" text-anchor="end">0.5</text>"##,
        r##"<text x="72.0" y="11.0" text-anchor="end">1</text>"##,
        r##"<text x="76.0" y="145.0">00:00</text>"##,
        r##"<text x="394.0" y="145.0" text-anchor="middle">00:00</text>"##,
        r##"<text x="712.0" y="145.0" text-anchor="end">00:01 UTC</text></g>"##,
        r##"<g class="bars"><rect x="76.0" y="8.0" width="635.0" height="122.0" fill="#2e9d57" data-status="processed" data-count="1" data-at="0">"##,
        r##"<title>00:00 UTC: 1 processed</title></rect></g></svg>"##,
    );
    assert_eq!(svg, expected);
}
