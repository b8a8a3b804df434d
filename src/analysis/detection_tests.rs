//! Validation of event detection with its confirmation pass on synthetic
//! sweeps of NetPIPE's 124-size schedule (1 B to 8 MiB) under the noise of
//! this machine ([`Noise::this_machine`]): known switch-overs and drop-outs
//! must be found (recall >= 0.9), what is reported must be real
//! (precision >= 0.9), and sweeps without events show at most one false
//! event per sweep on average (in fact under one in four sweeps; two
//! independent flukes can coincide in one sweep now and then).
//!
//! Each sweep is measured, analysed, the sizes around its candidates are
//! measured again with fresh noise (another seed, as a new pass over the
//! sizes draws new conditions), and the candidates are judged exactly as
//! the engine does ([`confirm`]).

use super::confirm::{self, Event, EventKind};
use super::synth::{hockney, measure_with, netpipe_sizes, Curve, Noise};
use crate::result::RemeasuredPoint;

const MIB8: u64 = 8 << 20;

/// The events a sweep reports: its candidates that the second look confirms.
fn reported(law: &dyn Fn(u64) -> f64, noise: Noise, seed: u64) -> Vec<Event> {
    let sizes = netpipe_sizes(MIB8);
    let c = measure_with(&sizes, law, noise, seed);
    let events = confirm::events(&c.analyse());
    let again = confirm::sizes_to_remeasure(&c.bytes, &events);
    let fresh: Curve = measure_with(&again, law, noise, seed ^ 0x5eed_f00d);
    let fresh: Vec<RemeasuredPoint> = (0..fresh.bytes.len())
        .map(|i| RemeasuredPoint {
            bytes: fresh.bytes[i],
            trials: noise.trials as u64,
            median_ns: fresh.median_ns[i],
            ci_low_ns: fresh.ci_low_ns[i],
            ci_high_ns: fresh.ci_high_ns[i],
            noisy: false,
            slow_trials: 0,
        })
        .collect();
    let verdicts = confirm::judge(
        &c.bytes,
        &c.median_ns,
        &c.ci_low_ns,
        &c.ci_high_ns,
        &fresh,
        &events,
    );
    events
        .into_iter()
        .zip(verdicts)
        .filter_map(|(e, ok)| ok.then_some(e))
        .collect()
}

/// Whether a reported event is the true one: a drop-out overlapping its
/// sizes, or a switch-over within the schedule's resolution (a factor of
/// 1.6: sizes come in steps of 1.5, give or take 3 bytes).
fn matches(got: &Event, truth: &Event) -> bool {
    got.kind == truth.kind
        && match got.kind {
            EventKind::Dropout => {
                got.from_bytes <= truth.to_bytes && got.to_bytes >= truth.from_bytes
            }
            EventKind::Switchover => {
                let (g, t) = (got.from_bytes as f64, truth.from_bytes as f64);
                g >= t / 1.6 && g <= t * 1.6
            }
        }
}

/// A loopback-like path with two drop-outs and two switch-overs.
fn eventful(b: u64) -> f64 {
    let base = hockney(10_000.0, 20e9)(b);
    // A rendezvous handshake from 256 KiB on.
    let handshake = if b >= 262_144 { 60_000.0 } else { 0.0 };
    // Out of cache from 2 MiB: the slope doubles, the curve stays continuous.
    let knee = 2u64 << 20;
    let out_of_cache = if b > knee {
        (b - knee) as f64 * 8e9 / 20e9
    } else {
        0.0
    };
    // A socket-buffer dip (half the rate) and a packet-boundary dip (+40%).
    let dip = match b {
        8195..=12291 => 2.0,
        98301..=98307 => 1.4,
        _ => 1.0,
    };
    (base + handshake + out_of_cache) * dip
}

fn truths() -> Vec<Event> {
    let ev = |kind, from_bytes, to_bytes| Event {
        kind,
        from_bytes,
        to_bytes,
    };
    vec![
        ev(EventKind::Dropout, 8195, 12291),
        ev(EventKind::Dropout, 98301, 98307),
        ev(EventKind::Switchover, 262_144, 262_144),
        ev(EventKind::Switchover, 2 << 20, 2 << 20),
    ]
}

#[test]
fn recall_and_precision_on_known_events() {
    let truth = truths();
    let (mut found, mut real, mut total_reported) = (0, 0, 0);
    let sweeps = 30;
    for seed in 1..=sweeps {
        let got = reported(&eventful, Noise::this_machine(), seed);
        found += truth
            .iter()
            .filter(|t| got.iter().any(|g| matches(g, t)))
            .count();
        real += got
            .iter()
            .filter(|g| truth.iter().any(|t| matches(g, t)))
            .count();
        total_reported += got.len();
    }
    let recall = found as f64 / (truth.len() as u64 * sweeps) as f64;
    let precision = real as f64 / total_reported.max(1) as f64;
    eprintln!("recall {recall:.3}, precision {precision:.3} ({real} of {total_reported})");
    assert!(recall >= 0.9, "recall {recall:.3}");
    assert!(
        precision >= 0.9,
        "precision {precision:.3} ({real} of {total_reported})"
    );
}

#[test]
fn pure_noise_shows_at_most_one_event_per_sweep() {
    let lines = [(10_000.0, 20e9), (60_000.0, 1e9), (2_000.0, 80e9)];
    let mut total = 0;
    let mut sweeps = 0;
    for (k, &(alpha, beta)) in lines.iter().enumerate() {
        for seed in 1..=20u64 {
            let got = reported(
                &hockney(alpha, beta),
                Noise::this_machine(),
                seed * 7 + k as u64,
            );
            // Two independent flukes may coincide in a sweep now and then.
            assert!(got.len() <= 2, "line {k}, seed {seed}: {got:?}");
            total += got.len();
            sweeps += 1;
        }
    }
    eprintln!("{total} false events in {sweeps} pure-noise sweeps");
    // At most one false event per sweep on average, and in fact far fewer:
    // a fluke must strike the same sizes twice.
    assert!(total <= sweeps, "{total} false events in {sweeps} sweeps");
    assert!(
        total * 4 <= sweeps,
        "{total} false events in {sweeps} sweeps"
    );
}

#[test]
fn the_first_pass_alone_would_cry_wolf() {
    // Without the second look, the same noise makes events: the pass is
    // what the figures above rest on (this test fails if the noise model
    // stops producing the flukes real runs show).
    let mut first_pass = 0;
    for seed in 1..=20u64 {
        let c = measure_with(
            &netpipe_sizes(MIB8),
            hockney(10_000.0, 20e9),
            Noise::this_machine(),
            seed,
        );
        first_pass += confirm::events(&c.analyse()).len();
    }
    assert!(first_pass >= 10, "{first_pass}");
}

/// A lasting level change under this machine's noise: 30% slower from
/// 1 MiB on, steeper with each doubling (the copies spilling from L2 to L3
/// to memory, as tcp, c2c and shm do here), and the same slowdown over
/// 1-1.5 MiB coming back. The first is a switch-over and never a drop-out
/// (issue 28: without rule 3 of `dropout`, 1 of these 20 sweeps reported
/// one, and every noiseless one); the second stays a drop-out (16 of 20
/// with rule 3 and without: a 30% dip of one octave under this noise is
/// not always confirmed).
#[test]
fn lasting_steps_are_switchovers_and_dips_that_come_back_dropouts() {
    let mib = 1u64 << 20;
    let base = hockney(20_000.0, 16e9);
    let lasting = |b: u64| {
        let x = b as f64 / mib as f64;
        base(b) * if b > mib { 1.3 + 0.1 * x.log2() } else { 1.0 }
    };
    let comes_back = |b: u64| base(b) * if b > mib && b < 2 * mib - 3 { 1.3 } else { 1.0 };
    let near_step = |e: &Event| e.to_bytes >= mib && e.from_bytes < 2 * mib;
    let (mut dips, mut steps, mut found) = (0, 0, 0);
    let sweeps = 20;
    for seed in 1..=sweeps {
        let got = reported(&lasting, Noise::this_machine(), seed);
        dips += got
            .iter()
            .filter(|e| e.kind == EventKind::Dropout && near_step(e))
            .count();
        steps += got
            .iter()
            .any(|e| e.kind == EventKind::Switchover && near_step(e)) as u64;
        let got = reported(&comes_back, Noise::this_machine(), seed);
        found += got
            .iter()
            .any(|e| e.kind == EventKind::Dropout && near_step(e)) as u64;
    }
    eprintln!(
        "lasting: {dips} drop-outs, a switch-over in {steps} of {sweeps}; dip found in {found}"
    );
    assert_eq!(dips, 0, "a lasting step reported as a drop-out");
    assert!(
        steps * 10 >= sweeps * 9,
        "switch-over in {steps} of {sweeps}"
    );
    assert!(found * 4 >= sweeps * 3, "dip found in {found} of {sweeps}");
}
