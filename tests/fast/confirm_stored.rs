//! The confirmation judge on real curves: five shm sweeps of the quiet
//! development VM (issue 28), trimmed to their first-pass points, their
//! confirmation passes' fresh points and verdicts
//! (`tests/fixtures/confirm/`).
//!
//! The files keep each fresh size's median and its interval, which for 6
//! trials are the smallest and largest trial, not the trials. The passes
//! are rebuilt from them: 6 trials with that minimum, median and maximum,
//! two of them at the minimum where the median is at least
//! [`SPLIT_RATIO`] times it (a size whose trials split, as run A's pass
//! was: near the first pass's times or 2-4x slower), one otherwise.

use wulf::analysis::confirm::{events, judge, Event, EventKind, SPLIT_RATIO};
use wulf::analysis::{analyse_curve, CauseHints};
use wulf::result::RemeasuredPoint;
use wulf::sweep::confirm::fresh_point;

struct Stored {
    bytes: Vec<u64>,
    median: Vec<f64>,
    low: Vec<f64>,
    high: Vec<f64>,
    fresh: Vec<RemeasuredPoint>,
    verdicts: Vec<(Event, bool)>,
}

fn load(name: &str) -> Stored {
    let path = format!(
        "{}/tests/fixtures/confirm/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut s = Stored {
        bytes: vec![],
        median: vec![],
        low: vec![],
        high: vec![],
        fresh: vec![],
        verdicts: vec![],
    };
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f[i].parse::<f64>().unwrap();
        match f[0] {
            "first" => {
                s.bytes.push(f[1].parse().unwrap());
                s.median.push(num(2));
                s.low.push(num(3));
                s.high.push(num(4));
            }
            "fresh" => s.fresh.push(RemeasuredPoint {
                bytes: f[1].parse().unwrap(),
                trials: f[2].parse().unwrap(),
                median_ns: num(3),
                ci_low_ns: num(4),
                ci_high_ns: num(5),
                noisy: true,
                slow_trials: 0,
            }),
            "event" => s.verdicts.push((
                Event {
                    kind: if f[1] == "dropout" {
                        EventKind::Dropout
                    } else {
                        EventKind::Switchover
                    },
                    from_bytes: f[2].parse().unwrap(),
                    to_bytes: f[3].parse().unwrap(),
                },
                f[4] == "true",
            )),
            other => panic!("unknown line {other}"),
        }
    }
    s
}

/// The pass rebuilt from a stored fresh point (see the module notes) and
/// judged as the sweep judges it.
fn rebuilt(p: &RemeasuredPoint) -> RemeasuredPoint {
    let (lo, m, hi) = (p.ci_low_ns, p.median_ns, p.ci_high_ns);
    let trials = if m >= SPLIT_RATIO * lo {
        [lo, lo * 1.005, m, m, m, hi]
    } else {
        [lo, m, m, m, m, hi]
    };
    fresh_point(p.bytes, &trials, 0.02).unwrap()
}

fn verdicts(s: &Stored, fresh: &[RemeasuredPoint]) -> Vec<(u64, u64, bool)> {
    let ev: Vec<Event> = s.verdicts.iter().map(|v| v.0).collect();
    judge(&s.bytes, &s.median, &s.low, &s.high, fresh, &ev)
        .into_iter()
        .zip(&ev)
        .map(|(c, e)| (e.from_bytes, e.to_bytes, c))
        .collect()
}

fn confirmed(v: &[(u64, u64, bool)]) -> Vec<(u64, u64)> {
    v.iter().filter(|x| x.2).map(|x| (x.0, x.1)).collect()
}

/// The first analysis finds the stored candidates again, and today's
/// judge on the stored fresh medians gives the stored verdicts (the two
/// 2026-11-27 19:06 runs) or rejects the flukes the older run confirmed.
#[test]
fn stored_candidates_and_verdicts_are_found_again() {
    for name in ["q3-a-shm", "q3-b-shm", "q1-b-shm"] {
        let s = load(name);
        let found = events(&analyse_curve(
            &s.bytes,
            &s.median,
            &s.low,
            &s.high,
            &CauseHints::default(),
        ));
        let stored: Vec<Event> = s.verdicts.iter().map(|v| v.0).collect();
        assert_eq!(found, stored, "{name}");
        let v = verdicts(&s, &s.fresh);
        if name.starts_with("q3") {
            let want: Vec<bool> = s.verdicts.iter().map(|x| x.1).collect();
            assert_eq!(v.iter().map(|x| x.2).collect::<Vec<_>>(), want, "{name}");
        }
    }
}

/// Judged on the fast modes, run A's bimodal pass confirms the 8 KiB
/// change of message path that run B confirmed (drop-out 1533..8189
/// against 3069..8189), run B keeps it, and the flukes of the older run
/// (single-size drop-outs at 21, 771 and 1027 B) stay rejected.
#[test]
fn fast_modes_confirm_the_event_both_runs_see_and_no_fluke() {
    let a = load("q3-a-shm");
    let rebuilt_a: Vec<RemeasuredPoint> = a.fresh.iter().map(rebuilt).collect();
    let split = rebuilt_a.iter().filter(|p| p.slow_trials > 0).count();
    assert!(split >= 20, "{split} sizes split");
    assert!(confirmed(&verdicts(&a, &a.fresh)).is_empty());
    assert_eq!(confirmed(&verdicts(&a, &rebuilt_a)), [(1533, 8189)]);
    let b = load("q3-b-shm");
    let rebuilt_b: Vec<RemeasuredPoint> = b.fresh.iter().map(rebuilt).collect();
    assert_eq!(confirmed(&verdicts(&b, &rebuilt_b)), [(3069, 8189)]);
    let old = load("q1-b-shm");
    let rebuilt_old: Vec<RemeasuredPoint> = old.fresh.iter().map(rebuilt).collect();
    for (from, to, c) in verdicts(&old, &rebuilt_old) {
        if [21, 771, 1027].contains(&from) {
            assert!(!c, "fluke {from}..{to} confirmed");
        }
    }
}

/// Two quiet shm runs of the merged build (2026-11-27 22:08): run B's
/// first pass ran 3x slower over 4-16 KiB than its confirmation pass, and
/// the 8 KiB change of message path, plain in the fresh points (278 ->
/// 140 ns), went unconfirmed there while run A confirmed it. Set at the
/// first pass's level, B's window confirms it too; A's verdicts stand.
#[test]
fn a_pass_at_another_level_confirms_the_change_both_runs_see() {
    let a = load("q7-a-shm");
    let b = load("q7-b-shm");
    let eight_kib = |v: &[(u64, u64)]| v.iter().any(|&(from, to)| from <= 8192 && to >= 8189);
    let ca = confirmed(&verdicts(&a, &a.fresh));
    let cb = confirmed(&verdicts(&b, &b.fresh));
    assert!(eight_kib(&ca), "{ca:?}");
    assert!(eight_kib(&cb), "{cb:?}");
    let stored_a: Vec<(u64, u64)> = a
        .verdicts
        .iter()
        .filter(|v| v.1)
        .map(|v| (v.0.from_bytes, v.0.to_bytes))
        .collect();
    assert_eq!(ca, stored_a);
}

/// Each edge judged on its own (issue 28: one name for one edge): in the
/// four stored shm runs whose passes measured 6 - 12 KiB, the 8 KiB change
/// of message path holds as an edge, faster from 8192 B, whatever the
/// first pass called it (a drop-out ending at 8189 B, or a switch-over;
/// the older run's pass lacks 12,285 B, so its edge is not judged and
/// does not hold); no fluke's edge holds
/// (the older run's single-size drop-outs at 21, 771 and 1027 B, whose
/// fresh times lay between their neighbours'); and no edge holds the
/// other way at 8 KiB.
#[test]
fn the_eight_kib_edge_holds_on_its_own_in_every_run_and_no_fluke_edge_does() {
    use wulf::analysis::confirm::edges::{holds, of_dropout, Direction, Edge};
    for name in ["q1-b-shm", "q3-a-shm", "q3-b-shm", "q7-a-shm", "q7-b-shm"] {
        let s = load(name);
        let fresh: Vec<RemeasuredPoint> = s.fresh.iter().map(rebuilt).collect();
        let index = s.bytes.binary_search(&8192).unwrap();
        let at = |direction| Edge {
            index,
            bytes: 8192,
            direction,
        };
        let whole = name != "q1-b-shm";
        assert_eq!(
            holds(
                &s.bytes,
                &fresh,
                &[at(Direction::Faster), at(Direction::Slower)]
            ),
            [whole, false],
            "{name}"
        );
        for (e, _) in &s.verdicts {
            if e.kind == EventKind::Dropout && [21, 771, 1027].contains(&e.from_bytes) {
                let both = of_dropout(&s.bytes, e);
                assert_eq!(
                    holds(&s.bytes, &fresh, &both),
                    [false, false],
                    "{name} {e:?}"
                );
            }
        }
    }
}
