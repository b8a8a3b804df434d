//! The report's treatment of the machine's limits and of events, on the
//! fixed results in tests/fixtures: the in-process baselines are drawn as
//! limits and left out of the highlights, memcpy gets its memory-hierarchy
//! chart, intra-node transports their charts against memcpy and the
//! cache-line floor, the throughput axis switches to log when the curves
//! span more than two decades, and only confirmed events are marked on the
//! charts (all stay listed).

use std::path::{Path, PathBuf};

use wulf::analysis::{confirm, Analysis};
use wulf::report;
use wulf::result::{read_result, Confirmation, Limits, RemeasuredPoint, SweepResult};

fn fixture(name: &str) -> SweepResult {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    read_result(&path).unwrap()
}

/// The unix fixture with the limits an intra-node sweep records attached:
/// the memcpy fixture's bandwidth at each size (nearest size measured) and
/// a 120 ns cache-line floor.
fn unix_with_limits(memcpy: &SweepResult) -> SweepResult {
    let mut r = fixture("unix-pingpong.json");
    for p in &mut r.points {
        let nearest = memcpy
            .points
            .iter()
            .min_by_key(|m| m.bytes.abs_diff(p.bytes))
            .unwrap();
        p.limits = Some(Limits {
            memcpy_bits_per_s: Some(nearest.bits_per_s),
            floor_ns: Some(120.0),
            // A core-to-core copy at a third of memcpy's rate.
            c2c_bits_per_s: Some(nearest.bits_per_s / 3.0),
            c2c_two_copy_bits_per_s: Some(nearest.bits_per_s / 6.0),
        });
    }
    r
}

/// The `<figure id=ID ...>...</figure>` of `html`, if present.
fn figure<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let start = html.find(&format!("<figure id={id}"))?;
    let end = html[start..].find("</figure>")? + start;
    Some(&html[start..end])
}

#[test]
fn baselines_are_limits_not_competitors() {
    let memcpy = fixture("memcpy-stream.json");
    let unix = unix_with_limits(&memcpy);
    let tcp = fixture("tcp-pingpong.json");
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&[
        memcpy.clone(),
        tcp,
        unix,
    ]))
    .unwrap();

    // Highlights name transports only, although memcpy has the lowest
    // "latency" and the highest peak of the three.
    let highlights = &html[html.find("<ul class=highlights>").unwrap()..];
    let highlights = &highlights[..highlights.find("</ul>").unwrap()];
    assert!(!highlights.contains("memcpy stream"), "{highlights}");
    // In the summary it is marked as a limit.
    assert!(html.contains("memcpy stream <span class=dim"));

    // On the throughput chart memcpy is the grey limit line; the transports
    // are the curves.
    let t = figure(&html, "throughput").expect("throughput figure");
    assert!(t.contains("memcpy stream (limit)"));
    assert_eq!(t.matches("<svg").count(), 2, "linear and log versions");
    assert!(t.contains("throughput [Gbit/s]") && t.contains("throughput [Gbit/s, log scale]"));
    assert!(t.contains("name=tscale value=lin") && t.contains("name=tscale value=log"));
    // The other transport charts do not show memcpy at all.
    for id in ["signature", "saturation", "cpu"] {
        assert!(!figure(&html, id).unwrap().contains("memcpy"), "{id}");
    }
    // The cache-line floor on the latency chart (from the unix limits).
    assert!(figure(&html, "latency")
        .unwrap()
        .contains("cache-line floor (120 ns, limit)"));

    // memcpy's memory hierarchy, with the cache sizes of its host marked.
    let m = figure(&html, "memory").expect("memory-hierarchy chart");
    assert!(m.contains("memcpy bandwidth [Gbit/s]"));
    for cache in memcpy
        .host
        .caches
        .iter()
        .flatten()
        .filter(|c| c.kind != "Instruction")
    {
        let label = format!(
            "L{} {}",
            cache.level,
            wulf::units::format_bytes(cache.size_bytes)
        );
        assert!(m.contains(&label), "{label} not marked");
    }
    // The intra-node transport against memcpy and against the floor; tcp
    // carries no limits and is not drawn there.
    let f = figure(&html, "memcpy-fraction").expect("memcpy fraction chart");
    // Log axes: the shares span orders of magnitude (issue 49).
    assert!(f.contains("throughput / memcpy at that size [%, log scale]"));
    assert!(f.contains("unix pingpong") && !f.contains("tcp pingpong"));
    let c = figure(&html, "c2c-fraction").expect("c2c efficiency chart");
    assert!(c.contains("throughput / core-to-core single copy [%, log scale]"));
    assert!(c.contains("unix pingpong") && !c.contains("tcp pingpong"));
    let l = figure(&html, "floor-multiple").expect("floor multiple chart");
    assert!(l.contains("cache-line floor"));
    assert!(l.contains("unix pingpong") && !l.contains("tcp pingpong"));
}

#[test]
fn a_report_without_baselines_has_no_limit_charts() {
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&[fixture(
        "tcp-pingpong.json",
    )]))
    .unwrap();
    for id in [
        "memory",
        "memcpy-fraction",
        "c2c-fraction",
        "floor-multiple",
    ] {
        assert!(figure(&html, id).is_none(), "{id}");
    }
    assert!(!figure(&html, "throughput").unwrap().contains("(limit)"));
}

#[test]
fn throughput_axis_is_log_when_curves_span_two_decades() {
    let tcp = fixture("tcp-pingpong.json");
    let html =
        report::html::to_html(&report::ReportInput::of_sweeps(std::slice::from_ref(&tcp))).unwrap();
    assert!(html.contains("<figure id=throughput data-scale=lin>"));
    // The same path 500 times slower beside it: its curve would lie flat
    // on the bottom of a linear axis.
    let mut slow = tcp.clone();
    slow.options.nocache = true;
    for p in &mut slow.points {
        p.median_ns *= 500.0;
        p.ci_low_ns *= 500.0;
        p.ci_high_ns *= 500.0;
        p.bits_per_s /= 500.0;
    }
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&[tcp, slow])).unwrap();
    assert!(html.contains("<figure id=throughput data-scale=log>"));
    assert!(html.contains("value=log checked"));
}

/// The result with a confirmation block whose fresh trials repeat the
/// first ones: every candidate event is confirmed.
fn confirmed_everything(mut r: SweepResult) -> SweepResult {
    let events = confirm::events(&Analysis::of(&r));
    let bytes: Vec<u64> = r.points.iter().map(|p| p.bytes).collect();
    let sizes = confirm::sizes_to_remeasure(&bytes, &events);
    let points = r
        .points
        .iter()
        .filter(|p| sizes.contains(&p.bytes))
        .map(|p| RemeasuredPoint {
            bytes: p.bytes,
            trials: p.trials,
            median_ns: p.median_ns,
            ci_low_ns: p.ci_low_ns,
            ci_high_ns: p.ci_high_ns,
            noisy: false,
            slow_trials: 0,
        })
        .collect();
    r.confirmation = Some(Confirmation {
        budget_s: 0.2,
        wall_s: 0.2,
        points,
        events: Vec::new(),
    });
    r
}

/// Event marks (D1, S2...) in an SVG (plotters puts a text's content on
/// a line of its own).
fn marks(svg: &str) -> usize {
    svg.lines()
        .map(str::trim)
        .filter(|l| {
            l.len() > 1 && l.starts_with(['D', 'S']) && l[1..].chars().all(|c| c.is_ascii_digit())
        })
        .count()
}

#[test]
fn only_confirmed_events_are_marked_on_the_charts() {
    let unix = fixture("unix-pingpong.json");
    // No confirmation pass in the file: events are listed, none marked.
    let html = report::html::to_html(&report::ReportInput::of_sweeps(std::slice::from_ref(&unix)))
        .unwrap();
    let listed = html.matches("<tr><td>D").count() + html.matches("<tr><td>S").count();
    assert!(listed > 0, "the fixture has candidate events");
    assert!(html.contains("no confirmation pass in this result"));
    let t = figure(&html, "throughput").unwrap();
    assert_eq!(marks(t), 0, "unconfirmed event marked");

    // Every event confirmed: marked.
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&[confirmed_everything(
        unix,
    )]))
    .unwrap();
    assert!(html.contains("<b>confirmed</b> by fresh trials"));
    let t = figure(&html, "throughput").unwrap();
    assert!(marks(t) > 0, "confirmed event not marked");
}
