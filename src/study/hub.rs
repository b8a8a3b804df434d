//! `fe-vs-ge`'s hub row (Nguyen 2001, Table 2 beside its hub): tcp over
//! Fast Ethernet through a hub (`--lab fe,hub`, [`crate::lab::hub`])
//! against the same link through a switch, in the same interleaved rounds
//! as the rest of the study, and the hub's latency and peak as multiples
//! of the switch's, taken within each round. Nguyen 2001's hub added about
//! 15% to the latency and took about 10% off the peak; the lab's hub
//! shares one budget of the link rate fairly between the nodes but
//! emulates no collisions or back-off, so its row shows what the hub's
//! own shaper costs each frame (one more htb stage on every path: tcp's
//! 1-byte latency over fe 1.19x the switch's in three rounds, load 6-9),
//! not what collisions cost. The table says both, so a reader sees what
//! the lab does not model beside what it measured. Pure: the plan's case
//! and the table.

use super::fe_ge::REFERENCE;
use super::rounds::{median, ratio, Figure, LATENCY, PEAK};
use super::StudyCase;
use crate::result::{StudyCaseResult, StudyRatio, StudyRow, StudyTable};

/// The link the hub row is measured over (Nguyen 2001's hub was 10/100).
pub const HUB_LINK: &str = "fe";

/// How a hub case's link is named in the study's cases (`fe,hub`).
pub fn link_name(link: &str) -> String {
    format!("{link},hub")
}

/// Nguyen 2001's hub against its switch: (latency, peak) as multiples.
pub const NGUYEN_HUB: (f64, f64) = (1.15, 0.90);

/// The hub's case of one round: `switch`, the reference transport's case
/// over [`HUB_LINK`] in that round, through a hub instead.
pub fn case(switch: &StudyCase) -> StudyCase {
    StudyCase {
        label: switch
            .label
            .replacen(&format!("-{HUB_LINK}-"), &format!("-{HUB_LINK}-hub-"), 1),
        hub: true,
        ..switch.clone()
    }
}

/// Whether `c` is tcp over fe through a switch (`hub` false) or a hub.
fn is(c: &StudyCaseResult, hub: bool) -> bool {
    let link = if hub {
        link_name(HUB_LINK)
    } else {
        HUB_LINK.to_string()
    };
    c.transport == REFERENCE && c.link == link
}

/// The hub's latency and peak against the switch's, each within each
/// round; empty unless both were measured in some round.
pub fn ratios(cases: &[StudyCaseResult]) -> Vec<StudyRatio> {
    let (hub, switch) = (format!("{REFERENCE} hub"), format!("{REFERENCE} switch"));
    [LATENCY, PEAK]
        .into_iter()
        .filter_map(|f: Figure| {
            ratio(
                cases,
                f,
                "hub/switch",
                (&hub, &|c| is(c, true)),
                (&switch, &|c| is(c, false)),
            )
        })
        .collect()
}

/// The hub row's table: tcp over fe through a switch and through a hub
/// (medians over the rounds), the hub's multiple of the switch's (the
/// median of the ratios within rounds) and Nguyen 2001's. None without a
/// hub case.
pub fn table(cases: &[StudyCaseResult]) -> Option<StudyTable> {
    if !cases.iter().any(|c| is(c, true)) {
        return None;
    }
    let medians = |hub: bool| {
        let of = |f: Figure| {
            median(
                cases
                    .iter()
                    .filter(|c| c.error.is_none() && is(c, hub))
                    .filter_map(f.of)
                    .collect(),
            )
        };
        vec![of(LATENCY).map(|ns| ns / 1e3), of(PEAK).map(|b| b / 1e6)]
    };
    let r = ratios(cases);
    let within = |figure: &str| r.iter().find(|x| x.figure == figure).map(|x| x.median);
    let row = |label: &str, cells: Vec<Option<f64>>| StudyRow {
        label: label.into(),
        noisy: vec![false; cells.len()],
        cells,
    };
    Some(StudyTable {
        title: format!(
            "A hub against a switch ({REFERENCE} over {HUB_LINK}, ping-pong, in the same rounds): Nguyen 2001's hub \
             added about 15% to the latency and took about 10% off the peak; the lab's hub shares one budget of \
             the link rate fairly between the nodes but emulates no collisions or back-off, so it shows the \
             cost of the hub's own shaper on each frame, not of collisions"
        ),
        row_header: "medium".into(),
        columns: ["latency, us", "peak, Mbit/s"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: vec![
            row("switch", medians(false)),
            row("hub", medians(true)),
            row("hub / switch, here", vec![within("latency"), within("peak")]),
            row(
                "hub / switch, Nguyen 2001",
                vec![Some(NGUYEN_HUB.0), Some(NGUYEN_HUB.1)],
            ),
        ],
        decimals: 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tables::tests::in_round as at;

    /// Three rounds of tcp over fe through a switch and a hub: the table's
    /// medians, the hub's multiples within rounds, and the seed's beside
    /// them; the ratios name the switch faster only where every round
    /// agrees.
    #[test]
    fn the_hub_row_sets_the_hub_against_the_switch_within_rounds() {
        let hub = link_name(HUB_LINK);
        let mut cases = Vec::new();
        for (round, (s_us, h_us), (s_mb, h_mb)) in [
            (1, (50.0, 60.0), (90.0, 80.0)),
            (2, (70.0, 77.0), (92.0, 84.0)),
            (3, (52.0, 62.4), (89.0, 81.0)),
        ] {
            cases.push(at("tcp", HUB_LINK, round, s_us, s_mb));
            cases.push(at("tcp", &hub, round, h_us, h_mb));
        }
        let t = table(&cases).expect("a hub table");
        assert_eq!(t.rows[0].cells, vec![Some(52.0), Some(90.0)]);
        assert_eq!(t.rows[1].cells, vec![Some(62.4), Some(81.0)]);
        // Latency ratios 1.2, 1.1, 1.2: median 1.2.
        assert!((t.rows[2].cells[0].unwrap() - 1.2).abs() < 1e-9, "{t:?}");
        assert_eq!(t.rows[3].cells, vec![Some(1.15), Some(0.90)]);
        let r = ratios(&cases);
        let lat = r.iter().find(|x| x.figure == "latency").unwrap();
        assert_eq!(lat.faster.as_deref(), Some("tcp switch"));
        assert_eq!(lat.per_round.len(), 3);
        // Without a hub case, no table.
        let switch_only: Vec<_> = cases
            .iter()
            .filter(|c| c.link == HUB_LINK)
            .cloned()
            .collect();
        assert!(table(&switch_only).is_none());
        assert!(ratios(&switch_only).is_empty());
    }
}
