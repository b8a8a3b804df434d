//! A study's NAS rows: Mop/s of NAS kernels over each stack of the study,
//! beside its sweeps.
//!
//! * `lean-stacks` (Bounanos and Fleury 2007, Table 2: Mop/s of each NAS
//!   kernel over each stack, loaded and unloaded): the ranks run one per
//!   lab node, over tcp and the lean stacks (raw frames and AF_XDP carry a
//!   process group between lab nodes as they carry a sweep) and each MPI's
//!   TCP path ([`plan_lean`]).
//! * `layers` (issue 47): on each path of the study (the loopback and
//!   shared memory on this machine, a lab link between two nodes), the same
//!   kernel through every row of that path: sockets or plain shared memory,
//!   UCX and libfabric over them, each MPI over those ([`plan_layers`]).
//!
//! One `wulf npb KERNEL --via STACKS` per kernel, path and round, every
//! stack in turn within it, rounds one after another (and, with
//! `lean-stacks`' `--load`, an unloaded and a loaded run in each round), so
//! a drift of the machine hits every stack alike and the spread over the
//! rounds shows the noise. Pure: the plans and the tables.

use super::{Effort, StudyOptions};
use crate::lab::LinkRate;
use crate::result::{NpbResult, StudyNasCase, StudyNasStack, StudyRow, StudyTable};

/// The class every NAS row runs: the published studies' clusters ran class A and B
/// for minutes; class S over two processes takes seconds per stack.
pub const CLASS: &str = "S";
/// Processes: one per lab node across a link, two on this machine.
pub const NPROCS: usize = 2;

/// The kernels of an effort: CG (irregular, latency-bound) always; the
/// others from the default effort on.
pub fn kernels(effort: Effort) -> &'static [&'static str] {
    match effort {
        Effort::Quick => &["cg"],
        _ => &["cg", "ep", "is", "mg"],
    }
}

/// One NAS run to make.
#[derive(Debug, Clone, PartialEq)]
pub struct NasCase {
    /// Label, also the file's stem.
    pub label: String,
    /// Kernel.
    pub kernel: &'static str,
    /// The lab link, or the path on this machine (`loopback`, `shm`; rate 0).
    pub link: LinkRate,
    /// MTU of the lab's nodes; 0 on this machine.
    pub mtu_bytes: u32,
    /// Round, from 1.
    pub round: u32,
    /// The `--load` it runs under (the study's), or None: unloaded.
    pub load: Option<String>,
    /// The stacks linking the processes, in order (those unavailable here
    /// are left out when it runs).
    pub vias: Vec<String>,
}

impl NasCase {
    /// The `--lab` spec of its lab; None on this machine.
    pub fn lab_spec(&self) -> Option<String> {
        (self.mtu_bytes != 0).then(|| format!("{},mtu={}", self.link.name, self.mtu_bytes))
    }
}

/// `lean-stacks`' NAS runs: per link at its first MTU, per round, per
/// kernel, unloaded (and loaded, when the study has a `--load`). None
/// against a real peer: NAS ranks need nodes wulf starts.
pub fn plan_lean(o: &StudyOptions) -> Vec<NasCase> {
    if o.peer.is_some() {
        return Vec::new();
    }
    let Some(&mtu) = o.mtus_bytes.first() else {
        return Vec::new();
    };
    let load = o
        .sweep_args
        .iter()
        .position(|a| a == "--load")
        .and_then(|i| o.sweep_args.get(i + 1))
        .cloned();
    let halves: Vec<Option<String>> = match load {
        Some(l) => vec![None, Some(l)],
        None => vec![None],
    };
    let mut v = Vec::new();
    for link in &o.links {
        for round in 1..=super::lean::rounds(o.effort) {
            for &kernel in kernels(o.effort) {
                for load in &halves {
                    v.push(NasCase {
                        label: format!(
                            "nas-{kernel}-{}-mtu{mtu}{}-r{round}",
                            link.name,
                            if load.is_some() { "-loaded" } else { "" }
                        ),
                        kernel,
                        link: link.clone(),
                        mtu_bytes: mtu,
                        round,
                        load: load.clone(),
                        vias: o.transports.clone(),
                    });
                }
            }
        }
    }
    v
}

/// `layers`' NAS runs: per path (as the study's groups), per round, per
/// kernel, every row of the path in one run.
pub fn plan_layers(o: &StudyOptions) -> Vec<NasCase> {
    let mut v = Vec::new();
    for g in &o.layers {
        let mtu = if g.local {
            0
        } else {
            super::layers::LINK_MTU_BYTES
        };
        for round in 1..=super::rounds::rounds(o.effort) {
            for &kernel in kernels(o.effort) {
                v.push(NasCase {
                    label: format!("nas-{kernel}-{}-r{round}", g.link.name),
                    kernel,
                    link: g.link.clone(),
                    mtu_bytes: mtu,
                    round,
                    load: None,
                    vias: g.rows.iter().map(|(t, _)| t.clone()).collect(),
                });
            }
        }
    }
    v
}

/// What a run gave: its figures per stack (`vias`, in order), or why it
/// failed as a whole.
pub fn case_result(
    c: &NasCase,
    vias: &[String],
    outcome: Result<(&NpbResult, String), String>,
) -> StudyNasCase {
    let (file, error, stacks) = match outcome {
        Err(e) => (None, Some(e), Vec::new()),
        Ok((r, file)) => {
            let stacks = vias
                .iter()
                .map(|via| {
                    let run = r.runs.iter().find(|x| &x.via == via);
                    StudyNasStack {
                        via: via.clone(),
                        mop_s: run.and_then(|x| x.best_mop_s),
                        error: match run {
                            None => Some("not run".to_string()),
                            Some(x) => x.error.clone(),
                        },
                    }
                })
                .collect();
            (Some(file), None, stacks)
        }
    };
    StudyNasCase {
        label: c.label.clone(),
        kernel: c.kernel.to_string(),
        class: CLASS.to_string(),
        nprocs: NPROCS,
        link: c.link.name.clone(),
        mtu_bytes: c.mtu_bytes,
        round: c.round,
        loaded: c.load.is_some(),
        file,
        error,
        stacks,
    }
}

/// One table per link or path: a row per kernel (and per kernel loaded), a
/// column per stack with its median Mop/s over the rounds, and the widest
/// stack's spread over the rounds ((max - min) / median, %); `source`, the
/// published table it stands for, ends the title.
pub fn tables(cases: &[StudyNasCase], source: Option<&str>) -> Vec<StudyTable> {
    let mut links: Vec<(&str, u32)> = Vec::new();
    for c in cases {
        if !links.contains(&(c.link.as_str(), c.mtu_bytes)) {
            links.push((&c.link, c.mtu_bytes));
        }
    }
    links
        .into_iter()
        .map(|(link, mtu)| {
            let here: Vec<&StudyNasCase> = cases
                .iter()
                .filter(|c| c.link == link && c.mtu_bytes == mtu)
                .collect();
            let mut stacks: Vec<&str> = Vec::new();
            let mut rows: Vec<(&str, bool)> = Vec::new();
            for c in &here {
                for s in &c.stacks {
                    if !stacks.contains(&s.via.as_str()) {
                        stacks.push(&s.via);
                    }
                }
                if !rows.contains(&(c.kernel.as_str(), c.loaded)) {
                    rows.push((&c.kernel, c.loaded));
                }
            }
            let rounds = here.iter().map(|c| c.round).max().unwrap_or(0);
            let mut columns: Vec<String> = stacks.iter().map(|s| format!("{s}, Mop/s")).collect();
            columns.push("spread, % (widest stack)".into());
            let rows = rows
                .into_iter()
                .map(|(kernel, loaded)| {
                    let mut spread: Option<f64> = None;
                    let mut cells: Vec<Option<f64>> = stacks
                        .iter()
                        .map(|&via| {
                            let v: Vec<f64> = here
                                .iter()
                                .filter(|c| c.kernel == kernel && c.loaded == loaded)
                                .flat_map(|c| &c.stacks)
                                .filter(|s| s.via == via)
                                .filter_map(|s| s.mop_s)
                                .collect();
                            let m = median(&v);
                            if let (Some(m), true) = (m, v.len() >= 2) {
                                let hi = v.iter().copied().fold(f64::MIN, f64::max);
                                let lo = v.iter().copied().fold(f64::MAX, f64::min);
                                let s = (hi - lo) / m * 100.0;
                                spread = Some(spread.map_or(s, |x: f64| x.max(s)));
                            }
                            m
                        })
                        .collect();
                    cells.push(spread);
                    StudyRow {
                        noisy: Vec::new(),
                        label: if loaded {
                            format!("{kernel}, loaded")
                        } else {
                            kernel.to_string()
                        },
                        cells,
                    }
                })
                .collect();
            StudyTable {
                title: title(link, mtu, rounds, source),
                row_header: "kernel".into(),
                columns,
                rows,
                decimals: 1,
            }
        })
        .collect()
}

/// A table's title: where the processes ran, what the cells are, and the
/// published table it stands for.
fn title(link: &str, mtu_bytes: u32, rounds: u32, source: Option<&str>) -> String {
    let place = if mtu_bytes == 0 {
        format!("on {link} (this machine): class {CLASS}, {NPROCS} processes")
    } else {
        format!(
            "over {link}, MTU {mtu_bytes}: class {CLASS}, {NPROCS} processes (one per lab node)"
        )
    };
    let plural = if rounds == 1 { "" } else { "s" };
    let source = source.map_or(String::new(), |s| format!(" ({s})"));
    format!("NAS kernels {place}, Mop/s per kernel and stack, median over {rounds} interleaved round{plural}{source}")
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    Some(crate::stats::quantile_sorted(&v, 0.5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::layers::LayersGroup;

    fn opts(effort: Effort, sweep_args: Vec<String>) -> StudyOptions {
        StudyOptions {
            link: LinkRate::parse("ge").unwrap(),
            effort,
            transports: vec!["tcp".into(), "raw".into()],
            links: vec![LinkRate::parse("ge").unwrap()],
            mtus_bytes: vec![1500, 9000],
            sweep_args,
            peer: None,
            layers: Vec::new(),
        }
    }

    #[test]
    fn each_round_runs_every_kernel_unloaded_then_loaded() {
        let p = plan_lean(&opts(Effort::Quick, Vec::new()));
        let labels: Vec<&str> = p.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "nas-cg-ge-mtu1500-r1",
                "nas-cg-ge-mtu1500-r2",
                "nas-cg-ge-mtu1500-r3"
            ]
        );
        assert_eq!(p[0].lab_spec().as_deref(), Some("ge,mtu=1500"));
        assert_eq!(p[0].vias, ["tcp", "raw"]);
        let loaded = plan_lean(&opts(
            Effort::Default,
            vec![
                "--cost".into(),
                "whole".into(),
                "--load".into(),
                "cpu:1".into(),
            ],
        ));
        assert_eq!(loaded.len(), 3 * 4 * 2);
        assert_eq!(loaded[0].load, None);
        assert_eq!(loaded[1].load.as_deref(), Some("cpu:1"));
        assert_eq!(loaded[1].label, "nas-cg-ge-mtu1500-loaded-r1");
        assert_eq!(loaded[2].kernel, "ep");
        let peer = StudyOptions {
            peer: Some("h:1".into()),
            ..opts(Effort::Quick, Vec::new())
        };
        assert!(plan_lean(&peer).is_empty());
    }

    #[test]
    fn layers_runs_every_row_of_a_path_together_on_this_machine_and_across_the_link() {
        let here = |name: &str| LinkRate {
            name: name.into(),
            bits_per_s: 0,
        };
        let o = StudyOptions {
            layers: vec![
                LayersGroup {
                    link: here("loopback"),
                    local: true,
                    rows: vec![
                        ("tcp".into(), None),
                        ("ucx(tcp)".into(), Some("tcp".into())),
                    ],
                },
                LayersGroup {
                    link: LinkRate::parse("ge").unwrap(),
                    local: false,
                    rows: vec![("tcp".into(), None)],
                },
            ],
            ..opts(Effort::Quick, Vec::new())
        };
        let p = plan_layers(&o);
        let labels: Vec<&str> = p.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "nas-cg-loopback-r1",
                "nas-cg-loopback-r2",
                "nas-cg-loopback-r3",
                "nas-cg-ge-r1",
                "nas-cg-ge-r2",
                "nas-cg-ge-r3"
            ]
        );
        assert_eq!(p[0].vias, ["tcp", "ucx(tcp)"]);
        assert_eq!(p[0].lab_spec(), None, "the loopback needs no lab");
        assert_eq!(p[3].lab_spec().as_deref(), Some("ge,mtu=1500"));
        assert!(p.iter().all(|c| c.load.is_none()));
    }

    #[test]
    fn a_table_says_where_its_processes_ran() {
        let mut on_loopback = run("cg", 1, false, &[("tcp", Some(100.0))]);
        on_loopback.link = "loopback".into();
        on_loopback.mtu_bytes = 0;
        let t = tables(&[on_loopback], None);
        assert!(
            t[0].title
                .starts_with("NAS kernels on loopback (this machine): class S, 2 processes,"),
            "{}",
            t[0].title
        );
        assert!(!t[0].title.contains("lab node") && !t[0].title.ends_with(')'));
        let t = tables(
            &[run("cg", 1, false, &[("tcp", Some(1.0))])],
            Some("X, Table 2"),
        );
        assert!(t[0].title.contains("over ge, MTU 1500"), "{}", t[0].title);
        assert!(t[0].title.ends_with("round (X, Table 2)"), "{}", t[0].title);
    }

    fn run(kernel: &str, round: u32, loaded: bool, mops: &[(&str, Option<f64>)]) -> StudyNasCase {
        StudyNasCase {
            label: format!("nas-{kernel}-r{round}"),
            kernel: kernel.into(),
            class: CLASS.into(),
            nprocs: NPROCS,
            link: "ge".into(),
            mtu_bytes: 1500,
            round,
            loaded,
            file: None,
            error: None,
            stacks: mops
                .iter()
                .map(|&(via, m)| StudyNasStack {
                    via: via.into(),
                    mop_s: m,
                    error: m.is_none().then(|| "boom".into()),
                })
                .collect(),
        }
    }

    #[test]
    fn a_row_per_kernel_and_load_a_column_per_stack_with_medians_and_spread() {
        let cases = vec![
            run(
                "cg",
                1,
                false,
                &[("tcp", Some(100.0)), ("raw", Some(120.0))],
            ),
            run("cg", 1, true, &[("tcp", Some(50.0)), ("raw", None)]),
            run(
                "cg",
                2,
                false,
                &[("tcp", Some(110.0)), ("raw", Some(130.0))],
            ),
            run("cg", 2, true, &[("tcp", Some(60.0)), ("raw", None)]),
            run("cg", 3, false, &[("tcp", Some(90.0)), ("raw", Some(125.0))]),
        ];
        let t = tables(&cases, Some("Bounanos and Fleury 2007, Table 2"));
        assert_eq!(t.len(), 1);
        assert!(
            t[0].title.contains("median over 3 interleaved rounds"),
            "{}",
            t[0].title
        );
        assert_eq!(
            t[0].columns,
            ["tcp, Mop/s", "raw, Mop/s", "spread, % (widest stack)"]
        );
        let rows: Vec<&str> = t[0].rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(rows, ["cg", "cg, loaded"]);
        assert_eq!(t[0].rows[0].cells[..2], [Some(100.0), Some(125.0)]);
        // tcp: (110 - 90) / 100 = 20%, raw 10 / 125 = 8%: the widest.
        assert!((t[0].rows[0].cells[2].unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(t[0].rows[1].cells[1], None, "raw failed under load");
    }
}
