//! What the NPB part may claim: a winner only beyond noise, and a warning
//! when the runs without communication disagree.
//!
//! A run's noise is the spread of its verified repetitions' rates: the
//! highest rate wins only when its lowest repetition is above the
//! runner-up's highest (another transport at the same process count);
//! when the ranges overlap, or a run has a single repetition, the page
//! says "within noise". One process exchanges no messages, so its rate is
//! the same whatever the transport: when those rates differ by more than
//! [`ONE_PROCESS_SPREAD`], the machine was busier during some runs than
//! others, and the transports' differences say as much about that.

use crate::result::{NpbResult, NpbRun};

use super::details::esc;

/// Largest ratio between the transports' 1-process rates that a quiet
/// machine explains (a 4x spread was once reported as a transport effect).
pub const ONE_PROCESS_SPREAD: f64 = 1.5;

/// The (lowest, highest) rate of `run`'s repetitions, Mop/s, when it has
/// at least two.
fn range(run: &NpbRun) -> Option<(f64, f64)> {
    let rates: Vec<f64> = run
        .outcomes
        .iter()
        .map(|o| o.mop_s)
        .filter(|m| m.is_finite() && *m > 0.0)
        .collect();
    if rates.len() < 2 {
        return None;
    }
    let lo = rates.iter().copied().fold(f64::MAX, f64::min);
    let hi = rates.iter().copied().fold(0.0, f64::max);
    Some((lo, hi))
}

/// What the best run's lead over the runner-up amounts to, as a clause
/// to follow the highest rate: beyond noise, within noise, or not
/// known (one repetition). Empty when no other transport ran with as
/// many processes.
pub(super) fn lead(r: &NpbResult, best: &NpbRun) -> String {
    let rival = r
        .runs
        .iter()
        .filter(|x| x.error.is_none() && x.nprocs == best.nprocs && x.via != best.via)
        .filter_map(|x| Some((x, x.best_mop_s?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((other, mops)) = rival else {
        return String::new();
    };
    let name = esc(&other.via);
    match (range(best), range(other)) {
        (Some((lo, _)), Some((_, hi))) if lo > hi => {
            format!("; ahead of {name} ({mops:.1} Mop/s) beyond noise: every repetition faster")
        }
        (Some(_), Some(_)) => format!(
            "; <b>within noise</b> of {name} ({mops:.1} Mop/s): their repetitions' rates overlap, \
             so no winner"
        ),
        _ => format!(
            "; <b>within noise</b> of {name} ({mops:.1} Mop/s) as far as is known: a single \
             repetition gives no interval (more <code>--repetitions</code> would)"
        ),
    }
}

/// A warning when the transports' 1-process rates differ by more than
/// [`ONE_PROCESS_SPREAD`]: with one process there is no communication.
pub(super) fn one_process_warning(r: &NpbResult) -> Option<String> {
    let solo: Vec<(&str, f64)> = r
        .runs
        .iter()
        .filter(|x| x.error.is_none() && x.nprocs == 1)
        .filter_map(|x| Some((x.via.as_str(), x.best_mop_s.filter(|m| *m > 0.0)?)))
        .collect();
    let lo = solo.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = solo.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let spread = hi.1 / lo.1;
    (spread > ONE_PROCESS_SPREAD).then(|| {
        format!(
            "the 1-process rates differ {spread:.1}x across transports ({}: {:.1} Mop/s, {}: {:.1} \
             Mop/s), though one process sends no messages: the machine was busier during some \
             runs than others, not the transport slower; read the transports' differences with \
             care and rerun on a quieter machine",
            hi.0, hi.1, lo.0, lo.1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> NpbResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/npb-mg-S.json");
        let text = std::fs::read_to_string(path).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn scale(run: &mut NpbRun, f: f64) {
        for o in &mut run.outcomes {
            o.mop_s *= f;
        }
        run.best_mop_s = run.best_mop_s.map(|m| m * f);
    }

    #[test]
    fn a_lead_is_beyond_noise_only_when_the_ranges_do_not_overlap() {
        let mut r = fixture();
        // shm and tcp at 1 process: 8153 and 8059 Mop/s, within noise.
        let best = r
            .runs
            .iter()
            .find(|x| x.via == "shm" && x.nprocs == 1)
            .unwrap();
        let text = lead(&r, best);
        assert!(text.contains("within noise</b> of tcp"), "{text}");
        // tcp at a tenth: shm ahead beyond noise.
        for run in r.runs.iter_mut().filter(|x| x.via == "tcp") {
            scale(run, 0.1);
        }
        let best = r
            .runs
            .iter()
            .find(|x| x.via == "shm" && x.nprocs == 1)
            .unwrap();
        assert!(
            lead(&r, best).contains("beyond noise"),
            "{}",
            lead(&r, best)
        );
    }

    #[test]
    fn one_process_rates_apart_warn_and_close_ones_do_not() {
        let mut r = fixture();
        assert_eq!(one_process_warning(&r), None);
        for run in r
            .runs
            .iter_mut()
            .filter(|x| x.via == "tcp" && x.nprocs == 1)
        {
            scale(run, 0.25);
        }
        let w = one_process_warning(&r).expect("a warning");
        assert!(w.starts_with("the 1-process rates differ 4.0x"), "{w}");
    }
}
