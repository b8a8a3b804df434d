//! `layers` (issue 47; after the old comparisons of MPI with the layer beneath
//! it: MVICH over M-VIA against MPICH over TCP, GAMMA and TIPC under Open
//! MPI): the same message through the kernel's sockets or plain shared
//! memory, through UCX and libfabric over them, and through each MPI over
//! those, side by side on one path: the loopback, shared memory, and a lab
//! link (`--link`). Each transport says where it sits on a path
//! (`Transport::layering`: at the bottom, or over another), so a new one
//! joins the study without an edit here.
//!
//! Full ping-pong sweeps in interleaved rounds, as `lean-stacks` runs them
//! ([`super::rounds`]): every row once per round; each row's latency,
//! peak and CPU per byte (both ends, at [`super::lean::CPU_BYTES`]) are
//! medians over the rounds, and its overhead over the row beneath it is
//! taken within each round (both met the same conditions): the latency
//! added (us), and the latency and peak ratios with their lowest and
//! highest round as the interval. Pure: the plan and the tables.

use super::rounds::{median, role, Figure, LATENCY, PEAK, ROUND_BUDGET_SHARE};
use super::{file_safe, StudyCase, StudyOptions};
use crate::lab::LinkRate;
use crate::result::{Mode, StudyCaseResult, StudyRatio, StudyRow, StudyTable};

/// One path of the study and its rows, bottom first.
#[derive(Debug, Clone, PartialEq)]
pub struct LayersGroup {
    /// The path (`loopback`, `shm`, or the lab link as named), and the
    /// link's rate (0 on this machine).
    pub link: LinkRate,
    /// Measured on this machine (no lab).
    pub local: bool,
    /// Each row: the transport and the one beneath it (None: the bottom).
    pub rows: Vec<(String, Option<String>)>,
}

/// Characters of an unavailable row's reason its label keeps.
const LABEL_REASON_CHARS: usize = 100;

/// MTU of the lab link's nodes (Ethernet's).
pub const LINK_MTU_BYTES: u32 = 1500;

/// Every row of every group once per round, rounds one after another
/// within a group; each sweep gets [`ROUND_BUDGET_SHARE`] of `budget_s`.
pub fn plan(o: &StudyOptions, sizes: &str, budget_s: f64) -> Vec<StudyCase> {
    let n = super::rounds::rounds(o.effort);
    let mut v = Vec::new();
    for g in &o.layers {
        let mtu = if g.local { 0 } else { LINK_MTU_BYTES };
        for round in 1..=n {
            for (t, over) in &g.rows {
                v.push(StudyCase {
                    label: format!("{}-{}-r{round}", file_safe(t), g.link.name),
                    role: role(round),
                    transport: t.clone(),
                    link: g.link.clone(),
                    mtu_bytes: mtu,
                    socket_buffer_bytes: None,
                    mode: Mode::Pingpong,
                    sizes: sizes.into(),
                    budget_s: budget_s * ROUND_BUDGET_SHARE,
                    sweep_args: o.sweep_args.clone(),
                    peer: None,
                    round: Some(round),
                    local: g.local,
                    over: over.clone(),
                    hub: false,
                });
            }
        }
    }
    v
}

/// The paths of `cases`, in the order first run.
fn paths(cases: &[StudyCaseResult]) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for c in cases {
        if !v.contains(&c.link.as_str()) {
            v.push(&c.link);
        }
    }
    v
}

/// The rows of one path: each transport and the one beneath it, in the
/// order first run.
fn rows<'a>(cases: &'a [StudyCaseResult], path: &str) -> Vec<(&'a str, Option<&'a str>)> {
    let mut v: Vec<(&str, Option<&str>)> = Vec::new();
    for c in cases.iter().filter(|c| c.link == path) {
        if !v.iter().any(|(t, _)| *t == c.transport) {
            v.push((&c.transport, c.over.as_deref()));
        }
    }
    v
}

/// Each row's overhead over the row beneath it, latency and peak, taken
/// within each round ([`super::rounds::ratio`]).
pub fn ratios(cases: &[StudyCaseResult]) -> Vec<StudyRatio> {
    let mut v = Vec::new();
    for path in paths(cases) {
        for (t, over) in rows(cases, path) {
            let Some(over) = over else { continue };
            for figure in [LATENCY, PEAK] {
                v.extend(ratio(cases, figure, path, t, over));
            }
        }
    }
    v
}

fn ratio(
    cases: &[StudyCaseResult],
    figure: Figure,
    path: &str,
    t: &str,
    over: &str,
) -> Option<StudyRatio> {
    super::rounds::ratio(
        cases,
        figure,
        path,
        (t, &|c| c.link == path && c.transport == t),
        (over, &|c| c.link == path && c.transport == over),
    )
}

/// The latency a row adds over the row beneath it, per round, ns.
fn added_latency(cases: &[StudyCaseResult], path: &str, t: &str, over: &str) -> Vec<f64> {
    let at = |name: &str, round: Option<u32>| {
        cases
            .iter()
            .filter(|c| c.link == path && c.transport == name && c.round == round)
            .find_map(|c| c.latency_ns.filter(|_| c.error.is_none()))
    };
    cases
        .iter()
        .filter(|c| c.link == path && c.transport == t)
        .filter_map(|c| Some(at(t, c.round)? - at(over, c.round)?))
        .collect()
}

/// One table per path: a row per transport, bottom first, with its
/// figures and its overhead over the row beneath it; then the ratios'
/// table (median, lowest and highest round).
pub fn tables(cases: &[StudyCaseResult]) -> Vec<StudyTable> {
    let mut out: Vec<StudyTable> = paths(cases).iter().map(|p| table(cases, p)).collect();
    out.extend(super::rounds::ratio_table(
        "Each layer over the one beneath it, within each round: latency and peak ratios (median, lowest and highest round)",
        &ratios(cases),
    ));
    out
}

fn table(cases: &[StudyCaseResult], path: &str) -> StudyTable {
    let columns = [
        "latency, us",
        "latency spread, %",
        "peak, Mbit/s",
        "CPU client, ns/B",
        "CPU server, ns/B",
        "added latency, us",
        "latency / beneath",
        "low",
        "high",
        "peak / beneath",
    ];
    let mut most_rounds = 0;
    let table_rows = rows(cases, path)
        .into_iter()
        .map(|(t, over)| {
            let all: Vec<&StudyCaseResult> = cases
                .iter()
                .filter(|c| c.link == path && c.transport == t)
                .collect();
            most_rounds = most_rounds.max(all.len());
            let ok: Vec<&StudyCaseResult> =
                all.iter().copied().filter(|c| c.error.is_none()).collect();
            let values = |f: fn(&StudyCaseResult) -> Option<f64>| -> Vec<f64> {
                ok.iter().filter_map(|c| f(c)).collect()
            };
            let lat = values(|c| c.latency_ns);
            let (lat_r, peak_r) = match over {
                Some(o) => (
                    ratio(cases, LATENCY, path, t, o),
                    ratio(cases, PEAK, path, t, o),
                ),
                None => (None, None),
            };
            let added = over.and_then(|o| median(added_latency(cases, path, t, o)));
            StudyRow {
                noisy: Vec::new(),
                label: row_label(t, over, &all, &ok),
                cells: vec![
                    median(lat.clone()).map(|n| n / 1e3),
                    super::rounds::spread(&lat).map(|s| s * 100.0),
                    median(values(|c| c.peak_bits_per_s)).map(|b| b / 1e6),
                    median(values(|c| c.cpu_client_ns_per_byte)),
                    median(values(|c| c.cpu_server_ns_per_byte)),
                    added.map(|n| n / 1e3),
                    lat_r.as_ref().map(|r| r.median),
                    lat_r.as_ref().map(|r| r.low),
                    lat_r.as_ref().map(|r| r.high),
                    peak_r.as_ref().map(|r| r.median),
                ],
            }
        })
        .collect();
    StudyTable {
        title: format!(
            "Layers over {path}: latency (1 B, half the round trip, median and spread over {most_rounds} interleaved round{}), peak (ping-pong), CPU per byte at {} on each end (getrusage), and each layer over the one beneath it in the same round: the latency it adds, its latency ratio (median, lowest and highest round) and its peak ratio",
            if most_rounds == 1 { "" } else { "s" },
            crate::units::format_bytes(super::lean::CPU_BYTES),
        ),
        row_header: "transport (over)".into(),
        columns: columns.iter().map(|s| s.to_string()).collect(),
        rows: table_rows,
        decimals: 2,
    }
}

/// `mpi:openmpi(ucx-tcp) over ucx(tcp)`, and why it has no figures (or
/// fewer rounds) when it could not run in every round.
fn row_label(
    t: &str,
    over: Option<&str>,
    all: &[&StudyCaseResult],
    ok: &[&StudyCaseResult],
) -> String {
    let name = match over {
        Some(o) => format!("{t} over {o}"),
        None => t.to_string(),
    };
    if ok.is_empty() {
        return match all.first().and_then(|c| c.error.as_deref()) {
            Some(e) if e.starts_with(super::lean::UNAVAILABLE) => {
                // The whole reason is in the case; the label keeps its start.
                let short: String = e.chars().take(LABEL_REASON_CHARS).collect();
                let more = if short.len() < e.len() { "..." } else { "" };
                format!("{name} ({short}{more})")
            }
            _ => format!("{name} (failed)"),
        };
    }
    match all.len() - ok.len() {
        0 => name,
        f => format!("{name} (failed in {f} of {} rounds)", all.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::Effort;

    fn group(name: &str, local: bool) -> LayersGroup {
        LayersGroup {
            link: LinkRate {
                name: name.into(),
                bits_per_s: 0,
            },
            local,
            rows: vec![
                ("tcp".into(), None),
                ("ucx(tcp)".into(), Some("tcp".into())),
                ("mpi:openmpi(ucx-tcp)".into(), Some("ucx(tcp)".into())),
            ],
        }
    }

    fn opts() -> StudyOptions {
        StudyOptions {
            link: LinkRate::parse("ge").unwrap(),
            effort: Effort::Quick,
            transports: Vec::new(),
            links: Vec::new(),
            mtus_bytes: Vec::new(),
            sweep_args: Vec::new(),
            peer: None,
            layers: vec![group("loopback", true), group("ge", false)],
        }
    }

    #[test]
    fn every_row_once_per_round_on_each_path() {
        let p = plan(&opts(), "1:1Mi", 3.0);
        assert_eq!(p.len(), 2 * 3 * 3);
        let labels: Vec<&str> = p[..4].iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "tcp-loopback-r1",
                "ucx-tcp-loopback-r1",
                "mpi-openmpi-ucx-tcp-loopback-r1",
                "tcp-loopback-r2"
            ]
        );
        assert!(p[0].local && !p[9].local);
        assert_eq!((p[0].mtu_bytes, p[9].mtu_bytes), (0, 1500));
        assert_eq!(p[2].over.as_deref(), Some("ucx(tcp)"));
        assert_eq!(p[17].round, Some(3));
        assert_eq!(p[1].budget_s, 2.0);
    }

    fn case(
        t: &str,
        over: Option<&str>,
        round: u32,
        us: Option<f64>,
        mbit: f64,
    ) -> StudyCaseResult {
        let mut c = crate::study::tables::tests::in_round(t, "loopback", round, 0.0, mbit);
        c.over = over.map(str::to_string);
        c.latency_ns = us.map(|u| u * 1e3);
        if us.is_none() {
            c.error = Some("boom".into());
        }
        c
    }

    #[test]
    fn overheads_are_taken_within_each_round() {
        let cases = vec![
            case("tcp", None, 1, Some(10.0), 1000.0),
            case("ucx(tcp)", Some("tcp"), 1, Some(12.0), 900.0),
            case("tcp", None, 2, Some(20.0), 1000.0),
            case("ucx(tcp)", Some("tcp"), 2, Some(22.0), 800.0),
            case("tcp", None, 3, Some(10.0), 1000.0),
            case("ucx(tcp)", Some("tcp"), 3, None, 0.0),
        ];
        let t = tables(&cases);
        assert_eq!(t.len(), 2, "a path's table and the ratios'");
        let row = &t[0].rows[1];
        assert_eq!(row.label, "ucx(tcp) over tcp (failed in 1 of 3 rounds)");
        // Added latency 2 us in both rounds it ran, whatever tcp did.
        assert!((row.cells[5].unwrap() - 2.0).abs() < 1e-9, "{row:?}");
        // Ratios 1.2 and 1.1: the median between, the range both.
        assert!((row.cells[6].unwrap() - 1.15).abs() < 1e-9, "{row:?}");
        assert!((row.cells[7].unwrap() - 1.1).abs() < 1e-9, "{row:?}");
        assert!((row.cells[8].unwrap() - 1.2).abs() < 1e-9, "{row:?}");
        assert!((row.cells[9].unwrap() - 0.85).abs() < 1e-9, "{row:?}");
        assert!(
            t[0].rows[0].cells[5].is_none(),
            "the bottom has no overhead"
        );
        let r = ratios(&cases);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].faster.as_deref(), Some("tcp"));
        assert_eq!(
            (r[1].figure.as_str(), r[1].numerator.as_str()),
            ("peak", "ucx(tcp)")
        );
    }
}
