//! OpenMetrics text for cluster monitoring: each sweep's latency, peak,
//! size at peak, n_1/2, noise and CPU cost, and each matrix cell's latency
//! and bandwidth, as gauges labelled `host`, `peer`, `transport` and `mode`;
//! every matrix's completeness and start time (`mode="matrix"`, `host` and
//! `peer` its first and last node), so that a staleness alert covers
//! matrices too; and `wulf_build_info`, the wulf and the result schemas
//! that wrote the file.
//!
//! Written for node_exporter's textfile collector fed by a cron job, so:
//! only gauges (the collector reads the Prometheus text format 0.0.4,
//! which knows no `info` or `stateset` types, and ignores `# UNIT` and
//! `# EOF` as comments); no sample timestamps (the collector refuses
//! them), the measurement time is a gauge of its own instead; base units
//! (seconds, bytes) as Prometheus names them. One series per label set:
//! when several results share one (repetitions, yesterday's run beside
//! today's), the one started last wins, so a file stays valid whatever it
//! is given. Families come in a fixed order and samples sorted by labels,
//! so the same results always give the same bytes.
//!
//! The text itself (escaping, number formatting, `# EOF`) is the
//! `prometheus-client` crate's encoder; this module only decides what to
//! say.

use std::collections::BTreeMap;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::analysis::Analysis;
use crate::report::export::{Exporter, GivenFile};
use crate::report::input::ReportInput;
use crate::report::summary::summary_row;
use crate::result::matrix::MATRIX_SCHEMA_VERSION;
use crate::result::matrix::{CellFigures, Figure, MatrixFigures, MatrixResult};
use crate::result::SweepResult;
use crate::result::{NPB_KIND, SCHEMA_VERSION, STUDY_KIND};

/// The labels of a series: host, peer, transport, mode (every figure), or
/// those of `wulf_build_info`.
type Labels = Vec<(&'static str, String)>;

/// The OpenMetrics text of `sweeps` and `matrices`, ending in `# EOF`.
pub fn to_openmetrics(sweeps: &[SweepResult], matrices: &[MatrixFigures]) -> String {
    let matrices: Vec<(&MatrixResult, &[CellFigures])> = matrices
        .iter()
        .map(|m| (&m.result, m.figures.as_slice()))
        .collect();
    to_openmetrics_figures(sweeps, &matrices)
}

/// [`to_openmetrics`] of matrices given with their cells' figures apart
/// (while measuring, a matrix's cells are on disk and only their figures
/// in memory).
pub fn to_openmetrics_figures(
    sweeps: &[SweepResult],
    matrices: &[(&MatrixResult, &[CellFigures])],
) -> String {
    let mut families = sweep_families();
    let mut sweeps: Vec<&SweepResult> = sweeps.iter().collect();
    // RFC 3339 in UTC sorts as text; stable, so later arguments win ties.
    sweeps.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    for r in sweeps {
        add_sweep(&mut families, r);
    }
    let mut link = link_families();
    let mut matrices: Vec<&(&MatrixResult, &[CellFigures])> = matrices.iter().collect();
    matrices.sort_by(|a, b| a.0.started_at.cmp(&b.0.started_at));
    for (m, cells) in matrices {
        add_matrix_run(&mut families, m);
        add_matrix(&mut link, m, cells);
    }
    families.extend(link);
    families.push(build_info());
    families.retain(|f| !f.samples.is_empty());
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(families)));
    let mut text = String::new();
    // Writing into a String cannot fail; the encoder's Result is fmt's.
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("formatting into a String does not fail");
    text
}

/// One metric family: its name (without the unit), help, unit and samples.
#[derive(Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    samples: BTreeMap<Labels, f64>,
}

impl Family {
    fn new(name: &'static str, unit: Option<Unit>, help: &'static str) -> Family {
        Family {
            name,
            help,
            unit,
            samples: BTreeMap::new(),
        }
    }

    /// Record `value` for `labels`, replacing an earlier one; values that
    /// do not exist (no points) or are not numbers are left out, not
    /// written as NaN that a dashboard would plot as a gap anyway.
    fn set(&mut self, labels: &Labels, value: Option<f64>) {
        if let Some(v) = value.filter(|v| v.is_finite()) {
            self.samples.insert(labels.clone(), v);
        }
    }
}

// Indices into `sweep_families()`, in its order.
const LATENCY: usize = 0;
const PEAK: usize = 1;
const PEAK_SIZE: usize = 2;
const N_HALF: usize = 3;
const NOISY: usize = 4;
const POINTS: usize = 5;
const COMPLETE: usize = 6;
const STARTED: usize = 7;
const CPU_PER_BYTE: usize = 8;
const CPU_PER_MESSAGE: usize = 9;

fn sweep_families() -> Vec<Family> {
    let bytes_per_s = || Some(Unit::Other("bytes_per_second".into()));
    vec![
        Family::new(
            "wulf_latency",
            Some(Unit::Seconds),
            "Median one-way time of the smallest message size swept.",
        ),
        Family::new(
            "wulf_peak_throughput",
            bytes_per_s(),
            "Highest median throughput over the sizes swept (bidir counts both directions).",
        ),
        Family::new(
            "wulf_peak_message",
            Some(Unit::Bytes),
            "Message size at which the peak throughput occurs.",
        ),
        Family::new(
            "wulf_n_half",
            Some(Unit::Bytes),
            "n_1/2: the smallest size swept whose throughput reaches half the peak.",
        ),
        Family::new(
            "wulf_noisy_points",
            None,
            "Sizes whose median interval missed the precision target within the budget.",
        ),
        Family::new("wulf_points", None, "Sizes measured."),
        Family::new(
            "wulf_complete",
            None,
            "1 when the sweep or matrix ran to its end, 0 when it was cut short.",
        ),
        Family::new(
            "wulf_measurement_start",
            Some(Unit::Seconds),
            "When the sweep or matrix started, seconds since the Unix epoch.",
        ),
        Family::new(
            "wulf_cpu_per_byte",
            Some(Unit::Seconds),
            "CPU time (user + system) of both ends per byte moved, at the peak's message size.",
        ),
        Family::new(
            "wulf_cpu_per_message",
            Some(Unit::Seconds),
            "CPU time (user + system) of both ends per message, at the latency's message size.",
        ),
    ]
}

fn add_sweep(f: &mut [Family], r: &SweepResult) {
    let labels: Labels = vec![
        ("host", r.host.hostname.clone()),
        ("peer", r.placement.server_host.clone()),
        ("transport", r.transport.clone()),
        ("mode", r.mode.to_string()),
    ];
    let row = summary_row("", r, &Analysis::of(r));
    f[LATENCY].set(&labels, row.latency_ns.map(|ns| ns / 1e9));
    f[PEAK].set(&labels, row.peak_bits_per_s.map(|b| b / 8.0));
    f[PEAK_SIZE].set(&labels, row.peak_bytes.map(|b| b as f64));
    f[N_HALF].set(&labels, row.n_half_bytes.map(|b| b as f64));
    f[NOISY].set(&labels, Some(row.noisy_points as f64));
    f[POINTS].set(&labels, Some(row.points as f64));
    f[COMPLETE].set(&labels, Some(if r.complete { 1.0 } else { 0.0 }));
    f[STARTED].set(&labels, unix_seconds(&r.started_at));
    f[CPU_PER_BYTE].set(&labels, row.cpu_ns_per_byte.map(|ns| ns / 1e9));
    // The latency's point: the smallest size swept.
    let smallest = r.points.iter().min_by_key(|p| p.bytes);
    let per_message = smallest.map(|p| p.cpu_client.ns_per_message + p.cpu_server.ns_per_message);
    f[CPU_PER_MESSAGE].set(&labels, per_message.map(|ns| ns / 1e9));
}

/// A matrix as a whole: complete or not, and when it started, among the
/// sweeps' families of the same name.
fn add_matrix_run(f: &mut [Family], m: &MatrixResult) {
    let node = |n: Option<&crate::result::matrix::MatrixNode>| {
        n.map(|n| n.name.clone()).unwrap_or_default()
    };
    let labels: Labels = vec![
        ("host", node(m.nodes.first())),
        ("peer", node(m.nodes.last())),
        ("transport", m.via.clone()),
        ("mode", "matrix".to_string()),
    ];
    f[COMPLETE].set(&labels, Some(if m.complete { 1.0 } else { 0.0 }));
    f[STARTED].set(&labels, unix_seconds(&m.started_at));
}

/// `wulf_build_info`: 1, labelled with the wulf version and the schema
/// versions of the results it writes (a dashboard tells which wulf
/// measured, and an alert a node left on an old one).
fn build_info() -> Family {
    let mut f = Family::new(
        "wulf_build_info",
        None,
        "1, labelled with the version of the wulf that wrote this file and of its result schemas.",
    );
    let labels: Labels = vec![
        ("version", env!("CARGO_PKG_VERSION").to_string()),
        ("schema", SCHEMA_VERSION.to_string()),
        ("matrix_schema", MATRIX_SCHEMA_VERSION.to_string()),
    ];
    f.set(&labels, Some(1.0));
    f
}

// Indices into `link_families()`.
const LINK_LATENCY: usize = 0;
const LINK_THROUGHPUT: usize = 1;
const LINK_NOISY: usize = 2;
const LINK_FAILED: usize = 3;

fn link_families() -> Vec<Family> {
    vec![
        Family::new(
            "wulf_link_latency",
            Some(Unit::Seconds),
            "Matrix cell: median one-way time of the ping-pong at the matrix's latency size.",
        ),
        Family::new(
            "wulf_link_throughput",
            Some(Unit::Other("bytes_per_second".into())),
            "Matrix cell: median stream throughput from host to peer at the matrix's bandwidth size.",
        ),
        Family::new(
            "wulf_link_noisy",
            None,
            "Matrix cell: 1 when the point's interval missed the precision target.",
        ),
        Family::new(
            "wulf_link_failed",
            None,
            "Matrix cell: 1 when the cell could not be measured (its node missing or lost).",
        ),
    ]
}

fn add_matrix(f: &mut [Family], m: &MatrixResult, cells: &[CellFigures]) {
    let name = |i: usize| {
        m.nodes
            .get(i)
            .map(|n| n.name.clone())
            .unwrap_or_else(|| format!("node{i}"))
    };
    for cell in cells {
        let labels = |mode: &str| -> Labels {
            vec![
                ("host", name(cell.from)),
                ("peer", name(cell.to)),
                ("transport", m.via.clone()),
                ("mode", mode.to_string()),
            ]
        };
        let (ping, stream) = (labels("pingpong"), labels("stream"));
        f[LINK_LATENCY].set(&ping, cell.latency_ns().map(|ns| ns / 1e9));
        f[LINK_THROUGHPUT].set(&stream, cell.bits_per_s().map(|b| b / 8.0));
        f[LINK_NOISY].set(&ping, noisy(cell.latency));
        f[LINK_NOISY].set(&stream, noisy(cell.bandwidth));
        f[LINK_FAILED].set(&stream, Some(failed(cell)));
    }
}

fn noisy(p: Option<Figure>) -> Option<f64> {
    p.map(|p| if p.noisy { 1.0 } else { 0.0 })
}

fn failed(cell: &CellFigures) -> f64 {
    if cell.error.is_some() {
        1.0
    } else {
        0.0
    }
}

/// An RFC 3339 time as seconds since the epoch; `None` when a file holds
/// something else (the figure is then left out, not invented).
fn unix_seconds(rfc3339: &str) -> Option<f64> {
    let t = humantime::parse_rfc3339_weak(rfc3339).ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}

/// The families, encoded in their own order (a registry's `Family` keeps
/// its series in a hash map, which would shuffle them between runs).
#[derive(Debug)]
struct Families(Vec<Family>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            let mut metric =
                encoder.encode_descriptor(f.name, f.help, f.unit.as_ref(), MetricType::Gauge)?;
            for (labels, value) in &f.samples {
                ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

/// `--format openmetrics`: [`to_openmetrics`] of the sweeps and link
/// matrices (collective results have no gauges yet and are left out).
pub struct Openmetrics;

impl Exporter for Openmetrics {
    fn name(&self) -> &'static str {
        "openmetrics"
    }

    /// An NPB result or a study summary (the first given) is a usage error
    /// naming the file: monitoring wants figures per link, which they lack.
    fn admit(&self, files: &[GivenFile<'_>]) -> anyhow::Result<()> {
        match files
            .iter()
            .find(|f| f.kind.is_some_and(|k| k == NPB_KIND || k == STUDY_KIND))
        {
            Some(f) => Err(crate::error::usage(format!(
                "{} is an NPB result or a study summary: the openmetrics format holds sweep \
                 results and link matrices; NPB results and studies go into the html or markdown formats",
                f.path.display()
            ))),
            None => Ok(()),
        }
    }

    fn export(&self, input: &ReportInput<'_>) -> anyhow::Result<Vec<u8>> {
        if !input.npb.is_empty() || !input.studies.is_empty() {
            return Err(crate::error::usage(
                "the openmetrics format holds sweep results and link matrices; NPB results \
                 and studies go into the html or markdown formats",
            ));
        }
        Ok(to_openmetrics(input.sweeps, input.matrices).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> SweepResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        crate::result::read_result(&path).unwrap()
    }

    #[test]
    fn one_series_per_label_set_and_the_newest_wins() {
        let old = fixture("tcp-pingpong.json");
        let mut new = old.clone();
        new.started_at = "2099-01-01T00:00:00Z".into();
        new.complete = false;
        // Given newest first: still the newest wins.
        let text = to_openmetrics(&[new, old], &[]);
        assert_eq!(text.matches("wulf_complete{").count(), 1, "{text}");
        assert!(text.contains("wulf_complete{host="), "{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with("wulf_complete{"))
            .unwrap();
        assert!(line.ends_with(" 0.0"), "{line}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn label_values_are_escaped_and_missing_figures_left_out() {
        let mut r = fixture("unix-pingpong.json");
        r.host.hostname = "a\"b\\c\nd".into();
        r.points.clear();
        r.summary = crate::result::Summary::from_points(&r.points);
        let text = to_openmetrics(&[r], &[]);
        assert!(text.contains(r#"host="a\"b\\c\nd""#), "{text}");
        assert!(!text.contains("wulf_latency_seconds{"), "{text}");
        assert!(text.contains("wulf_points{"), "{text}");
    }

    #[test]
    fn nothing_to_say_is_still_a_valid_exposition() {
        let text = to_openmetrics(&[], &[]);
        assert!(text.starts_with("# HELP wulf_build_info "), "{text}");
        assert_eq!(
            text.lines().filter(|l| !l.starts_with('#')).count(),
            1,
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn build_info_names_the_version_and_schemas() {
        let text = to_openmetrics(&[], &[]);
        let line = text
            .lines()
            .find(|l| l.starts_with("wulf_build_info{"))
            .unwrap();
        assert!(
            line.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))),
            "{line}"
        );
        assert!(
            line.contains(&format!("schema=\"{SCHEMA_VERSION}\"")),
            "{line}"
        );
        assert!(line.ends_with(" 1.0") || line.ends_with(" 1"), "{line}");
    }

    #[test]
    fn sweeps_carry_their_cpu_cost() {
        let r = fixture("tcp-pingpong.json");
        let text = to_openmetrics(std::slice::from_ref(&r), &[]);
        let row = summary_row("", &r, &Analysis::of(&r));
        let want = row.cpu_ns_per_byte.unwrap() / 1e9;
        let line = text
            .lines()
            .find(|l| l.starts_with("wulf_cpu_per_byte_seconds{"))
            .unwrap();
        let got: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!((got - want).abs() <= want * 1e-12, "{line}: want {want}");
        assert!(text.contains("wulf_cpu_per_message_seconds{"), "{text}");
    }
}
