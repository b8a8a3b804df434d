//! `lean-stacks` (seed 001, Table 2 and Figs. 1-2): how much of the cost
//! of cluster communication is TCP/IP itself. tcp against the lean stacks
//! Linux ships (raw Ethernet frames with wulf's own reliable protocol,
//! AF_XDP, TIPC) and each MPI's TCP path, over ge and 10ge lab links at
//! MTU 1500 and 9000. One full ping-pong sweep per transport, link and
//! MTU gives the table's latency, peak and n_1/2 (as the seed's Table 2)
//! and the CPU per byte of each end (getrusage; the whole machine's with
//! `--cost whole`) at [`CPU_BYTES`], the seed's Fig. 2 measure.
//!
//! A transport that cannot run here (not built into this wulf, or, like
//! TIPC on a kernel without it, unavailable) keeps its rows: the study
//! records why instead of figures, so the table shows what was compared
//! and what could not be. Pure: the plan and the tables.

use super::{file_safe, StudyCase, StudyOptions};
use crate::result::{Mode, StudyCaseResult, StudyRow, StudyTable};

/// The stacks compared, by transport name, before the MPIs' TCP paths.
pub const LEAN_STACKS: [&str; 4] = ["tcp", "raw", "xdp", "tipc"];

/// The message size whose CPU per byte the table shows: large enough
/// that the per-message cost is spread thin, small enough for one frame
/// window of every stack (the benchmark size).
pub const CPU_BYTES: u64 = 64 << 10;

/// Prefix of a case's error when its transport could not run at all.
pub const UNAVAILABLE: &str = "unavailable: ";

/// One ping-pong curve per transport, link and MTU, links outermost (the
/// tables are per link and MTU); against a real peer, one per transport
/// over the path as it is (its rate and MTU come from the sweeps).
pub fn plan(o: &StudyOptions, sizes: &str, budget_s: f64) -> Vec<StudyCase> {
    let mut v = Vec::new();
    if let Some(peer) = &o.peer {
        for t in &o.transports {
            v.push(StudyCase {
                label: format!("{}-peer", file_safe(t)),
                role: "curve",
                transport: t.clone(),
                link: crate::lab::LinkRate {
                    name: format!("peer {peer}"),
                    bits_per_s: 0,
                },
                mtu_bytes: 0,
                socket_buffer_bytes: None,
                mode: Mode::Pingpong,
                sizes: sizes.into(),
                budget_s,
                sweep_args: o.sweep_args.clone(),
                peer: Some(peer.clone()),
            });
        }
        return v;
    }
    for link in &o.links {
        for &mtu in &o.mtus_bytes {
            for t in &o.transports {
                v.push(StudyCase {
                    label: format!("{}-{}-mtu{mtu}", file_safe(t), link.name),
                    role: "curve",
                    transport: t.clone(),
                    link: link.clone(),
                    mtu_bytes: mtu,
                    socket_buffer_bytes: None,
                    mode: Mode::Pingpong,
                    // NetPIPE's schedule: powers of two, so CPU_BYTES too.
                    sizes: sizes.into(),
                    budget_s,
                    sweep_args: o.sweep_args.clone(),
                    peer: None,
                });
            }
        }
    }
    v
}

/// One table per link and MTU, in the order run: a row per transport.
pub fn tables(cases: &[StudyCaseResult]) -> Vec<StudyTable> {
    let mut groups: Vec<(&str, u32)> = Vec::new();
    for c in cases {
        if !groups.contains(&(c.link.as_str(), c.mtu_bytes)) {
            groups.push((&c.link, c.mtu_bytes));
        }
    }
    let whole = cases.iter().any(|c| c.cpu_whole_ns_per_byte.is_some());
    groups
        .iter()
        .map(|&(link, mtu)| table(cases, link, mtu, whole))
        .collect()
}

fn table(cases: &[StudyCaseResult], link: &str, mtu: u32, whole: bool) -> StudyTable {
    let mut columns = vec![
        "latency, us",
        "peak, Mbit/s",
        "n_1/2, B",
        "CPU client, ns/B",
        "CPU server, ns/B",
    ];
    if whole {
        columns.push("CPU whole, ns/B");
    }
    // Seed 001's Fig. 1: each stack's latency as a multiple of TCP's over
    // the same link (below 1: faster than TCP/IP).
    columns.push("latency / tcp");
    let tcp_ns = cases
        .iter()
        .find(|c| c.link == link && c.mtu_bytes == mtu && c.transport == "tcp")
        .and_then(|c| c.latency_ns);
    let rows = cases
        .iter()
        .filter(|c| c.link == link && c.mtu_bytes == mtu)
        .map(|c| {
            let mut cells = vec![
                c.latency_ns.map(|n| n / 1e3),
                c.peak_bits_per_s.map(|b| b / 1e6),
                c.n_half_bytes.map(|b| b as f64),
                c.cpu_client_ns_per_byte,
                c.cpu_server_ns_per_byte,
            ];
            if whole {
                cells.push(c.cpu_whole_ns_per_byte);
            }
            cells.push(c.latency_ns.zip(tcp_ns).map(|(n, t)| n / t));
            StudyRow {
                label: row_label(c),
                cells,
            }
        })
        .collect();
    StudyTable {
        title: format!(
            "Lean stacks over {link}, {}: latency (1 B, half the round trip), peak and n_1/2 (ping-pong), CPU per byte at {} on each end (getrusage{}), latency as a multiple of tcp's",
            match mtu {
                0 => "the path's own MTU".to_string(),
                m => format!("MTU {m}"),
            },
            crate::units::format_bytes(CPU_BYTES),
            if whole { "; whole: the machine's, cyclesoak" } else { "" }
        ),
        row_header: "transport".into(),
        columns: columns.iter().map(|s| s.to_string()).collect(),
        rows,
        decimals: 2,
    }
}

/// The transport, and why it has no figures when it could not run.
fn row_label(c: &StudyCaseResult) -> String {
    match c.error.as_deref() {
        Some(e) if e.starts_with(UNAVAILABLE) => format!("{} ({e})", c.transport),
        Some(_) => format!("{} (failed)", c.transport),
        None => c.transport.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::LinkRate;
    use crate::study::{plan as study_plan, Effort, StudyName};

    fn opts() -> StudyOptions {
        StudyOptions {
            link: LinkRate::parse("ge").unwrap(),
            effort: Effort::Quick,
            transports: vec!["tcp".into(), "raw".into(), "tipc".into()],
            links: vec![
                LinkRate::parse("ge").unwrap(),
                LinkRate::parse("10ge").unwrap(),
            ],
            mtus_bytes: vec![1500, 9000],
            sweep_args: vec!["--load".into(), "cpu:1".into()],
            peer: None,
        }
    }

    #[test]
    fn against_a_peer_one_curve_per_transport_over_the_path_as_it_is() {
        let o = StudyOptions {
            peer: Some("node2:5999".into()),
            ..opts()
        };
        let p = plan(&o, "1:1Mi", 2.0);
        assert_eq!(p.len(), 3);
        assert_eq!(p[1].label, "raw-peer");
        assert_eq!(p[1].peer.as_deref(), Some("node2:5999"));
        assert_eq!((p[1].link.bits_per_s, p[1].mtu_bytes), (0, 0));
        let t = tables(&[
            case("tcp", "peer node2:5999", 0, None),
            case("tipc", "peer node2:5999", 0, Some("unavailable: no TIPC")),
        ]);
        assert_eq!(t.len(), 1);
        assert!(t[0].title.contains("the path's own MTU"), "{}", t[0].title);
    }

    #[test]
    fn one_curve_per_transport_link_and_mtu_with_the_cpu_size() {
        let p = study_plan(StudyName::LeanStacks, &opts());
        assert_eq!(p.len(), 3 * 2 * 2);
        assert_eq!(p[0].label, "tcp-ge-mtu1500");
        assert_eq!(p[11].label, "tipc-10ge-mtu9000");
        assert_eq!(p[11].lab_spec(), "10ge,mtu=9000");
        let sizes = crate::message::schedule::parse_sizes(&p[0].sizes, false).unwrap();
        assert!(sizes.contains(&CPU_BYTES), "{sizes:?}");
        assert_eq!(p[4].sweep_args, ["--load", "cpu:1"]);
    }

    fn case(t: &str, link: &str, mtu: u32, error: Option<&str>) -> StudyCaseResult {
        let ok = error.is_none();
        StudyCaseResult {
            label: format!("{t}-{link}-mtu{mtu}"),
            role: "curve".into(),
            transport: t.into(),
            link: link.into(),
            link_bits_per_s: 10_000_000_000,
            mtu_bytes: mtu,
            socket_buffer_bytes: None,
            mode: Mode::Pingpong,
            file: None,
            error: error.map(str::to_string),
            latency_ns: ok.then_some(4_000.0),
            peak_min_bytes: 48_448,
            peak_bits_per_s: ok.then_some(3e9),
            peak_bytes: ok.then_some(1 << 20),
            n_half_bytes: ok.then_some(8192),
            goodput_bits_per_s: 9.4e9,
            peak_fraction: ok.then_some(0.3),
            cpu_bytes: ok.then_some(CPU_BYTES),
            cpu_client_ns_per_byte: ok.then_some(0.5),
            cpu_server_ns_per_byte: ok.then_some(0.25),
            cpu_whole_ns_per_byte: None,
        }
    }

    #[test]
    fn a_table_per_link_and_mtu_and_unavailable_rows_say_why() {
        let cases = vec![
            case("tcp", "10ge", 9000, None),
            case(
                "tipc",
                "10ge",
                9000,
                Some("unavailable: kernel built without TIPC"),
            ),
            case("tcp", "ge", 1500, None),
            case(
                "raw",
                "ge",
                1500,
                Some("the sweep exited with code 1: boom"),
            ),
        ];
        let t = tables(&cases);
        assert_eq!(t.len(), 2);
        assert!(t[0].title.contains("10ge, MTU 9000"), "{}", t[0].title);
        assert_eq!(t[0].columns.len(), 6);
        assert_eq!(t[0].rows[0].cells[0], Some(4.0));
        assert_eq!(t[0].rows[0].cells[4], Some(0.25));
        assert_eq!(t[0].rows[0].cells[5], Some(1.0), "tcp against itself");
        assert_eq!(
            t[0].rows[1].label,
            "tipc (unavailable: kernel built without TIPC)"
        );
        assert!(t[0].rows[1].cells.iter().all(Option::is_none));
        assert_eq!(t[1].rows[1].label, "raw (failed)");
        let mut whole = cases.clone();
        whole[0].cpu_whole_ns_per_byte = Some(2.0);
        let t = tables(&whole);
        assert_eq!(t[0].columns.len(), 7);
        assert_eq!(t[0].rows[0].cells[5], Some(2.0));
        assert_eq!(t[1].rows[0].cells[5], None);
    }

    #[test]
    fn latency_is_normalised_to_tcp_over_the_same_link() {
        let mut raw = case("raw", "ge", 1500, None);
        raw.latency_ns = Some(3_000.0);
        let t = tables(&[
            case("tcp", "ge", 1500, None),
            raw,
            case("xdp", "10ge", 1500, None),
        ]);
        assert_eq!(t[0].columns.last().unwrap(), "latency / tcp");
        assert_eq!(t[0].rows[1].cells.last(), Some(&Some(0.75)));
        // No tcp over 10ge: nothing to normalise to.
        assert_eq!(t[1].rows[0].cells.last(), Some(&None));
    }
}
