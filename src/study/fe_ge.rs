//! `fe-vs-ge` (Nguyen 2001, Table 2): every transport that crosses a
//! network over Fast and Gigabit Ethernet, in interleaved rounds (every
//! transport over both links once per round, [`super::rounds`]; issue 44:
//! measured once, the MPICH/PVM latency ratio read 0.008 in one run and
//! 0.25 in the next, and PVM's daemon route came out "faster" than its
//! direct one). The table shows each figure's median over the rounds and
//! the latency's spread; the ratios (each transport's GE over FE, each
//! against tcp, PVM's daemon route against its direct one) are taken
//! within each round and shown with their lowest and highest round, and
//! name a winner only where every round agrees. Pure: the plan and the
//! tables.

use super::rounds::{self, median, ratio, role, Figure, LATENCY, PEAK, ROUND_BUDGET_SHARE};
use super::tables::{latency_bytes, noisy_at};
use super::{file_safe, StudyCase, StudyOptions};
use crate::lab::LinkRate;
use crate::result::{Mode, StudyCaseResult, StudyRatio, StudyRow, StudyTable};

/// The links, in the table's order.
pub const LINKS: [&str; 2] = ["fe", "ge"];

/// The transport the others are set against.
pub const REFERENCE: &str = "tcp";

/// PVM's two routes: direct (task to task) and through the daemons.
pub const PVM_ROUTES: (&str, &str) = ("pvm", "pvm(daemon)");

/// Every transport over both links once per round, rounds one after
/// another; each sweep [`ROUND_BUDGET_SHARE`] of `budget_s`.
pub fn plan(o: &StudyOptions, sizes: &str, budget_s: f64) -> Vec<StudyCase> {
    let mut v = Vec::new();
    for round in 1..=rounds::rounds(o.effort) {
        for t in &o.transports {
            for link in LINKS {
                v.push(StudyCase {
                    label: format!("{}-{link}-r{round}", file_safe(t)),
                    role: role(round),
                    transport: t.clone(),
                    link: LinkRate::parse(link).expect("fe and ge parse"),
                    mtu_bytes: 1500,
                    socket_buffer_bytes: None,
                    mode: Mode::Pingpong,
                    sizes: sizes.into(),
                    budget_s: budget_s * ROUND_BUDGET_SHARE,
                    sweep_args: o.sweep_args.clone(),
                    peer: None,
                    round: Some(round),
                    local: false,
                    over: None,
                    hub: false,
                });
            }
        }
        // Nguyen 2001's hub beside its switch: the reference transport
        // over fe through a hub, in the same round.
        let switch = v
            .iter()
            .rev()
            .find(|c| c.transport == REFERENCE && c.link.name == super::hub::HUB_LINK);
        if let Some(hub) = switch
            .filter(|c| c.round == Some(round))
            .map(super::hub::case)
        {
            v.push(hub);
        }
    }
    v
}

/// The transports of `cases`, in the order first run.
fn transports(cases: &[StudyCaseResult]) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for c in cases {
        if !v.contains(&c.transport.as_str()) {
            v.push(&c.transport);
        }
    }
    v
}

/// The cases of `t` over `link` that ran, over the rounds.
fn of<'a>(cases: &'a [StudyCaseResult], t: &str, link: &str) -> Vec<&'a StudyCaseResult> {
    cases
        .iter()
        .filter(|c| c.transport == t && c.link == link && c.error.is_none())
        .collect()
}

/// A case's latency, us.
fn latency_us(c: &StudyCaseResult) -> Option<f64> {
    c.latency_ns.map(|n| n / 1e3)
}

/// A case's peak, Mbit/s.
fn peak_mbit(c: &StudyCaseResult) -> Option<f64> {
    c.peak_bits_per_s.map(|b| b / 1e6)
}

/// The median over the rounds of `f`.
fn median_of(cs: &[&StudyCaseResult], f: impl Fn(&StudyCaseResult) -> Option<f64>) -> Option<f64> {
    median(cs.iter().filter_map(|c| f(c)).collect())
}

/// Whether any round's point behind a figure is noisy.
fn any_noisy(cs: &[&StudyCaseResult], at: impl Fn(&StudyCaseResult) -> Option<u64>) -> bool {
    cs.iter().any(|c| noisy_at(c, at(c)))
}

/// The study's tables: the figures, the ratios, and PVM's routes.
pub fn tables(cases: &[StudyCaseResult]) -> Vec<StudyTable> {
    let mut v = vec![figures_table(cases)];
    v.extend(rounds::ratio_table(
        "Ratios taken within each round (both cases measured in it), median and the lowest and highest round (with 3 rounds that range holds the median with 75%, with 5 94%); latency below 1 or peak above 1: the first faster, only where every round agrees",
        &ratios(cases),
    ));
    v.extend(pvm_routes_table(cases));
    v.extend(super::hub::table(cases));
    v
}

fn figures_table(cases: &[StudyCaseResult]) -> StudyTable {
    let n = cases.iter().filter_map(|c| c.round).max().unwrap_or(1);
    let rows = transports(cases)
        .into_iter()
        .map(|t| {
            let (fe, ge) = (of(cases, t, "fe"), of(cases, t, "ge"));
            let (lat, peak) = (latency_us, peak_mbit);
            let half = |c: &StudyCaseResult| c.n_half_bytes.map(|b| b as f64);
            let moved = |cs: &[&StudyCaseResult]| {
                rounds::spread(&cs.iter().filter_map(|c| c.latency_ns).collect::<Vec<_>>())
                    .map(|s| s * 100.0)
            };
            StudyRow {
                label: t.to_string(),
                cells: vec![
                    median_of(&fe, lat),
                    median_of(&ge, lat),
                    median_of(&fe, peak),
                    median_of(&ge, peak),
                    median_of(&fe, half),
                    median_of(&ge, half),
                    moved(&fe),
                    moved(&ge),
                ],
                noisy: vec![
                    any_noisy(&fe, latency_bytes),
                    any_noisy(&ge, latency_bytes),
                    any_noisy(&fe, |c| c.peak_bytes),
                    any_noisy(&ge, |c| c.peak_bytes),
                    any_noisy(&fe, |c| c.n_half_bytes),
                    any_noisy(&ge, |c| c.n_half_bytes),
                    false,
                    false,
                ],
            }
        })
        .collect();
    StudyTable {
        title: format!("Latency, peak and n_1/2 over Fast and Gigabit Ethernet (MTU 1500, ping-pong; peak from sizes of 16 times the emulated link's free burst, 48448 B, on): medians over {n} interleaved round{}, the latency's spread (max - min over the median) beside them", if n == 1 { "" } else { "s" }),
        row_header: "transport".into(),
        columns: [
            "latency FE, us",
            "latency GE, us",
            "peak FE, Mbit/s",
            "peak GE, Mbit/s",
            "n_1/2 FE, B",
            "n_1/2 GE, B",
            "latency spread FE, %",
            "latency spread GE, %",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        decimals: 1,
    }
}

/// The ratios the study compares, each within each round: every
/// transport's GE over its FE, every transport against tcp over each
/// link, and PVM's daemon route against its direct one.
pub fn ratios(cases: &[StudyCaseResult]) -> Vec<StudyRatio> {
    let figures: [Figure; 2] = [LATENCY, PEAK];
    let mut v = Vec::new();
    let ts = transports(cases);
    for t in &ts {
        for f in figures {
            v.extend(ratio(
                cases,
                f,
                "ge/fe",
                (&format!("{t} ge"), &|c| c.transport == *t && c.link == "ge"),
                (&format!("{t} fe"), &|c| c.transport == *t && c.link == "fe"),
            ));
        }
    }
    let mut pairs: Vec<(&str, &str)> = ts
        .iter()
        .filter(|t| **t != REFERENCE && ts.contains(&REFERENCE))
        .map(|t| (*t, REFERENCE))
        .collect();
    if ts.contains(&PVM_ROUTES.0) && ts.contains(&PVM_ROUTES.1) {
        pairs.push((PVM_ROUTES.1, PVM_ROUTES.0));
    }
    for (num, den) in pairs {
        for link in LINKS {
            for f in figures {
                v.extend(ratio(
                    cases,
                    f,
                    link,
                    (num, &|c| c.transport == num && c.link == link),
                    (den, &|c| c.transport == den && c.link == link),
                ));
            }
        }
    }
    v.extend(super::hub::ratios(cases));
    v
}

/// PVM's route through the pvmd daemons against its direct task-to-task
/// route (Nguyen 2001 compared them, as LAM's C2C against LAMD): both rows
/// (medians over the rounds) and the daemon's as a multiple of the direct
/// one's, the median of the ratios taken within each round (their range is
/// in the ratio table). None unless both were measured.
fn pvm_routes_table(cases: &[StudyCaseResult]) -> Option<StudyTable> {
    let (direct, daemon) = PVM_ROUTES;
    let ts = transports(cases);
    if !ts.contains(&direct) || !ts.contains(&daemon) {
        return None;
    }
    let (lat, peak) = (latency_us, peak_mbit);
    let row = |t: &str| {
        let (fe, ge) = (of(cases, t, "fe"), of(cases, t, "ge"));
        StudyRow {
            label: t.into(),
            cells: vec![
                median_of(&fe, lat),
                median_of(&ge, lat),
                median_of(&fe, peak),
                median_of(&ge, peak),
            ],
            noisy: vec![
                any_noisy(&fe, latency_bytes),
                any_noisy(&ge, latency_bytes),
                any_noisy(&fe, |c| c.peak_bytes),
                any_noisy(&ge, |c| c.peak_bytes),
            ],
        }
    };
    let (d, r) = (row(direct), row(daemon));
    // A ratio is as noisy as either of its two.
    let noisy = d
        .noisy
        .iter()
        .zip(&r.noisy)
        .map(|(a, b)| *a || *b)
        .collect();
    let within = |link: &str, f: Figure| {
        ratio(
            cases,
            f,
            link,
            (daemon, &|c| c.transport == daemon && c.link == link),
            (direct, &|c| c.transport == direct && c.link == link),
        )
    };
    let cells = [
        (("fe"), LATENCY),
        ("ge", LATENCY),
        ("fe", PEAK),
        ("ge", PEAK),
    ]
    .iter()
    .map(|&(link, f)| within(link, f).map(|r| r.median))
    .collect();
    Some(StudyTable {
        title: "PVM through the pvmd daemons (PvmDontRoute) against its direct route (PvmRouteDirect), raw data, ping-pong: medians over the rounds, the ratio taken within each round".into(),
        row_header: "route".into(),
        columns: [
            "latency FE, us",
            "latency GE, us",
            "peak FE, Mbit/s",
            "peak GE, Mbit/s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: vec![
            d,
            r,
            StudyRow {
                label: "daemon / direct".into(),
                cells,
                noisy,
            },
        ],
        decimals: 2,
    })
}

#[cfg(test)]
#[path = "fe_ge_tests.rs"]
mod tests;
