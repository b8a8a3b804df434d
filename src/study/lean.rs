//! `lean-stacks` (Bounanos and Fleury 2007, Table 2 and Figs. 1-2): how much of the cost
//! of cluster communication is TCP/IP itself. tcp against the lean stacks
//! Linux ships (raw Ethernet frames with wulf's own reliable protocol,
//! AF_XDP, TIPC) and each MPI's TCP path, over ge and 10ge lab links at
//! MTU 1500 and 9000. Full ping-pong sweeps per transport, link and MTU,
//! in interleaved rounds (every stack once per round, [`rounds`] of them,
//! issue 34: a study that ran each stack once saw tcp's latency move 9 to
//! 34 us between rows) give the table's latency (best, median and spread
//! over the rounds), peak and n_1/2 (as its Table 2) and the CPU
//! per byte of each end (getrusage; the whole machine's with `--cost
//! whole`) at [`CPU_BYTES`], the study's Fig. 2 measure.
//!
//! A transport that cannot run here (not built into this wulf, or, like
//! TIPC on a kernel without it, unavailable) keeps its rows: the study
//! records why instead of figures, so the table shows what was compared
//! and what could not be. Pure: the plan and the tables.

use super::{file_safe, StudyCase, StudyOptions};
use crate::result::{Mode, StudyCaseResult, StudyRow, StudyTable};

/// The stack the lean ones are compared with, first in the table; the
/// lean stacks themselves are the transports that say they are one
/// (`Transport::lean_stack`), then the MPIs' TCP paths.
pub const REFERENCE_STACK: &str = "tcp";

/// The message size whose CPU per byte the table shows: large enough
/// that the per-message cost is spread thin, small enough for one frame
/// window of every stack (the benchmark size).
pub const CPU_BYTES: u64 = 64 << 10;

/// Prefix of a case's error when its transport could not run at all.
pub const UNAVAILABLE: &str = "unavailable: ";

use super::rounds::{median, role, ROUND_BUDGET_SHARE};
pub use super::rounds::{rounds, SPREAD_WARN};

/// One ping-pong curve per transport, link, MTU and round: links and MTUs
/// outermost (the tables are per link and MTU), then the rounds, each
/// running every stack once; against a real peer, the same over the path
/// as it is (its rate and MTU come from the sweeps). Each round's sweep
/// gets two thirds of `budget_s` (one sweep's budget before the rounds):
/// more time per stack in all, less per sweep. The first round's cases are
/// the `curve`s the report draws; the others have the role `round`.
pub fn plan(o: &StudyOptions, sizes: &str, budget_s: f64) -> Vec<StudyCase> {
    let n = rounds(o.effort);
    let groups: Vec<(crate::lab::LinkRate, u32)> = match &o.peer {
        Some(peer) => vec![(
            crate::lab::LinkRate {
                name: format!("peer {peer}"),
                bits_per_s: 0,
            },
            0,
        )],
        None => o
            .links
            .iter()
            .flat_map(|l| o.mtus_bytes.iter().map(move |&m| (l.clone(), m)))
            .collect(),
    };
    let mut v = Vec::new();
    for (link, mtu) in &groups {
        for round in 1..=n {
            for t in &o.transports {
                let stem = match o.peer {
                    Some(_) => format!("{}-peer", file_safe(t)),
                    None => format!("{}-{}-mtu{mtu}", file_safe(t), link.name),
                };
                v.push(StudyCase {
                    label: format!("{stem}-r{round}"),
                    role: role(round),
                    transport: t.clone(),
                    link: link.clone(),
                    mtu_bytes: *mtu,
                    socket_buffer_bytes: None,
                    mode: Mode::Pingpong,
                    // NetPIPE's schedule: powers of two, so CPU_BYTES too.
                    sizes: sizes.into(),
                    budget_s: budget_s * ROUND_BUDGET_SHARE,
                    sweep_args: o.sweep_args.clone(),
                    peer: o.peer.clone(),
                    round: Some(round),
                    local: false,
                    over: None,
                    hub: false,
                });
            }
        }
    }
    v
}

/// One table per link and MTU, in the order run: a row per transport, its
/// figures over the rounds.
pub fn tables(cases: &[StudyCaseResult]) -> Vec<StudyTable> {
    let whole = cases.iter().any(|c| c.cpu_whole_ns_per_byte.is_some());
    groups(cases)
        .iter()
        .map(|&(link, mtu)| table(cases, link, mtu, whole))
        .collect()
}

/// The (link, MTU) pairs of `cases`, in the order first run.
fn groups(cases: &[StudyCaseResult]) -> Vec<(&str, u32)> {
    let mut groups: Vec<(&str, u32)> = Vec::new();
    for c in cases {
        if !groups.contains(&(c.link.as_str(), c.mtu_bytes)) {
            groups.push((&c.link, c.mtu_bytes));
        }
    }
    groups
}

/// The transports of one group, in the order first run.
fn transports<'a>(cases: &'a [StudyCaseResult], link: &str, mtu: u32) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for c in cases
        .iter()
        .filter(|c| c.link == link && c.mtu_bytes == mtu)
    {
        if !v.contains(&c.transport.as_str()) {
            v.push(&c.transport);
        }
    }
    v
}

/// One stack's cases over the rounds, and those that ran.
struct Rounds<'a> {
    all: Vec<&'a StudyCaseResult>,
    ok: Vec<&'a StudyCaseResult>,
}

impl Rounds<'_> {
    fn of<'a>(cases: &'a [StudyCaseResult], link: &str, mtu: u32, t: &str) -> Rounds<'a> {
        let all: Vec<&StudyCaseResult> = cases
            .iter()
            .filter(|c| c.link == link && c.mtu_bytes == mtu && c.transport == t)
            .collect();
        let ok = all.iter().copied().filter(|c| c.error.is_none()).collect();
        Rounds { all, ok }
    }

    fn values(&self, f: impl Fn(&StudyCaseResult) -> Option<f64>) -> Vec<f64> {
        self.ok.iter().filter_map(|c| f(c)).collect()
    }

    /// (max - min) / median of the latencies, with two rounds or more.
    fn latency_spread(&self) -> Option<f64> {
        super::rounds::spread(&self.values(|c| c.latency_ns))
    }
}

/// Each stack's latency against tcp's over the same link and MTU, taken
/// within each round ([`super::rounds::ratio`]).
pub fn ratios(cases: &[StudyCaseResult]) -> Vec<crate::result::StudyRatio> {
    let mut v = Vec::new();
    for (link, mtu) in groups(cases) {
        let group = match mtu {
            0 => link.to_string(),
            m => format!("{link}, MTU {m}"),
        };
        let at = |c: &StudyCaseResult| c.link == link && c.mtu_bytes == mtu;
        for t in transports(cases, link, mtu)
            .into_iter()
            .filter(|t| *t != REFERENCE_STACK)
        {
            v.extend(super::rounds::ratio(
                cases,
                super::rounds::LATENCY,
                &group,
                (t, &|c| at(c) && c.transport == t),
                (REFERENCE_STACK, &|c| {
                    at(c) && c.transport == REFERENCE_STACK
                }),
            ));
        }
    }
    v
}

fn table(cases: &[StudyCaseResult], link: &str, mtu: u32, whole: bool) -> StudyTable {
    let mut columns = vec![
        "latency best, us",
        "latency median, us",
        "latency spread, %",
        "peak, Mbit/s",
        "n_1/2, B",
        "CPU client, ns/B",
        "CPU server, ns/B",
    ];
    if whole {
        columns.push("CPU whole, ns/B");
    }
    // Bounanos and Fleury 2007's Fig. 1: each stack's latency as a multiple of TCP's over
    // the same link, taken within each round, the median over the rounds
    // (below 1: faster than TCP/IP).
    columns.push("latency / tcp");
    let tcp_in = |round: Option<u32>| {
        cases
            .iter()
            .find(|c| {
                c.link == link
                    && c.mtu_bytes == mtu
                    && c.transport == REFERENCE_STACK
                    && c.round == round
            })
            .and_then(|c| c.latency_ns)
    };
    let mut most_rounds = 0;
    let rows = transports(cases, link, mtu)
        .into_iter()
        .map(|t| {
            let r = Rounds::of(cases, link, mtu, t);
            most_rounds = most_rounds.max(r.all.len());
            let lat = r.values(|c| c.latency_ns);
            let mut cells = vec![
                lat.iter().copied().reduce(f64::min).map(|n| n / 1e3),
                median(lat).map(|n| n / 1e3),
                r.latency_spread().map(|s| s * 100.0),
                median(r.values(|c| c.peak_bits_per_s)).map(|b| b / 1e6),
                median(r.values(|c| c.n_half_bytes.map(|b| b as f64))),
                median(r.values(|c| c.cpu_client_ns_per_byte)),
                median(r.values(|c| c.cpu_server_ns_per_byte)),
            ];
            if whole {
                cells.push(median(r.values(|c| c.cpu_whole_ns_per_byte)));
            }
            cells.push(median(
                r.ok.iter()
                    .filter_map(|c| c.latency_ns.zip(tcp_in(c.round)).map(|(n, t)| n / t))
                    .collect(),
            ));
            StudyRow {
                noisy: Vec::new(),
                label: row_label(&r),
                cells,
            }
        })
        .collect();
    StudyTable {
        title: format!(
            "Lean stacks over {link}, {}: latency (1 B, half the round trip: best, median and spread over {most_rounds} interleaved round{}), peak and n_1/2 (ping-pong), CPU per byte at {} on each end (getrusage{}), latency as a multiple of tcp's in the same round; medians over the rounds",
            match mtu {
                0 => "the path's own MTU".to_string(),
                m => format!("MTU {m}"),
            },
            if most_rounds == 1 { "" } else { "s" },
            crate::units::format_bytes(CPU_BYTES),
            if whole { "; whole: the machine's" } else { "" }
        ),
        row_header: "transport".into(),
        columns: columns.iter().map(|s| s.to_string()).collect(),
        rows,
        decimals: 2,
    }
}

/// The transport, and why it has no figures (or fewer rounds) when it
/// could not run in every round.
fn row_label(r: &Rounds) -> String {
    let Some(first) = r.all.first() else {
        return String::new();
    };
    if r.ok.is_empty() {
        return match first.error.as_deref() {
            Some(e) if e.starts_with(UNAVAILABLE) => format!("{} ({e})", first.transport),
            _ => format!("{} (failed)", first.transport),
        };
    }
    match r.all.len() - r.ok.len() {
        0 => first.transport.clone(),
        f => format!(
            "{} (failed in {f} of {} rounds)",
            first.transport,
            r.all.len()
        ),
    }
}

/// The warnings of `study` about its rounds: every transport whose
/// latency moved more than [`SPREAD_WARN`] between rounds over a link and
/// MTU, with its best and median (lean-stacks and fe-vs-ge).
pub fn round_warnings(study: &str, cases: &[StudyCaseResult]) -> Vec<String> {
    let mut w = Vec::new();
    for (link, mtu) in groups(cases) {
        for t in transports(cases, link, mtu) {
            let r = Rounds::of(cases, link, mtu, t);
            let Some(spread) = r.latency_spread().filter(|s| *s > SPREAD_WARN) else {
                continue;
            };
            let lat = r.values(|c| c.latency_ns);
            let n = lat.len();
            let best = lat.iter().copied().fold(f64::INFINITY, f64::min);
            w.push(format!(
                "{study}: {t} over {link}{}: latency moved {:.0}% between its {n} rounds \
                 (best {:.2} us, median {:.2} us): differences between stacks smaller than that \
                 are noise, not findings",
                match mtu {
                    0 => String::new(),
                    m => format!(", MTU {m}"),
                },
                spread * 100.0,
                best / 1e3,
                median(lat).unwrap_or(0.0) / 1e3
            ));
        }
    }
    w
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
            layers: Vec::new(),
        }
    }

    #[test]
    fn against_a_peer_every_stack_in_each_round_over_the_path_as_it_is() {
        let o = StudyOptions {
            peer: Some("node2:5999".into()),
            ..opts()
        };
        let p = plan(&o, "1:1Mi", 3.0);
        assert_eq!(p.len(), 3 * 3);
        assert_eq!(p[1].label, "raw-peer-r1");
        assert_eq!((p[3].label.as_str(), p[3].role), ("tcp-peer-r2", "round"));
        assert_eq!(p[1].peer.as_deref(), Some("node2:5999"));
        assert_eq!((p[1].link.bits_per_s, p[1].mtu_bytes), (0, 0));
        assert_eq!(p[1].budget_s, 2.0);
        let t = tables(&[
            case("tcp", "peer node2:5999", 0, None),
            case("tipc", "peer node2:5999", 0, Some("unavailable: no TIPC")),
        ]);
        assert_eq!(t.len(), 1);
        assert!(t[0].title.contains("the path's own MTU"), "{}", t[0].title);
    }

    #[test]
    fn rounds_interleave_the_stacks_within_each_link_and_mtu() {
        let p = study_plan(StudyName::LeanStacks, &opts());
        assert_eq!(p.len(), 3 * 2 * 2 * 3);
        let labels: Vec<&str> = p[..6].iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "tcp-ge-mtu1500-r1",
                "raw-ge-mtu1500-r1",
                "tipc-ge-mtu1500-r1",
                "tcp-ge-mtu1500-r2",
                "raw-ge-mtu1500-r2",
                "tipc-ge-mtu1500-r2"
            ]
        );
        assert_eq!(p[35].label, "tipc-10ge-mtu9000-r3");
        assert_eq!(p[35].lab_spec(), "10ge,mtu=9000");
        assert_eq!(p[35].round, Some(3));
        // The report draws the first round's curves only.
        assert!(p
            .iter()
            .all(|c| (c.role == "curve") == (c.round == Some(1))));
        let sizes = crate::message::schedule::parse_sizes(&p[0].sizes, false).unwrap();
        assert!(sizes.contains(&CPU_BYTES), "{sizes:?}");
        assert_eq!(p[4].sweep_args, ["--load", "cpu:1"]);
        assert_eq!(rounds(Effort::Thorough), 5);
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
            round: None,
            over: None,
            noisy_bytes: Vec::new(),
            latency_noisy: false,
            latency_interfered: false,
            peak_interfered: false,
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
        assert!(
            t[0].title.contains("over 1 interleaved round)"),
            "{}",
            t[0].title
        );
        assert_eq!(t[0].columns.len(), 8);
        assert_eq!(t[0].rows[0].cells[..2], [Some(4.0), Some(4.0)]);
        assert_eq!(t[0].rows[0].cells[2], None, "no spread from one round");
        assert_eq!(t[0].rows[0].cells[6], Some(0.25));
        assert_eq!(t[0].rows[0].cells[7], Some(1.0), "tcp against itself");
        assert_eq!(
            t[0].rows[1].label,
            "tipc (unavailable: kernel built without TIPC)"
        );
        assert!(t[0].rows[1].cells.iter().all(Option::is_none));
        assert_eq!(t[1].rows[1].label, "raw (failed)");
        let mut whole = cases.clone();
        whole[0].cpu_whole_ns_per_byte = Some(2.0);
        let t = tables(&whole);
        assert_eq!(t[0].columns.len(), 9);
        assert_eq!(t[0].rows[0].cells[7], Some(2.0));
        assert_eq!(t[1].rows[0].cells[7], None);
    }

    /// `t` over ge in round `round` with latency `us`.
    fn round(t: &str, round: u32, us: Option<f64>) -> StudyCaseResult {
        let mut c = case(t, "ge", 1500, us.is_none().then_some("boom"));
        c.round = Some(round);
        c.latency_ns = us.map(|u| u * 1e3);
        c
    }

    #[test]
    fn rounds_give_best_median_spread_and_the_ratio_to_tcp_within_each_round() {
        let cases = vec![
            round("tcp", 1, Some(4.0)),
            round("raw", 1, Some(3.0)),
            round("xdp", 1, Some(2.0)),
            round("tcp", 2, Some(4.1)),
            round("raw", 2, Some(3.2)),
            round("xdp", 2, None),
            round("tcp", 3, Some(4.0)),
            round("raw", 3, Some(4.0)),
            round("xdp", 3, Some(2.2)),
        ];
        let t = &tables(&cases)[0];
        assert!(t.title.contains("over 3 interleaved rounds"), "{}", t.title);
        let last = t.columns.len() - 1;
        let tcp = &t.rows[0];
        assert_eq!(tcp.cells[..2], [Some(4.0), Some(4.0)]);
        assert!((tcp.cells[2].unwrap() - 2.5).abs() < 1e-9, "{tcp:?}");
        let raw = &t.rows[1];
        assert_eq!(raw.cells[..2], [Some(3.0), Some(3.2)]);
        assert!((raw.cells[2].unwrap() - 31.25).abs() < 1e-9, "{raw:?}");
        // Per round 0.75, 3.2/4.1 = 0.78, 1.0: the median.
        assert!(
            (raw.cells[last].unwrap() - 3.2 / 4.1).abs() < 1e-9,
            "{raw:?}"
        );
        assert_eq!(t.rows[2].label, "xdp (failed in 1 of 3 rounds)");
        assert_eq!(t.rows[2].cells[0], Some(2.0));
        // Only raw moved more than the warning's spread.
        let w = round_warnings("lean-stacks", &cases);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("raw over ge, MTU 1500: latency moved 31%"),
            "{w:?}"
        );
        assert!(w[0].contains("best 3.00 us, median 3.20 us"), "{w:?}");
    }
}
