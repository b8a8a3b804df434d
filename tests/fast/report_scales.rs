//! The sweep charts read with many results: every result its own colour,
//! the legend below the plot rather than over the data, and logarithmic
//! axes where the data span decades (a slow transport at milliseconds
//! beside fast ones at microseconds once flattened them onto the axis).

use std::path::Path;

use wulf::report;
use wulf::report::chart::sweep::color_hex;
use wulf::result::{read_result, SweepResult};

fn fixture(name: &str) -> SweepResult {
    read_result(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// The `<figure id=ID ...>...</figure>` of `html` (also `report_floor`'s).
pub(crate) fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure id={id}"))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let end = html[start..].find("</figure>").unwrap() + start;
    &html[start..end]
}

/// `r` with every time multiplied by `f`.
fn slower(mut r: SweepResult, f: f64) -> SweepResult {
    for p in &mut r.points {
        for t in [
            &mut p.median_ns,
            &mut p.min_ns,
            &mut p.mean_ns,
            &mut p.ci_low_ns,
            &mut p.ci_high_ns,
            &mut p.p90_ns,
            &mut p.p99_ns,
        ] {
            *t *= f;
        }
        p.bits_per_s /= f;
    }
    r
}

#[test]
fn no_colour_repeats_among_forty_results() {
    let colours: Vec<String> = (0..40).map(color_hex).collect();
    for (i, c) in colours.iter().enumerate() {
        assert!(!colours[..i].contains(c), "colour {i} ({c}) repeats");
        // Not the limit lines' grey nor black.
        assert!(c != "#6E6E6E" && c != "#000000");
    }
}

#[test]
fn latency_and_signature_go_logarithmic_when_the_data_span_decades() {
    let (tcp, unix) = (fixture("tcp-pingpong.json"), fixture("unix-pingpong.json"));
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&[
        tcp.clone(),
        unix.clone(),
    ]))
    .unwrap();
    assert!(figure(&html, "latency").contains("one-way time [µs]"));
    assert!(figure(&html, "signature").contains("throughput [Gbit/s]\n"));
    // unix a thousand times slower: three decades apart.
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&[
        tcp,
        slower(unix, 1000.0),
    ]))
    .unwrap();
    assert!(figure(&html, "latency").contains("one-way time [µs, log scale]"));
    assert!(figure(&html, "signature").contains("throughput [Gbit/s, log scale]"));
}

#[test]
fn legends_sit_below_the_plot() {
    let results: Vec<SweepResult> = (0..12)
        .map(|i| {
            let mut r = fixture("tcp-pingpong.json");
            r.options.offset_bytes = i;
            r
        })
        .collect();
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&results)).unwrap();
    let fig = figure(&html, "saturation");
    let svg = &fig[fig.find("<svg").unwrap()..];
    let legend = svg
        .lines()
        .find(|l| l.starts_with("<rect") && l.contains("opacity=\"0.87\""))
        .expect("a legend box");
    let num = |key: &str| -> f64 {
        let at = legend.find(&format!(" {key}=\"")).unwrap() + key.len() + 3;
        legend[at..at + legend[at..].find('"').unwrap()]
            .parse()
            .unwrap()
    };
    // Plotters draws it at the plot's top; the group moves it below the
    // 420 px chart, and the SVG grows to hold its twelve lines.
    let shift = svg
        .split("<g transform=\"translate(0,")
        .nth(1)
        .expect("moved");
    let dy: f64 = shift[..shift.find(')').unwrap()].parse().unwrap();
    assert!(num("y") + dy >= 420.0, "legend top at {}", num("y") + dy);
    assert!(num("height") >= 12.0 * 12.0, "a line per result");
    let height: f64 = {
        let at = svg.find("height=\"").unwrap() + 8;
        svg[at..at + svg[at..].find('"').unwrap()].parse().unwrap()
    };
    assert!(
        height >= num("y") + dy + num("height"),
        "the SVG holds the legend"
    );
    assert!(
        !svg.contains("saturation 262141 B"),
        "labels of twelve results pile up"
    );
}
