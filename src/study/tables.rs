//! What a study's sweeps mean: each case's figures (from the same
//! [`Analysis`] the report uses) and the study's tables, in the published studies'
//! forms; and those tables as terminal text and Markdown. Pure functions.

use std::fmt::Write;

use super::{buffer_label, StudyCase, StudyName, MTUS_BYTES, SOCKET_BUFFERS_BYTES};
use crate::analysis::Analysis;
use crate::measure::policy::interfered;
use crate::result::{StudyCaseResult, StudyRow, StudyTable, SweepResult};
use crate::sys::{tcp_goodput_limit, IpVersion};

/// The figures of one case from its sweep (or its error).
pub fn case_result(
    case: &StudyCase,
    outcome: Result<(&SweepResult, String), String>,
) -> StudyCaseResult {
    let mut goodput = tcp_goodput_limit(
        case.link.bits_per_s as f64 / 1e6,
        case.mtu_bytes,
        IpVersion::V4,
        true,
    )
    .map_or(0.0, |l| l.goodput_shaped_mbit_per_s * 1e6);
    // Below this a token bucket's free burst, not the link, sets the
    // throughput (see lab::shaper): the tables take the peak beyond it.
    // A real peer's path has no lab shaper: every size counts.
    let free = match case.peer {
        Some(_) => 0,
        None if case.local => 0,
        None => {
            crate::lab::shaper::ShaperParams::for_link(case.link.bits_per_s, case.mtu_bytes)
                .free_burst_bytes
        }
    };
    let mut c = StudyCaseResult {
        label: case.label.clone(),
        role: case.role.to_string(),
        transport: case.transport.clone(),
        link: case.link_name(),
        link_bits_per_s: case.link.bits_per_s,
        mtu_bytes: case.mtu_bytes,
        socket_buffer_bytes: case.socket_buffer_bytes,
        mode: case.mode,
        file: None,
        error: None,
        latency_ns: None,
        peak_min_bytes: 16 * free,
        peak_bits_per_s: None,
        peak_bytes: None,
        n_half_bytes: None,
        goodput_bits_per_s: goodput,
        peak_fraction: None,
        cpu_bytes: None,
        cpu_client_ns_per_byte: None,
        cpu_server_ns_per_byte: None,
        cpu_whole_ns_per_byte: None,
        round: case.round,
        over: case.over.clone(),
        noisy_bytes: Vec::new(),
        latency_noisy: false,
        latency_interfered: false,
        peak_interfered: false,
    };
    match outcome {
        Err(e) => c.error = Some(e),
        Ok((r, file)) => {
            // Against a real peer the sweep found the path's rate and its
            // goodput limit (the lab's are known beforehand).
            if let (Some(_), Some(l)) = (&case.peer, &r.link) {
                goodput = l.limit_bits_per_s;
                c.goodput_bits_per_s = goodput;
                c.link_bits_per_s = (l.limit.link_speed_mbit_per_s * 1e6) as u64;
            }
            let a = Analysis::of(r);
            c.file = Some(file);
            c.noisy_bytes = r
                .points
                .iter()
                .filter(|p| p.noisy)
                .map(|p| p.bytes)
                .collect();
            c.latency_noisy = r.points.first().is_some_and(|p| p.noisy);
            c.latency_interfered = r.points.first().is_some_and(interfered);
            c.latency_ns = a.latency_ns;
            // The peak from the points other work left alone; where it
            // touched every one, their best, marked so.
            let min_bytes = c.peak_min_bytes;
            let candidates = || r.points.iter().filter(move |p| p.bytes >= min_bytes);
            let by_rate = |x: &&crate::result::Point, y: &&crate::result::Point| {
                x.bits_per_s.total_cmp(&y.bits_per_s)
            };
            let clean = candidates().filter(|p| !interfered(p)).max_by(by_rate);
            c.peak_interfered = clean.is_none() && candidates().next().is_some();
            let peak = clean.or_else(|| candidates().max_by(by_rate));
            c.peak_bits_per_s = peak.map(|p| p.bits_per_s);
            c.peak_bytes = peak.map(|p| p.bytes);
            c.n_half_bytes = peak.and_then(|pk| {
                r.points
                    .iter()
                    .find(|p| p.bits_per_s >= pk.bits_per_s / 2.0)
                    .map(|p| p.bytes)
            });
            c.peak_fraction = c
                .peak_bits_per_s
                .filter(|_| goodput > 0.0)
                .map(|p| p / goodput);
            // The size nearest 64 KiB on a log scale (the CPU figures of
            // lean-stacks); ns per byte of a 1-byte message is mostly the
            // per-message cost.
            let near = |p: &&crate::result::Point| {
                ((p.bytes.max(1) as f64) / super::lean::CPU_BYTES as f64)
                    .ln()
                    .abs()
            };
            if let Some(p) = r.points.iter().min_by(|x, y| near(x).total_cmp(&near(y))) {
                c.cpu_bytes = Some(p.bytes);
                c.cpu_client_ns_per_byte = Some(p.cpu_client.ns_per_byte);
                c.cpu_server_ns_per_byte = Some(p.cpu_server.ns_per_byte);
                c.cpu_whole_ns_per_byte = p.cpu_whole.as_ref().and_then(|w| w.ns_per_byte);
            }
        }
    }
    c
}

/// The tables of study `name` from its cases' figures.
pub fn tables(name: StudyName, cases: &[StudyCaseResult]) -> Vec<StudyTable> {
    match name {
        StudyName::MtuBuffers => mtu_buffer_tables(cases),
        StudyName::FeVsGe => super::fe_ge::tables(cases),
        StudyName::LeanStacks => super::lean::tables(cases),
        StudyName::Layers => super::layers::tables(cases),
    }
}

fn mtu_buffer_tables(cases: &[StudyCaseResult]) -> Vec<StudyTable> {
    let link = cases.first().map_or(String::new(), |c| c.link.clone());
    let cell = |mtu: u32, buf: Option<u64>| {
        cases
            .iter()
            .find(|c| c.role == "cell" && c.mtu_bytes == mtu && c.socket_buffer_bytes == buf)
    };
    let columns: Vec<String> = MTUS_BYTES.iter().map(|m| format!("MTU {m}")).collect();
    // Each figure with the size of the point behind it (noisy or not).
    let grid = |f: &dyn Fn(&StudyCaseResult) -> Option<f64>,
                at: &dyn Fn(&StudyCaseResult) -> Option<u64>|
     -> Vec<StudyRow> {
        SOCKET_BUFFERS_BYTES
            .iter()
            .map(|&buf| StudyRow {
                label: buffer_label(buf),
                cells: MTUS_BYTES
                    .iter()
                    .map(|&m| cell(m, buf).and_then(f))
                    .collect(),
                noisy: MTUS_BYTES
                    .iter()
                    .map(|&m| cell(m, buf).is_some_and(|c| noisy_at(c, at(c))))
                    .collect(),
            })
            .collect()
    };
    vec![
        StudyTable {
            title: format!("Peak TCP throughput over {link}, Mbit/s, by socket buffer and MTU (ping-pong, as NetPIPE; sizes from 16 times the emulated link's free burst)"),
            row_header: "socket buffer".into(),
            columns: columns.clone(),
            rows: grid(&|c| c.peak_bits_per_s.map(|b| b / 1e6), &|c| c.peak_bytes),
            decimals: 1,
        },
        StudyTable {
            title: format!("Peak as a fraction of the emulated link's TCP goodput ({link})"),
            row_header: "socket buffer".into(),
            columns: columns.clone(),
            rows: grid(&|c| c.peak_fraction, &|c| c.peak_bytes),
            decimals: 3,
        },
        StudyTable {
            title: format!("Latency of a 1-byte message over {link}, us (half the round trip)"),
            row_header: "socket buffer".into(),
            columns,
            rows: grid(&|c| c.latency_ns.map(|n| n / 1e3), &latency_bytes),
            decimals: 1,
        },
    ]
}

/// Stands for the latency figure's point (the smallest size) where a
/// figure's size is asked for.
pub(super) const LATENCY_POINT: u64 = u64::MAX;

/// The latency figure's point ([`LATENCY_POINT`]), none where it failed.
pub(super) fn latency_bytes(c: &StudyCaseResult) -> Option<u64> {
    c.latency_ns.map(|_| LATENCY_POINT)
}

/// Whether the point of `c` at `bytes` (the one behind a figure) is noisy.
pub(super) fn noisy_at(c: &StudyCaseResult, bytes: Option<u64>) -> bool {
    match bytes {
        Some(LATENCY_POINT) => c.latency_noisy,
        Some(b) => c.noisy_bytes.contains(&b),
        None => false,
    }
}

/// What a noisy cell carries after its figure in the tables.
pub const NOISY_MARK: &str = "~";

fn cell_text(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// Cell `k` of row `r`, with the noisy mark when its point is noisy.
fn marked_cell(r: &StudyRow, k: usize, decimals: usize) -> String {
    let mut s = cell_text(r.cells[k], decimals);
    if r.cells[k].is_some() && r.noisy.get(k).copied().unwrap_or(false) {
        s.push_str(NOISY_MARK);
    }
    s
}

/// The legend of the noisy mark, when a table has a marked cell.
pub fn noisy_legend(t: &StudyTable) -> Option<String> {
    t.rows.iter().any(|r| r.noisy.iter().any(|&n| n)).then(|| {
        format!(
            "{NOISY_MARK} noisy: the point behind the figure did not reach its precision within the budget"
        )
    })
}

/// The tables as aligned terminal text.
pub fn text(tables: &[StudyTable]) -> String {
    let mut s = String::new();
    for t in tables {
        let _ = writeln!(s, "{}\n", t.title);
        if let Some(legend) = noisy_legend(t) {
            let _ = writeln!(s, "{legend}\n");
        }
        let first = t
            .rows
            .iter()
            .map(|r| r.label.len())
            .chain([t.row_header.len()])
            .max()
            .unwrap_or(0);
        let widths: Vec<usize> = t.columns.iter().map(|c| c.len().max(8)).collect();
        let _ = write!(s, "{:<first$}", t.row_header);
        for (c, w) in t.columns.iter().zip(&widths) {
            let _ = write!(s, "  {c:>w$}");
        }
        s.push('\n');
        for r in &t.rows {
            let _ = write!(s, "{:<first$}", r.label);
            for (k, w) in widths.iter().enumerate().take(r.cells.len()) {
                let _ = write!(s, "  {:>w$}", marked_cell(r, k, t.decimals));
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

/// The tables as Markdown.
pub fn markdown(tables: &[StudyTable]) -> String {
    let mut s = String::new();
    for t in tables {
        let _ = writeln!(s, "**{}**\n", t.title);
        if let Some(legend) = noisy_legend(t) {
            let _ = writeln!(s, "{legend}\n");
        }
        let _ = writeln!(s, "| {} | {} |", t.row_header, t.columns.join(" | "));
        let _ = writeln!(s, "|---|{}", "---:|".repeat(t.columns.len()));
        for r in &t.rows {
            let cells: Vec<String> = (0..r.cells.len())
                .map(|k| marked_cell(r, k, t.decimals))
                .collect();
            let _ = writeln!(s, "| {} | {} |", r.label, cells.join(" | "));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::result::Mode;

    /// A case of transport `t` over `link` with peak `peak` and 30 us latency.
    pub(in crate::study) fn case(
        t: &str,
        link: &str,
        mtu: u32,
        buf: Option<u64>,
        role: &str,
        peak: f64,
    ) -> StudyCaseResult {
        StudyCaseResult {
            label: format!("{t}-{link}-{mtu}-{buf:?}"),
            role: role.into(),
            transport: t.into(),
            link: link.into(),
            link_bits_per_s: 1_000_000_000,
            mtu_bytes: mtu,
            socket_buffer_bytes: buf,
            mode: Mode::Pingpong,
            file: None,
            error: None,
            latency_ns: Some(30_000.0),
            peak_min_bytes: 48_448,
            peak_bits_per_s: Some(peak),
            peak_bytes: Some(1 << 20),
            n_half_bytes: Some(4096),
            goodput_bits_per_s: 956.4e6,
            peak_fraction: Some(peak / 956.4e6),
            cpu_bytes: None,
            cpu_client_ns_per_byte: None,
            cpu_server_ns_per_byte: None,
            cpu_whole_ns_per_byte: None,
            round: None,
            over: None,
            noisy_bytes: Vec::new(),
            latency_noisy: false,
            latency_interfered: false,
            peak_interfered: false,
        }
    }

    /// `t` over `link` in round `round` with latency `us` and peak `mbit`.
    pub(in crate::study) fn in_round(
        t: &str,
        link: &str,
        round: u32,
        us: f64,
        mbit: f64,
    ) -> StudyCaseResult {
        let mut c = case(t, link, 1500, None, "curve", mbit * 1e6);
        c.round = Some(round);
        c.latency_ns = Some(us * 1e3);
        c
    }

    #[test]
    fn mtu_buffer_grid_puts_each_case_in_its_cell() {
        let cases = vec![
            case("tcp", "ge", 9000, Some(65536), "cell", 500e6),
            case("tcp", "ge", 1500, None, "cell", 900e6),
            case("tcp", "ge", 1500, None, "curve", 1.0),
        ];
        let t = tables(StudyName::MtuBuffers, &cases);
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].rows.len(), 6);
        assert_eq!(
            t[0].rows[0].cells[0],
            Some(900.0),
            "the curve is not a cell"
        );
        assert_eq!(t[0].rows[1].label, "64KiB");
        assert_eq!(t[0].rows[1].cells[3], Some(500.0));
        assert_eq!(t[0].rows[1].cells[0], None);
        let txt = text(&t);
        assert!(
            txt.contains("MTU 9000") && txt.contains("500.0") && txt.contains(" -"),
            "{txt}"
        );
        assert!(markdown(&t).contains("| socket buffer | MTU 1500 |"));
    }
}
