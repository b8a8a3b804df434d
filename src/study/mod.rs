//! Published network studies as plans of sweeps in the link lab, and the
//! tables they produce. Pure: what to run ([`plan`]) and what the runs
//! mean ([`summarize`]); running them is `wulf study`'s job
//! (`commands::study`), which measures each case as an ordinary
//! `wulf sweep --lab` in a lab of its own.
//!
//! * `mtu-buffers` (Farrell and Ong 2003, Table 4.1; León Carri et al. 2004, Figs. 7-14): peak
//!   throughput and small-message latency for MTU 1500, 3000, 4500 and
//!   9000 crossed with socket buffers default, 64 KiB ... 1 MiB, over one
//!   link (ge by default); plus one full sweep per MTU with default buffers
//!   for the throughput, signature and saturation graphs. Cells are
//!   ping-pong sweeps, as NetPIPE measured the published studies' tables: the peak
//!   includes what latency costs at each size, which is what the socket
//!   buffer and MTU change.
//! * `fe-vs-ge` (Nguyen 2001, Table 2): every transport that crosses a network
//!   (tcp and each MPI on its TCP path), over Fast and Gigabit Ethernet:
//!   latency, peak and n_1/2, from full ping-pong sweeps in interleaved
//!   rounds, and the ratios between them taken within each round
//!   ([`fe_ge`], [`rounds`]).
//! * `lean-stacks` (Bounanos and Fleury 2007, Table 2 and Figs. 1-2): tcp against the lean
//!   stacks (raw Ethernet frames, AF_XDP, TIPC) and each MPI's TCP path,
//!   over ge and 10ge at MTU 1500 and 9000 ([`lean`]).
//! * `layers` (issue 47): the same message through sockets or shared
//!   memory, UCX, libfabric and each MPI over them, on the loopback, in
//!   shared memory and over a lab link: each layer's overhead over the
//!   one beneath it ([`layers`]).

pub mod fe_ge;
pub mod hub;
pub mod layers;
pub mod lean;
pub mod linpack;
pub mod nas_rows;
pub mod noise;
pub mod rounds;
pub mod tables;

use serde::{Deserialize, Serialize};

use crate::lab::LinkRate;
use crate::result::Mode;

/// The published studies wulf's studies reproduce, as the help, the
/// tables and the docs cite them (authors and year), with where to find
/// each (authors, title, venue, year).
pub const REFERENCES: [(&str, &str); 5] = [
    ("Bounanos and Fleury 2007", "Stylianos Bounanos and Martin Fleury, Gb Ethernet protocols for clusters: an OpenMPI, TIPC, GAMMA case study, ParCo 2007"),
    ("Farrell and Ong 2003", "Paul A. Farrell and Hong Ong, Factors involved in the performance of computations on Beowulf clusters, Electronic Transactions on Numerical Analysis 15, 2003"),
    ("Innocente et al. 2000", "R. Innocente, M. Corbatto and S. Cozzini, A PC cluster with high speed network interconnects, Abdus Salam ICTP and SISSA, Trieste, 2000"),
    ("León Carri et al. 2004", "Carolina León Carri, Carlos García Garino and Guillermo Marshall, Performance de red en clusters Beowulf, Mecánica Computacional XXIII, 2004"),
    ("Nguyen 2001", "Nguyen Hai Chau, A comparative study on performance of MPICH, LAM/MPI and PVM on a Linux cluster over Fast Ethernet, 2001"),
];

/// The studies wulf knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StudyName {
    /// MTU x socket buffer (Farrell and Ong 2003, Table 4.1, León Carri et al. 2004).
    MtuBuffers,
    /// Fast against Gigabit Ethernet per transport (Nguyen 2001, Table 2).
    FeVsGe,
    /// TCP/IP against lean stacks (Bounanos and Fleury 2007, Table 2, Figs. 1-2).
    LeanStacks,
    /// The layers under MPI: sockets, UCX, libfabric, MPI over them (issue 47).
    Layers,
}

impl StudyName {
    /// Every study of this kind (lab sweeps), for lists that must name
    /// them all (`--help`'s test).
    pub const ALL: [StudyName; 4] = [
        StudyName::MtuBuffers,
        StudyName::FeVsGe,
        StudyName::LeanStacks,
        StudyName::Layers,
    ];

    /// The name on the command line and in files.
    pub fn as_str(self) -> &'static str {
        match self {
            StudyName::MtuBuffers => "mtu-buffers",
            StudyName::FeVsGe => "fe-vs-ge",
            StudyName::LeanStacks => "lean-stacks",
            StudyName::Layers => "layers",
        }
    }

    /// What the study reproduces.
    pub fn about(self) -> &'static str {
        match self {
            StudyName::MtuBuffers => "TCP peak throughput and latency by MTU and socket buffer (Farrell and Ong 2003, Table 4.1), with one sweep per MTU for the throughput, signature and saturation graphs (León Carri et al. 2004, Figs. 7-14)",
            StudyName::FeVsGe => "latency, peak and n_1/2 of every transport that crosses a network, over Fast and Gigabit Ethernet, every transport over both links once per round in interleaved rounds: medians over the rounds, and the ratios (GE over FE, against tcp, PVM's daemon route against its direct one) taken within each round with their range (Nguyen 2001, Table 2)",
            StudyName::Layers => "the same message through the kernel's sockets or plain shared memory, UCX and libfabric over them, and each MPI over those (Open MPI's ob1, pml ucx and cm with mtl ofi, MPICH's ch4:ucx), on the loopback, in shared memory and over a lab link (--link), every row once per round in interleaved rounds: latency, peak and CPU per byte side by side, each layer's overhead over the one beneath it (latency added, latency and peak ratios with their lowest and highest round); then NAS kernels (class S, 2 processes) over every row of each path, Mop/s side by side",
            StudyName::LeanStacks => "TCP/IP against lean stacks (raw Ethernet frames, AF_XDP, TIPC) and each MPI's TCP path, over ge and 10ge at MTU 1500 and 9000, every stack once per round in interleaved rounds: latency (best, median, spread), peak, n_1/2 and CPU per byte on both ends, latency as a multiple of tcp's (Bounanos and Fleury 2007, Table 2, Figs. 1-2)",
        }
    }
}

/// MTUs of `mtu-buffers`.
pub const MTUS_BYTES: [u32; 4] = [1500, 3000, 4500, 9000];
/// Socket buffers of `mtu-buffers` (None: the kernel's default).
pub const SOCKET_BUFFERS_BYTES: [Option<u64>; 6] = [
    None,
    Some(64 << 10),
    Some(128 << 10),
    Some(256 << 10),
    Some(512 << 10),
    Some(1 << 20),
];

/// How long a study may take: budgets scale with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// Few sizes, small budgets: well under a minute per study.
    Quick,
    /// A few minutes.
    Default,
    /// Four times the default budgets.
    Thorough,
}

impl Effort {
    /// The effort `--quick` or `--thorough` asks for (clap makes them
    /// exclusive), else the default.
    pub fn from_flags(quick: bool, thorough: bool) -> Effort {
        match (quick, thorough) {
            (true, _) => Effort::Quick,
            (false, true) => Effort::Thorough,
            (false, false) => Effort::Default,
        }
    }

    /// Its name in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Quick => "quick",
            Effort::Default => "default",
            Effort::Thorough => "thorough",
        }
    }

    fn scale(self) -> f64 {
        match self {
            Effort::Quick => 0.3,
            Effort::Default => 1.0,
            Effort::Thorough => 4.0,
        }
    }
}

/// One sweep to run.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyCase {
    /// Short label, unique in the study (also the file name's stem).
    pub label: String,
    /// `cell` (one table cell) or `curve` (a full sweep for the graphs).
    pub role: &'static str,
    /// Transport.
    pub transport: String,
    /// The link.
    pub link: LinkRate,
    /// MTU of both nodes.
    pub mtu_bytes: u32,
    /// Socket buffers; None for the default.
    pub socket_buffer_bytes: Option<u64>,
    /// Pattern.
    pub mode: Mode,
    /// `--sizes` of the sweep.
    pub sizes: String,
    /// Budget of the sweep, seconds.
    pub budget_s: f64,
    /// Further `wulf sweep` options (the study's `--cost`, `--load`).
    pub sweep_args: Vec<String>,
    /// A real peer (`wulf serve` on another machine, `HOST[:PORT]`) to
    /// measure against instead of a lab; `link` and `mtu_bytes` are then
    /// unknown beforehand (rate 0, MTU 0) and the sweep's fingerprint says
    /// what the path is.
    pub peer: Option<String>,
    /// Which round of an interleaved study this is (lean-stacks: every
    /// stack once per round, rounds one after another); None where a study
    /// measures each case once.
    pub round: Option<u32>,
    /// Measured on this machine alone, with neither a lab nor a peer
    /// (`layers` over the loopback and shared memory).
    pub local: bool,
    /// The transport beneath this one (`layers`), whose case of the same
    /// round its overhead is taken over.
    pub over: Option<String>,
    /// Its lab's nodes joined by a hub instead of a switch (`fe-vs-ge`'s
    /// hub row, [`hub`]).
    pub hub: bool,
}

impl StudyCase {
    /// The `--lab` spec of its lab.
    pub fn lab_spec(&self) -> String {
        format!("{},mtu={}", self.link_name(), self.mtu_bytes)
    }

    /// Its link as the study's cases name it: `fe`, or `fe,hub` through a
    /// hub.
    pub fn link_name(&self) -> String {
        if self.hub {
            hub::link_name(&self.link.name)
        } else {
            self.link.name.clone()
        }
    }
}

/// What a study is run with.
#[derive(Debug, Clone)]
pub struct StudyOptions {
    /// The link of `mtu-buffers` (default ge).
    pub link: LinkRate,
    /// The effort.
    pub effort: Effort,
    /// Transports for `fe-vs-ge` (tcp and the MPIs' TCP paths found here)
    /// and `lean-stacks` (also those not available here: their rows say so).
    pub transports: Vec<String>,
    /// Links of `lean-stacks`.
    pub links: Vec<LinkRate>,
    /// MTUs of `lean-stacks`.
    pub mtus_bytes: Vec<u32>,
    /// Further `wulf sweep` options for every case.
    pub sweep_args: Vec<String>,
    /// `lean-stacks` against a real peer instead of lab links.
    pub peer: Option<String>,
    /// The paths of `layers` and their rows.
    pub layers: Vec<layers::LayersGroup>,
}

/// `64 KiB` style label of a socket buffer.
pub fn buffer_label(b: Option<u64>) -> String {
    b.map_or("default".into(), |b| {
        crate::units::format_bytes(b).replace(' ', "")
    })
}

/// The sweeps of study `name`.
pub fn plan(name: StudyName, o: &StudyOptions) -> Vec<StudyCase> {
    let s = o.effort.scale();
    let quick = o.effort == Effort::Quick;
    // NetPIPE's schedule, without the +-3 perturbations in the cells (a
    // table needs the peak, not the drop-outs).
    let curve_sizes = if quick { "1:1Mi" } else { "1:4Mi" };
    match name {
        StudyName::MtuBuffers => {
            let mut v = Vec::new();
            for &mtu in &MTUS_BYTES {
                for &buf in &SOCKET_BUFFERS_BYTES {
                    v.push(StudyCase {
                        label: format!("mtu{mtu}-buf{}", buffer_label(buf)),
                        role: "cell",
                        transport: "tcp".into(),
                        link: o.link.clone(),
                        mtu_bytes: mtu,
                        socket_buffer_bytes: buf,
                        mode: Mode::Pingpong,
                        sizes: if quick {
                            "1,1Mi".into()
                        } else {
                            "1,64Ki,256Ki,1Mi,4Mi".into()
                        },
                        budget_s: 2.5 * s,
                        sweep_args: o.sweep_args.clone(),
                        peer: None,
                        round: None,
                        local: false,
                        over: None,
                        hub: false,
                    });
                }
            }
            for &mtu in &MTUS_BYTES {
                v.push(StudyCase {
                    label: format!("mtu{mtu}-curve"),
                    role: "curve",
                    transport: "tcp".into(),
                    link: o.link.clone(),
                    mtu_bytes: mtu,
                    socket_buffer_bytes: None,
                    mode: Mode::Pingpong,
                    sizes: curve_sizes.into(),
                    budget_s: 8.0 * s,
                    sweep_args: o.sweep_args.clone(),
                    peer: None,
                    round: None,
                    local: false,
                    over: None,
                    hub: false,
                });
            }
            v
        }
        StudyName::FeVsGe => fe_ge::plan(o, curve_sizes, 10.0 * s),
        StudyName::LeanStacks => lean::plan(o, curve_sizes, 6.0 * s),
        StudyName::Layers => layers::plan(o, curve_sizes, 6.0 * s),
    }
}

/// `mpi:openmpi(tcp)` -> `mpi-openmpi-tcp`.
pub fn file_safe(t: &str) -> String {
    let s: String = t
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.trim_matches('-').replace("--", "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(effort: Effort) -> StudyOptions {
        StudyOptions {
            link: LinkRate::parse("ge").unwrap(),
            effort,
            transports: vec!["tcp".into(), "mpi:openmpi(tcp)".into()],
            links: vec![
                LinkRate::parse("ge").unwrap(),
                LinkRate::parse("10ge").unwrap(),
            ],
            mtus_bytes: vec![1500, 9000],
            sweep_args: Vec::new(),
            peer: None,
            layers: Vec::new(),
        }
    }

    #[test]
    fn mtu_buffers_is_the_seeds_grid_plus_one_curve_per_mtu() {
        let p = plan(StudyName::MtuBuffers, &opts(Effort::Default));
        assert_eq!(p.len(), 4 * 6 + 4);
        assert_eq!(p.iter().filter(|c| c.role == "curve").count(), 4);
        assert!(p.iter().any(|c| c.label == "mtu9000-buf64KiB"));
        assert_eq!(p[0].lab_spec(), "ge,mtu=1500");
        let labels: std::collections::HashSet<_> = p.iter().map(|c| &c.label).collect();
        assert_eq!(labels.len(), p.len(), "labels are unique");
        // Quick is cheaper than default, thorough dearer.
        let total = |e| {
            plan(StudyName::MtuBuffers, &opts(e))
                .iter()
                .map(|c| c.budget_s)
                .sum::<f64>()
        };
        assert!(total(Effort::Quick) < total(Effort::Default));
        assert!(total(Effort::Thorough) > total(Effort::Default));
    }

    #[test]
    fn fe_vs_ge_runs_each_transport_on_both_links_in_each_round() {
        let p = plan(StudyName::FeVsGe, &opts(Effort::Quick));
        // Per round: two transports over two links, and tcp over fe
        // through a hub (Nguyen 2001's hub row).
        assert_eq!(p.len(), 5 * 3);
        assert_eq!(p[2].label, "mpi-openmpi-tcp-fe-r1");
        assert_eq!(p[3].link.bits_per_s, 1_000_000_000);
        assert_eq!(
            (p[4].label.as_str(), p[4].round),
            ("tcp-fe-hub-r1", Some(1))
        );
        assert_eq!(p[4].lab_spec(), "fe,hub,mtu=1500");
        assert_eq!(p.iter().filter(|c| c.hub).count(), 3);
        assert_eq!((p[5].label.as_str(), p[5].role), ("tcp-fe-r2", "round"));
        assert_eq!(p[14].round, Some(3));
        let labels: std::collections::HashSet<_> = p.iter().map(|c| &c.label).collect();
        assert_eq!(labels.len(), p.len(), "labels are unique");
        assert_eq!(
            plan(StudyName::FeVsGe, &opts(Effort::Thorough)).len(),
            5 * 5
        );
    }
}
