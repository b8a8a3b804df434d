//! Ratios within rounds and their range.

use super::*;
use crate::study::tables::tests::in_round as at;

fn pick<'a>(t: &'a str) -> impl Fn(&StudyCaseResult) -> bool + 'a {
    move |c| c.transport == t
}

#[test]
fn a_ratio_is_taken_within_each_round_and_names_a_winner_only_when_all_agree() {
    // Both drift together from round to round: within each round the
    // ratio is steady though the figures move 3-fold.
    let cases = vec![
        at("a", "fe", 1, 10.0, 90.0),
        at("b", "fe", 1, 20.0, 45.0),
        at("a", "fe", 2, 30.0, 90.0),
        at("b", "fe", 2, 63.0, 44.0),
        at("a", "fe", 3, 11.0, 90.0),
        at("b", "fe", 3, 21.0, 46.0),
    ];
    let r = ratio(&cases, LATENCY, "fe", ("b", &pick("b")), ("a", &pick("a"))).unwrap();
    assert_eq!(r.per_round.len(), 3);
    assert!((r.median - 2.0).abs() < 1e-9, "{r:?}");
    assert!((r.low - 21.0 / 11.0).abs() < 1e-9 && (r.high - 2.1).abs() < 1e-9);
    assert_eq!(r.coverage, 0.75);
    assert_eq!(r.faster.as_deref(), Some("a"), "a takes less time");
    let p = ratio(&cases, PEAK, "fe", ("b", &pick("b")), ("a", &pick("a"))).unwrap();
    assert_eq!(p.faster.as_deref(), Some("a"), "a moves more");
    // A ratio whose rounds straddle 1 names no winner, and is warned of.
    let mixed = vec![
        at("a", "fe", 1, 10.0, 90.0),
        at("b", "fe", 1, 0.8, 90.0),
        at("a", "fe", 2, 10.0, 90.0),
        at("b", "fe", 2, 13.0, 90.0),
    ];
    let r = ratio(&mixed, LATENCY, "fe", ("b", &pick("b")), ("a", &pick("a"))).unwrap();
    assert_eq!(r.faster, None);
    let w = ratio_warnings("fe-vs-ge", std::slice::from_ref(&r));
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[1].contains("reaches 1: neither is faster"), "{w:?}");
    let t = ratio_table("t", &[r]).unwrap();
    assert!(t.rows[0].label.contains("no winner over fe"), "{t:?}");
    assert_eq!(t.columns, ["fe median", "fe lowest", "fe highest"]);
    // One round: no interval, no winner.
    let one = ratio(
        &cases[..2],
        LATENCY,
        "fe",
        ("b", &pick("b")),
        ("a", &pick("a")),
    )
    .unwrap();
    assert_eq!((one.faster, one.coverage), (None, 0.0));
    assert!(ratio(&cases, LATENCY, "fe", ("c", &pick("c")), ("a", &pick("a"))).is_none());
}
