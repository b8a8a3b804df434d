//! The answer's sentences and their terminal form.

use super::*;

#[test]
fn the_terminal_answer_is_the_pages_without_markup_wrapped() {
    assert_eq!(
        plain("<b>shm</b>, 1.7&times; its floor; <code>--budget</code> &amp; A&#39;s &lt;x&gt;"),
        "shm, 1.7x its floor; --budget & A's <x>"
    );
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tcp-pingpong.json"
    );
    let r = crate::result::read_result(std::path::Path::new(path)).unwrap();
    let results = [r.clone(), r];
    let text = answer_text(&results);
    assert!(
        text.iter().any(|t| t.starts_with("Lowest latency: ")),
        "{text:?}"
    );
    assert!(text.iter().all(|t| !t.contains('<')), "{text:?}");
    let screen = answer_screen(&results);
    assert!(screen.starts_with("\nThe answer"), "{screen}");
    for line in screen.lines() {
        let one_word = line.split_whitespace().count() <= 2;
        assert!(line.len() <= SCREEN_WIDTH || one_word, "too wide: {line}");
    }
    // Every sentence is on the screen whole, only its spacing changed.
    let joined = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    for t in &text {
        assert!(
            joined.contains(&t.split_whitespace().collect::<Vec<_>>().join(" ")),
            "{t}"
        );
    }
    assert_eq!(answer_screen(&[]), "");
}

#[test]
fn a_lead_within_the_intervals_is_said_to_be_within_noise() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tcp-pingpong.json"
    );
    let r = crate::result::read_result(std::path::Path::new(path)).unwrap();
    let a = Analysis::of(&r);
    let row = crate::report::summary::summary_row("a", &r, &a);
    // The same run twice: no size has a winner beyond noise.
    let twins = [
        Entry {
            label: "a",
            result: &r,
            row: &row,
        },
        Entry {
            label: "b",
            result: &r,
            row: &row,
        },
    ];
    let text = fastest_by_size(&twins).unwrap();
    assert!(text.contains("(within noise)"), "{text}");
    // Ten times slower: the other leads everywhere, beyond noise.
    let mut slow = r.clone();
    for p in &mut slow.points {
        p.median_ns *= 10.0;
        p.ci_low_ns *= 10.0;
        p.ci_high_ns *= 10.0;
    }
    let apart = [
        Entry {
            label: "fast",
            result: &r,
            row: &row,
        },
        Entry {
            label: "slow",
            result: &slow,
            row: &row,
        },
    ];
    let text = fastest_by_size(&apart).unwrap();
    assert_eq!(
        text, "Fastest by size: <b>fast</b> from 1 B to 256 KiB.",
        "{text}"
    );
    assert_eq!(
        fastest_by_size(&apart[..1]),
        None,
        "one result: nothing to compare"
    );
}

#[test]
fn a_single_size_led_by_another_is_folded_into_its_neighbours() {
    let leads = [
        (1, 0, true),
        (2, 0, true),
        (4, 1, false),
        (8, 0, true),
        (16, 1, true),
        (32, 1, true),
    ];
    assert_eq!(ranges(&leads), vec![(1, 8, 0, true), (16, 32, 1, true)]);
    let noisy = [(1, 0, false), (2, 0, false), (4, 0, true)];
    assert_eq!(ranges(&noisy), vec![(1, 4, 0, false)]);
    assert!(ranges(&[]).is_empty());
}

/// A warm-cache peak never stands against a limit unmarked, and
/// against memcpy the cold result is quoted where one exists.
#[test]
fn warm_cache_peaks_are_marked_against_the_limits() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tcp-pingpong.json"
    );
    let mut r = crate::result::read_result(std::path::Path::new(path)).unwrap();
    for p in &mut r.points {
        let mut l = p.limits.unwrap_or_default();
        l.memcpy_bits_per_s = Some(1e12);
        p.limits = Some(l);
    }
    let a = Analysis::of(&r);
    let mut cold = crate::report::summary::summary_row("cold", &r, &a);
    cold.warm_cache = false;
    let mut warm = cold.clone();
    warm.warm_cache = true;
    // The warm run's peak is twice the cold one's.
    warm.peak_bits_per_s = cold.peak_bits_per_s.map(|b| 2.0 * b);
    let warm_only = [Entry {
        label: "shm",
        result: &r,
        row: &warm,
    }];
    let text = against_limits(&warm_only).unwrap();
    assert!(text.contains("(shm, warm cache)"), "{text}");
    let both = [
        Entry {
            label: "shm",
            result: &r,
            row: &warm,
        },
        Entry {
            label: "shm --nocache",
            result: &r,
            row: &cold,
        },
    ];
    let text = against_limits(&both).unwrap();
    assert!(text.contains("(shm --nocache)"), "{text}");
    assert!(!text.contains("warm cache"), "{text}");
}

/// The advice to measure larger sizes rests on the latency's share of the
/// time at the largest size (issue 49's tcp sweep: 8 MiB in 14 ms against
/// alpha 46 us, a 0.3% share, was told it was "still latency-bound").
#[test]
fn larger_sizes_are_advised_from_the_latency_share_at_the_largest() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tcp-pingpong.json"
    );
    let base = crate::result::read_result(std::path::Path::new(path)).unwrap();
    // alpha 46 us at the smallest size, `largest_ns` at 8 MiB.
    let sweep = |largest_ns: f64| {
        let mut r = base.clone();
        r.points.truncate(2);
        r.points[0].bytes = 1;
        r.points[0].median_ns = 46e3;
        r.points[1].bytes = 8 << 20;
        r.points[1].median_ns = largest_ns;
        r
    };
    let advice = |r: &SweepResult| {
        let a = Analysis::of(r);
        let row = crate::report::summary::summary_row("tcp", r, &a);
        to_change(&[Entry {
            label: "tcp",
            result: r,
            row: &row,
        }])
        .unwrap_or_default()
    };
    let saturated = sweep(14e6);
    assert_eq!(
        crate::report::summary::latency_share_at_largest(&saturated).map(|(b, s)| (b, s < 0.004)),
        Some((8 << 20, true))
    );
    assert!(
        !advice(&saturated).contains("larger sizes"),
        "{}",
        advice(&saturated)
    );
    // 46 us of 100 us at the largest: latency-bound, said with its share.
    let short = sweep(100e3);
    let text = advice(&short);
    assert!(
        text.contains("measure larger sizes for tcp (latency 46% of the time at 8 MiB)"),
        "{text}"
    );
}
