use super::*;
use crate::analysis::confirm::{events, judge, sizes_to_remeasure};
use crate::analysis::{analyse_curve, CauseHints};

/// Sizes 1000, 1100, ... 4900 B.
fn sizes() -> Vec<u64> {
    (0..40).map(|i| 1000 + 100 * i).collect()
}

/// A first pass at `t_ns`, +-1%.
fn first(b: &[u64], t_ns: impl Fn(u64) -> f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let med: Vec<f64> = b.iter().map(|&x| t_ns(x)).collect();
    let lo = med.iter().map(|m| m * 0.99).collect();
    let hi = med.iter().map(|m| m * 1.01).collect();
    (med, lo, hi)
}

/// Fresh points of `sizes` at `t_ns`, +-1%.
fn fresh(sizes: &[u64], t_ns: impl Fn(u64) -> f64) -> Vec<RemeasuredPoint> {
    sizes
        .iter()
        .map(|&x| super::super::tests::fresh_at(x, t_ns(x)))
        .collect()
}

/// The true curve: one regime, its time halving from 3000 B on (a faster
/// message path, as shm's at 8 KiB).
fn step(x: u64) -> f64 {
    (5000.0 + x as f64) * if x >= 3000 { 0.5 } else { 1.0 }
}

/// A step seen by a first pass slow over 1500 - 2900 B (twice its time)
/// is the end of a long drop-out. Its pass measures the two edges alone,
/// 12 sizes against the window's 21; in fresh points showing the true
/// step the end edge holds (faster from 3000 B), the start edge does
/// not, and the drop-out is not confirmed: one edge, as a run that saw a
/// switch-over at 3000 B reports it. On the old rule the drop-out needed
/// every size of its window and was left unjudged.
#[test]
fn a_step_seen_as_a_dropout_end_keeps_its_end_edge() {
    let b = sizes();
    let slow_pass = |x: u64| step(x) * if (1500..3000).contains(&x) { 2.0 } else { 1.0 };
    let (med, lo, hi) = first(&b, slow_pass);
    let a = analyse_curve(&b, &med, &lo, &hi, &CauseHints::default());
    let ev: Vec<Event> = events(&a)
        .into_iter()
        .filter(|e| e.kind == EventKind::Dropout)
        .collect();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!((ev[0].from_bytes, ev[0].to_bytes), (1500, 2900));
    let measured = sizes_to_remeasure(&b, &ev);
    assert_eq!(measured.len(), 2 * 2 * CONTEXT_POINTS, "{measured:?}");
    let pass = fresh(&measured, step);
    let edges = of_dropout(&b, &ev[0]);
    assert_eq!(
        edges.map(|e| (e.bytes, e.direction)),
        [(1500, Direction::Slower), (3000, Direction::Faster)]
    );
    assert_eq!(holds(&b, &pass, &edges), [false, true]);
    assert_eq!(judge(&b, &med, &lo, &hi, &pass, &ev), [false]);
    // A pass that saw no step either (a fluke of the first pass) keeps
    // neither edge.
    let flat = fresh(&measured, |x| 5000.0 + x as f64);
    assert_eq!(holds(&b, &flat, &edges), [false, false]);
}

/// A long dip that comes back (twice the time over 1500 - 2900 B), seen
/// again at its edges: both hold and the sides lie on one line, so the
/// drop-out is confirmed on its edges alone; a step with the same two
/// edges (the end falling below the start's level) is not a drop-out.
#[test]
fn a_long_dip_is_confirmed_at_its_edges_and_a_step_is_not() {
    let b = sizes();
    let flat = |x: u64| 5000.0 + x as f64;
    let dip = |x: u64| flat(x) * if (1500..3000).contains(&x) { 2.0 } else { 1.0 };
    let (med, lo, hi) = first(&b, dip);
    let ev = events(&analyse_curve(&b, &med, &lo, &hi, &CauseHints::default()));
    assert_eq!(ev.len(), 1, "{ev:?}");
    let measured = sizes_to_remeasure(&b, &ev);
    let pass = fresh(&measured, dip);
    assert_eq!(holds(&b, &pass, &of_dropout(&b, &ev[0])), [true, true]);
    assert_eq!(judge(&b, &med, &lo, &hi, &pass, &ev), [true]);
    // The fresh pass shows the dip and, after it, a level a third lower:
    // both edges hold, the drop-out does not.
    let stepped = fresh(&measured, |x| dip(x) * if x >= 3000 { 0.66 } else { 1.0 });
    assert_eq!(holds(&b, &stepped, &of_dropout(&b, &ev[0])), [true, true]);
    assert_eq!(judge(&b, &med, &lo, &hi, &stepped, &ev), [false]);
}

/// A slower edge must rise by more than the size does: a rise a regime
/// explains (time in proportion to size, across a sparse schedule) is no
/// edge, while a 40% jump between neighbouring sizes is.
#[test]
fn a_slower_edge_needs_more_than_the_size_explains() {
    let b: Vec<u64> = vec![100, 200, 400, 800, 1600, 3200, 6400];
    let edge = Edge {
        index: 3,
        bytes: 800,
        direction: Direction::Slower,
    };
    // Bandwidth-bound: time doubles with every size.
    let linear = fresh(&b, |x| 10.0 * x as f64);
    assert_eq!(holds(&b, &linear, &[edge]), [false]);
    let c: Vec<u64> = (0..7).map(|i| 1000 + 3 * i).collect();
    let jump = fresh(&c, |x| if x >= 1009 { 1400.0 } else { 1000.0 });
    let at = Edge {
        index: 3,
        bytes: 1009,
        direction: Direction::Slower,
    };
    assert_eq!(holds(&c, &jump, &[at]), [true]);
    // The same jump read as a faster edge does not hold.
    let faster = Edge {
        direction: Direction::Faster,
        ..at
    };
    assert_eq!(holds(&c, &jump, &[faster]), [false]);
    // Missing a size of the window: not judged, not held.
    assert_eq!(holds(&c, &jump[1..], &[at]), [false]);
}

/// A switch-over's direction is the regime that takes over: a faster
/// path (time halves) is faster, a bandwidth that halves is slower, even
/// where the two lines meet at the switch size.
#[test]
fn switchovers_get_the_direction_of_their_new_regime() {
    let b: Vec<u64> = (0..60)
        .map(|i| 2u64.pow(i / 4 + 4) + 37 * (i as u64 % 4))
        .collect();
    let mut b = b;
    b.sort_unstable();
    b.dedup();
    let s = b[30];
    let halves = |x: u64| (2000.0 + x as f64) * if x >= s { 0.5 } else { 1.0 };
    let (med, lo, hi) = first(&b, halves);
    let a = analyse_curve(&b, &med, &lo, &hi, &CauseHints::default());
    assert!(!a.switchovers.is_empty(), "{a:?}");
    for &x in &a.switchovers {
        assert_eq!(switchover_direction(&a, x), Some(Direction::Faster), "{x}");
    }
    let bw = |x: u64| {
        let x = x as f64;
        let s = s as f64;
        if x < s {
            2000.0 + x
        } else {
            2000.0 + s + 2.0 * (x - s)
        }
    };
    let (med, lo, hi) = first(&b, bw);
    let a = analyse_curve(&b, &med, &lo, &hi, &CauseHints::default());
    assert!(!a.switchovers.is_empty(), "{a:?}");
    for &x in &a.switchovers {
        assert_eq!(switchover_direction(&a, x), Some(Direction::Slower), "{x}");
    }
    assert_eq!(switchover_direction(&a, b[0]), None);
}
