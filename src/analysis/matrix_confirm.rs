//! Findings confirmed by re-measuring: a single noisy cell, or a round
//! of them under a load spike, makes false slow links and asymmetric
//! pairs; the coordinator measures every suspicious cell again alone after
//! the rounds, and a finding stands only when the re-measure confirms it.
//! Pure functions of the cells' figures.
//!
//! # Rules
//!
//! * The re-measures follow the cells of the rounds ([`split`]).
//! * **Slow link**: confirmed when its re-measure is outlying against the
//!   same median and MAD (the rounds') by the same rule
//!   ([`crate::stats::robust::OUTLIER_Z`] and
//!   [`super::matrix::MIN_RELATIVE`]).
//! * **Asymmetric pair**: confirmed when the re-measures of both
//!   directions are still further apart than the pair's limit.
//! * A finding whose cells were not re-measured stands as it was when
//!   re-measures are optional (a file from before re-measuring, cells
//!   built by hand), and is unconfirmed, naming nothing, when they are
//!   required (a run, whose budget was spent or which was interrupted
//!   before it could measure them again: [`super::matrix::Confirmation`]).
//!   Where they are required, a re-measure without the metric's figure
//!   (it failed, or its part was cut before a trial) or with fewer than
//!   [`MIN_CONFIRM_TRIALS`] trials (cut at its deadline) is no
//!   re-measure: one or two trials of a cut cell are a moment, not a
//!   link (issue 44: a 6-node fe lab named a slow link and two
//!   asymmetric pairs from latency cells all cut at their deadline).

use std::collections::BTreeMap;

use super::matrix::{ASYMMETRY_RATIO, MIN_RELATIVE};
use crate::result::matrix::{CellFigures, MatrixAnalysis, Spread};
use crate::stats::robust::{z_score, OUTLIER_Z};

/// The cells of the rounds and the re-measures after them.
pub fn split(cells: &[CellFigures]) -> (&[CellFigures], &[CellFigures]) {
    let first = cells
        .iter()
        .position(CellFigures::is_remeasure)
        .unwrap_or(cells.len());
    cells.split_at(first)
}

/// The least trials a re-measure needs to confirm a finding where
/// confirmation is required (see the module notes).
pub const MIN_CONFIRM_TRIALS: u32 = 3;

/// A metric's value of a cell; larger latency or smaller bandwidth is
/// worse.
fn value(metric: &str, c: &CellFigures) -> Option<f64> {
    if metric == "latency" {
        c.latency_ns()
    } else {
        c.bits_per_s()
    }
}

/// A re-measure's value of `metric` when it can confirm a finding: with
/// `required`, only from a figure of at least [`MIN_CONFIRM_TRIALS`]
/// trials.
fn confirming(metric: &str, c: &CellFigures, required: bool) -> Option<f64> {
    let figure = if metric == "latency" {
        c.latency
    } else {
        c.bandwidth
    };
    let enough = figure.is_some_and(|f| f.trials >= MIN_CONFIRM_TRIALS);
    value(metric, c).filter(|_| enough || !required)
}

/// Whether `v` is outlying against `median` and the spread's MAD for
/// `metric` (the rule of [`super::matrix`], with its floor on the MAD).
fn outlying(metric: &str, v: f64, median: f64, spread: &Spread) -> bool {
    let z = z_score(v, median, spread.mad, MIN_RELATIVE / OUTLIER_Z);
    let (z, rel) = if metric == "latency" {
        (z, v / median - 1.0)
    } else {
        (-z, 1.0 - v / median)
    };
    z > OUTLIER_Z && rel > MIN_RELATIVE
}

/// Drop from `a` the slow links and asymmetric pairs that `again` (the
/// re-measures) does not confirm, and with `required` those it has no
/// re-measure for; count them in `a.unconfirmed`.
pub fn apply(a: &mut MatrixAnalysis, again: &[CellFigures], required: bool) {
    if again.is_empty() && !required {
        return;
    }
    let mut last: BTreeMap<(usize, usize), &CellFigures> = BTreeMap::new();
    for c in again {
        last.insert((c.from, c.to), c);
    }
    let before = a.outlier_cells.len() + a.asymmetric_pairs.len();
    let (lat, bw) = (a.latency, a.bandwidth);
    a.outlier_cells.retain(|o| {
        let spread = if o.metric == "latency" { &lat } else { &bw };
        if o.explained_by_node {
            return true;
        }
        match (last.get(&(o.from, o.to)), spread) {
            (Some(c), Some(s)) => confirming(&o.metric, c, required)
                .is_some_and(|v| outlying(&o.metric, v, o.median, s)),
            _ => !required,
        }
    });
    a.asymmetric_pairs.retain(|p| {
        let (Some(ab), Some(ba)) = (last.get(&(p.a, p.b)), last.get(&(p.b, p.a))) else {
            return !required;
        };
        // A direction whose re-measure has no figure to confirm with
        // leaves the pair as found where re-measures are optional, and
        // unconfirmed where they are required.
        let (Some(ab), Some(ba)) = (
            confirming(&p.metric, ab, required),
            confirming(&p.metric, ba, required),
        ) else {
            return !required;
        };
        let limit = if p.metric == "latency" {
            2.0 * ASYMMETRY_RATIO
        } else {
            ASYMMETRY_RATIO
        };
        ab.max(ba) / ab.min(ba) > limit
    });
    a.unconfirmed += before - a.outlier_cells.len() - a.asymmetric_pairs.len();
}

/// The directed cells worth measuring again alone: the slow links and
/// both directions of the asymmetric pairs, each once, in that order.
pub fn candidates(a: &MatrixAnalysis) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let cells = a
        .outlier_cells
        .iter()
        .filter(|o| !o.explained_by_node)
        .map(|o| (o.from, o.to));
    let pairs = a
        .asymmetric_pairs
        .iter()
        .flat_map(|p| [(p.a, p.b), (p.b, p.a)]);
    for c in cells.chain(pairs) {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[path = "matrix_confirm_tests.rs"]
mod tests;
