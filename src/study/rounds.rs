//! Interleaved rounds and the ratios taken within them, shared by the
//! studies that compare cases (`fe-vs-ge`, `lean-stacks`; issues 34 and
//! 44). A study that measured each case once saw a ratio between two
//! transports move from 0.008 to 0.25 between two runs, and PVM's daemon
//! route come out "faster" than its direct route: one sweep per case
//! measures the moment, not the transport. So every case is measured once
//! per round, rounds one after another (ABAB...), and a ratio is taken
//! within each round (both sweeps met the same conditions), then
//! summarised over the rounds: the median, and the lowest and highest
//! round. With n rounds the median ratio lies outside [lowest, highest]
//! with probability 2 / 2^n (25% for 3 rounds, 6% for 5): that range is
//! the ratio's interval, and a ratio whose range reaches 1 names no
//! winner. Pure functions.

use super::Effort;
use crate::result::{StudyCaseResult, StudyRatio, StudyRow, StudyTable};

/// Rounds of an `effort`'s study: every case is measured once per round,
/// rounds one after another, so that what drifts over the study (other
/// work, the lab's first packets, frequency) hits every case alike and the
/// spread over the rounds shows the noise (Bounanos and Fleury 2007 took
/// the best of five).
pub fn rounds(effort: Effort) -> u32 {
    match effort {
        Effort::Thorough => 5,
        _ => 3,
    }
}

/// Share of one round's budget in a sweep's budget before the rounds:
/// more time per case in all, less per sweep.
pub const ROUND_BUDGET_SHARE: f64 = 2.0 / 3.0;

/// Latency spread over the rounds (max - min over the median) above which
/// a row is named in the warnings: differences smaller than it are not
/// findings.
pub const SPREAD_WARN: f64 = 0.10;

/// A ratio's spread over the rounds above which it is named in the
/// warnings (the bound on Table 2's ratios over 3 runs).
pub const RATIO_SPREAD_WARN: f64 = 0.20;

/// The role of a round's cases: the first round's are the `curve`s the
/// report draws, the others `round`s.
pub fn role(round: u32) -> &'static str {
    if round == 1 {
        "curve"
    } else {
        "round"
    }
}

/// The median of `v` (None when empty).
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(crate::stats::quantile_sorted(&v, 0.5))
}

/// (max - min) / median of `v`, with two values or more.
pub fn spread(v: &[f64]) -> Option<f64> {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    median(v.to_vec())
        .filter(|m| v.len() >= 2 && *m > 0.0)
        .map(|m| (hi - lo) / m)
}

/// Which figure a ratio is of, and whether more of it is faster.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    /// Its name in files (`latency`, `peak`).
    pub name: &'static str,
    /// True for a rate (more is faster), false for a time.
    pub rate: bool,
    /// The figure of a case.
    pub of: fn(&StudyCaseResult) -> Option<f64>,
}

/// Latency, a time.
pub const LATENCY: Figure = Figure {
    name: "latency",
    rate: false,
    of: |c| c.latency_ns,
};

/// Peak throughput, a rate.
pub const PEAK: Figure = Figure {
    name: "peak",
    rate: true,
    of: |c| c.peak_bits_per_s,
};

/// The ratio of `figure` of the cases `num` picks to those `den` picks,
/// taken within each round both ran in (cases without a round count as
/// one round), over the rounds; None where no round has both. `link`
/// names where it was measured (`fe`, `ge/fe`).
pub fn ratio(
    cases: &[StudyCaseResult],
    figure: Figure,
    link: &str,
    (num_name, num): (&str, &dyn Fn(&StudyCaseResult) -> bool),
    (den_name, den): (&str, &dyn Fn(&StudyCaseResult) -> bool),
) -> Option<StudyRatio> {
    let value = |pick: &dyn Fn(&StudyCaseResult) -> bool, round: Option<u32>| {
        cases
            .iter()
            .filter(|c| c.error.is_none() && c.round == round && pick(c))
            .find_map(figure.of)
    };
    let mut rounds: Vec<Option<u32>> = cases.iter().map(|c| c.round).collect();
    rounds.dedup();
    rounds.sort();
    rounds.dedup();
    let per_round: Vec<f64> = rounds
        .iter()
        .filter_map(|&r| Some((value(num, r)?, value(den, r)?)))
        .filter(|(_, d)| *d > 0.0)
        .map(|(n, d)| n / d)
        .collect();
    let median = median(per_round.clone())?;
    let low = per_round.iter().copied().fold(f64::INFINITY, f64::min);
    let high = per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let n = per_round.len();
    // The side that takes less time, only where every round agrees.
    let num_faster = if figure.rate { low > 1.0 } else { high < 1.0 };
    let den_faster = if figure.rate { high < 1.0 } else { low > 1.0 };
    let faster = match (n >= 2, num_faster, den_faster) {
        (true, true, _) => Some(num_name.to_string()),
        (true, _, true) => Some(den_name.to_string()),
        _ => None,
    };
    Some(StudyRatio {
        figure: figure.name.into(),
        link: link.into(),
        numerator: num_name.into(),
        denominator: den_name.into(),
        per_round,
        median,
        low,
        high,
        coverage: 1.0 - 2.0 * 0.5f64.powi(n as i32),
        faster,
    })
}

/// The ratios as a table: a row per ratio and figure, per link its
/// median, lowest and highest round; a row whose range reaches 1 says it
/// names no winner.
pub fn ratio_table(title: &str, ratios: &[StudyRatio]) -> Option<StudyTable> {
    let mut links: Vec<&str> = Vec::new();
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for r in ratios {
        if !links.contains(&r.link.as_str()) {
            links.push(&r.link);
        }
        let key = (
            r.numerator.as_str(),
            r.denominator.as_str(),
            r.figure.as_str(),
        );
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        return None;
    }
    let rows = keys
        .iter()
        .map(|&(num, den, fig)| {
            let of = |link: &str| {
                ratios.iter().find(|r| {
                    (
                        r.numerator.as_str(),
                        r.denominator.as_str(),
                        r.figure.as_str(),
                        r.link.as_str(),
                    ) == (num, den, fig, link)
                })
            };
            let open: Vec<&str> = links
                .iter()
                .copied()
                .filter(|l| of(l).is_some_and(|r| r.faster.is_none()))
                .collect();
            let mut label = format!("{num} / {den}, {fig}");
            if !open.is_empty() {
                label.push_str(&format!(" (no winner over {}: spans 1)", open.join(", ")));
            }
            StudyRow {
                label,
                cells: links
                    .iter()
                    .flat_map(|l| {
                        let r = of(l);
                        [r.map(|r| r.median), r.map(|r| r.low), r.map(|r| r.high)]
                    })
                    .collect(),
                noisy: Vec::new(),
            }
        })
        .collect();
    Some(StudyTable {
        title: title.into(),
        row_header: "ratio".into(),
        columns: links
            .iter()
            .flat_map(|l| {
                [
                    format!("{l} median"),
                    format!("{l} lowest"),
                    format!("{l} highest"),
                ]
            })
            .collect(),
        rows,
        decimals: 3,
    })
}

/// Warnings for the ratios that moved more than [`RATIO_SPREAD_WARN`]
/// between rounds, and those that name no winner.
pub fn ratio_warnings(study: &str, ratios: &[StudyRatio]) -> Vec<String> {
    let mut w = Vec::new();
    for r in ratios.iter().filter(|r| r.per_round.len() >= 2) {
        let moved = spread(&r.per_round).unwrap_or(0.0);
        let range = format!(
            "{:.3} (lowest {:.3}, highest {:.3} over {} rounds)",
            r.median,
            r.low,
            r.high,
            r.per_round.len()
        );
        if moved > RATIO_SPREAD_WARN {
            w.push(format!(
                "{study}: {} / {} {} over {} moved {:.0}% between rounds: {range}",
                r.numerator,
                r.denominator,
                r.figure,
                r.link,
                moved * 100.0
            ));
        }
        if r.faster.is_none() {
            w.push(format!(
                "{study}: {} / {} {} over {}: {range} reaches 1: neither is faster",
                r.numerator, r.denominator, r.figure, r.link
            ));
        }
    }
    w
}

#[cfg(test)]
#[path = "rounds_tests.rs"]
mod tests;
