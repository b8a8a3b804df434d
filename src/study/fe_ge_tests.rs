//! fe-vs-ge's rounds, medians and ratios.

use super::*;
use crate::study::tables::tests::in_round as at;

#[test]
fn figures_are_medians_over_the_rounds_and_one_row_per_transport() {
    let cases = vec![
        at("tcp", "fe", 1, 50.0, 90.0),
        at("tcp", "ge", 1, 20.0, 900.0),
        at("mpi:mpich(tcp)", "fe", 1, 60.0, 80.0),
        at("tcp", "fe", 2, 70.0, 91.0),
        at("tcp", "ge", 2, 22.0, 910.0),
        at("tcp", "fe", 3, 52.0, 89.0),
        at("tcp", "ge", 3, 21.0, 905.0),
    ];
    let all = tables(&cases);
    assert_eq!(all.len(), 2, "no PVM, no PVM route table");
    let t = &all[0];
    assert!(t.title.contains("over 3 interleaved rounds"), "{}", t.title);
    assert_eq!(t.rows.len(), 2);
    assert_eq!(
        t.rows[0].cells[..4],
        [Some(52.0), Some(21.0), Some(90.0), Some(905.0)]
    );
    // Spread of tcp's FE latency: (70 - 50) / 52.
    assert!((t.rows[0].cells[6].unwrap() - 2000.0 / 52.0).abs() < 1e-9);
    assert_eq!(t.rows[1].cells[3], None, "mpich did not run over ge");
    let r = ratios(&cases);
    let gf = r
        .iter()
        .find(|r| r.link == "ge/fe" && r.figure == "latency" && r.numerator == "tcp ge")
        .unwrap();
    assert_eq!(gf.per_round.len(), 3);
    assert_eq!(gf.faster.as_deref(), Some("tcp ge"));
    // mpich against tcp over fe: one round only, no winner.
    let m = r.iter().find(|r| r.numerator == "mpi:mpich(tcp)").unwrap();
    assert_eq!((m.per_round.len(), m.faster.clone()), (1, None));
}

/// The runs: PVM's daemon route read "faster" than its direct
/// one in one run (0.08). Within rounds whose ratios straddle 1 the
/// table's median is no winner, and the ratio says so.
#[test]
fn pvm_routes_name_no_winner_when_the_rounds_disagree() {
    let mut cases = Vec::new();
    for (round, direct, daemon) in [(1, 100.0, 8.0), (2, 100.0, 150.0), (3, 100.0, 130.0)] {
        cases.push(at("pvm", "fe", round, direct, 80.0));
        cases.push(at("pvm(daemon)", "fe", round, daemon, 20.0));
    }
    let all = tables(&cases);
    let pvm = all.iter().find(|t| t.row_header == "route").unwrap();
    assert_eq!(pvm.rows[2].label, "daemon / direct");
    assert!(
        (pvm.rows[2].cells[0].unwrap() - 1.3).abs() < 1e-9,
        "{pvm:?}"
    );
    assert!((pvm.rows[2].cells[2].unwrap() - 0.25).abs() < 1e-9);
    assert_eq!(pvm.rows[2].cells[1], None, "no route over ge");
    let r = ratios(&cases);
    let lat = r
        .iter()
        .find(|r| r.numerator == "pvm(daemon)" && r.figure == "latency" && r.link == "fe")
        .unwrap();
    assert_eq!(lat.faster, None, "{lat:?}");
    assert!((lat.low - 0.08).abs() < 1e-9 && (lat.high - 1.5).abs() < 1e-9);
    let peak = r
        .iter()
        .find(|r| r.numerator == "pvm(daemon)" && r.figure == "peak")
        .unwrap();
    assert_eq!(peak.faster.as_deref(), Some("pvm"), "direct moves 4x more");
    let ratio_table = all.iter().find(|t| t.row_header == "ratio").unwrap();
    assert!(ratio_table
        .rows
        .iter()
        .any(|r| r.label == "pvm(daemon) / pvm, latency (no winner over fe: spans 1)"));
}
