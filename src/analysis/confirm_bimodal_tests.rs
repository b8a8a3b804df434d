//! The fast mode of a size's fresh trials ([`super::fast_mode`]).

use super::*;

/// Trials of a size in a bimodal pass (the shm pass of run A on the quiet
/// machine: near the first pass's 200 ns, or 3-4x slower): the fast
/// cluster is kept, the slow one counted.
#[test]
fn a_split_size_is_judged_on_its_fast_mode() {
    let (kept, slow) = fast_mode(&[612.0, 194.7, 735.0, 205.0, 700.0, 640.0]);
    assert_eq!(kept, [194.7, 205.0]);
    assert_eq!(slow, 4);
    // Most trials fast, two slow.
    let (kept, slow) = fast_mode(&[200.0, 610.0, 202.0, 198.0, 790.0, 201.0]);
    assert_eq!(kept.len(), 4);
    assert_eq!(slow, 2);
}

/// Trials that do not split keep every trial: a quiet point, one fast
/// fluke (a mode needs two), and trials scattered along a slope (no gap
/// stands out from the spread below it).
#[test]
fn trials_that_do_not_split_are_all_kept() {
    let quiet = [100.0, 101.0, 102.0, 99.0, 100.0, 103.0];
    assert_eq!(fast_mode(&quiet), (sorted(&quiet), 0));
    let one_fast = [50.0, 200.0, 201.0, 202.0, 203.0, 204.0];
    assert_eq!(fast_mode(&one_fast), (sorted(&one_fast), 0));
    let slope = [100.0, 130.0, 170.0, 220.0, 290.0, 380.0];
    assert_eq!(fast_mode(&slope), (sorted(&slope), 0));
    // One slow outlier is no mode: the median already ignores it.
    let one_slow = [100.0, 101.0, 102.0, 99.0, 100.0, 300.0];
    assert_eq!(fast_mode(&one_slow), (sorted(&one_slow), 0));
    // Just under the split ratio: two clusters 20% apart are one mode.
    let close = [100.0, 101.0, 120.0, 121.0, 122.0, 120.5];
    assert_eq!(fast_mode(&close).1, 0);
    // Nothing to judge, never a panic.
    assert_eq!(fast_mode(&[]), (vec![], 0));
    assert_eq!(fast_mode(&[f64::NAN, 5.0]), (vec![5.0], 0));
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}
