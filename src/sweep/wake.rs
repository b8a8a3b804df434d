//! Whether a blocking sweep measured a CPU's wake-up (issue 44).
//!
//! A blocking wait sleeps between messages; on an idle machine the CPU it
//! slept on halts, and each message then pays that CPU's wake-up (on the
//! idle 2-vCPU VM, tcp 8 B across a lab link read 55-120 us one way with
//! the default waits against 9-11 us with `--wait spin`). The cheapest
//! reliable test is the figure itself: after a sweep whose ends block
//! (its settings say `busy_poll: false` or `wait: block`), a short sweep
//! of its smallest size with spinning ends (`--wait spin`), its time set
//! aside from the budget ([`probe_ns`]). Reading cpuidle residency would
//! say that the CPUs idled, not what it cost, and needs the ends' CPUs
//! known and a cpuidle driver (VMs often have none).

use std::time::Duration;

use anyhow::Result;

use super::progress::{Quiet, Reporter};
use super::spec::{SweepOutcome, SweepSpec};
use crate::result::{WaitMode, WakeUp};

/// How many times the spinning figure the blocked one must be to have
/// measured a wake-up: a blocking end's own hand-off (a futex or socket
/// wake-up and a context switch) adds 1-5 us, less than the spinning
/// figure again for a small message on loopback, while a halted CPU's
/// wake-up multiplied it by 5-12 on the idle VM.
pub const WAKE_UP_FACTOR: f64 = 2.0;

/// The least the blocked figure must exceed the spinning one by, ns:
/// below it the difference is a context switch, not a CPU waking.
pub const WAKE_UP_MIN_NS: f64 = 5_000.0;

/// The share of the budget the probe takes.
const PROBE_SHARE: f64 = 0.05;

/// The probe's least time: the calibration and six trials of a small
/// message, with a local peer's start (20-30 ms on the idle VM).
const PROBE_MIN: Duration = Duration::from_millis(100);

/// The smallest budget that runs a probe: below it the probe's least time
/// would be more than a twentieth of it. 2 s, so that the default `wulf
/// run` (50 s over some 20 transports, 2.3-2.6 s each) probes its
/// blocking paths: on the idle VM those are where its noisy points are
/// (tcp and unix 59 and 67 of 124), and nothing said why.
const PROBE_MIN_BUDGET: Duration = Duration::from_secs(2);

/// Whether a blocked figure `blocked_ns` against a spinning `spinning_ns`
/// measured a CPU's wake-up.
pub fn dominated(blocked_ns: f64, spinning_ns: f64) -> bool {
    blocked_ns > WAKE_UP_FACTOR * spinning_ns && blocked_ns - spinning_ns >= WAKE_UP_MIN_NS
}

/// Whether a channel whose measuring end's settings are `settings` blocks
/// between messages: a socket that does not busy-poll, or a shared-memory
/// channel told to block.
pub fn blocks(settings: &serde_json::Map<String, serde_json::Value>) -> bool {
    settings.get("busy_poll") == Some(&serde_json::Value::Bool(false))
        || settings.get("wait").and_then(|w| w.as_str()) == Some(WaitMode::Block.name())
}

/// The time set aside for the probe of `spec`, when it gets one (`wulf
/// sweep` asked for it, the budget is long enough, no caller's deadline).
pub fn probe_ns(spec: &SweepSpec) -> Option<u64> {
    let asked = spec.wake_probe && spec.deadline.is_none() && !spec.sizes.is_empty();
    (asked && spec.budget >= PROBE_MIN_BUDGET).then(|| {
        let share = spec.budget.mul_f64(PROBE_SHARE).max(PROBE_MIN);
        share.as_nanos() as u64
    })
}

/// The probe's sweep: the smallest size of `spec`, both ends spinning,
/// `probe_ns` long, no limits, passes or probe of its own.
pub fn probe_spec(spec: &SweepSpec, probe_ns: u64) -> SweepSpec {
    let mut channel = spec.channel.clone();
    channel.wait = WaitMode::Spin;
    channel.busy_poll = true;
    SweepSpec {
        sizes: spec.sizes[..1].to_vec(),
        budget: Duration::from_nanos(probe_ns),
        integrity: false,
        integrity_all: false,
        tails: false,
        limits: false,
        channel,
        wake_probe: false,
        command_line: Vec::new(),
        ..spec.clone()
    }
}

/// The record of a probe: the blocked headline `blocked` (bytes, ns)
/// beside the spinning one.
pub fn record((bytes, blocked_ns): (u64, f64), spinning_ns: f64) -> WakeUp {
    WakeUp {
        bytes,
        blocked_ns,
        spinning_ns,
        dominated: dominated(blocked_ns, spinning_ns),
    }
}

/// The warning a result gets when its blocking waits measured a wake-up.
pub fn warning(w: &WakeUp) -> Option<String> {
    w.dominated.then(|| {
        format!(
            "blocking waits measured a CPU's wake-up: {:.1} us blocked vs {:.1} us spinning at \
             {} (wake_up); use --wait spin to measure the transport",
            w.blocked_ns / 1e3,
            w.spinning_ns / 1e3,
            crate::units::format_bytes(w.bytes)
        )
    })
}

/// Run the probe of `spec` (`probe_ns` long) after its sweep, whose
/// smallest size read `blocked` (bytes, ns), as a sweep of its own by
/// `sweep` (the engine's `run_sweep`, handed in: the probe is a stage
/// after the sweep, not a caller of the engine): the record, and the
/// probe's own set-up, s. A probe that fails or measures nothing leaves a
/// warning in `warnings` and no record.
pub fn run_probe(
    spec: &SweepSpec,
    (probe_ns, blocked): (u64, (u64, f64)),
    sweep: fn(&SweepSpec, &mut dyn Reporter) -> Result<SweepOutcome>,
    warnings: &mut Vec<String>,
) -> Option<(WakeUp, f64)> {
    let probe = probe_spec(spec, probe_ns);
    let out = sweep(&probe, &mut Quiet);
    let spinning = match &out {
        Ok(o) if o.error.is_none() => o.result.points.first().map(|p| p.median_ns),
        _ => None,
    };
    let Some(spinning_ns) = spinning else {
        let why = match out {
            Ok(o) => o.error.map_or("no point".to_string(), |e| format!("{e:#}")),
            Err(e) => format!("{e:#}"),
        };
        warnings.push(format!(
            "the wake-up probe (spinning ends at {}) measured nothing: {why}",
            crate::units::format_bytes(blocked.0)
        ));
        return None;
    };
    let setup_s = out.ok().and_then(|o| o.result.setup_s).unwrap_or(0.0);
    let w = record(blocked, spinning_ns);
    warnings.extend(warning(&w));
    Some((w, setup_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_is_twice_the_spinning_figure_and_5_us_more() {
        // The idle VM's lab link: 55-120 us blocked against 9-11 us.
        assert!(dominated(55_000.0, 11_000.0));
        // A busy VM: 8-12 us blocked against 9-11 us.
        assert!(!dominated(12_000.0, 9_000.0));
        // Three times, but a context switch's microseconds, not a wake-up.
        assert!(!dominated(3_000.0, 1_000.0));
        // Just twice and 5 us more.
        assert!(!dominated(10_000.0, 5_000.0));
        assert!(dominated(10_001.0, 5_000.0));
        let w = record((8, 60_000.0), 10_000.0);
        let text = warning(&w).unwrap();
        assert!(
            text.contains("60.0 us blocked vs 10.0 us spinning"),
            "{text}"
        );
        assert!(warning(&record((8, 12_000.0), 9_000.0)).is_none());
    }

    #[test]
    fn sockets_without_busy_polling_and_shm_told_to_block_block() {
        let m = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert!(blocks(&m(serde_json::json!({"busy_poll": false}))));
        assert!(!blocks(&m(serde_json::json!({"busy_poll": true}))));
        assert!(blocks(&m(serde_json::json!({"wait": "block"}))));
        assert!(!blocks(&m(serde_json::json!({"wait": "spin"}))));
        assert!(!blocks(&m(serde_json::json!({}))));
    }

    #[test]
    fn the_probe_is_a_share_of_a_long_enough_budget() {
        let mut s = SweepSpec::for_tests("tcp", vec![1, 1024]);
        s.wake_probe = true;
        s.budget = Duration::from_secs(10);
        assert_eq!(probe_ns(&s), Some(500_000_000));
        s.budget = Duration::from_secs(2);
        assert_eq!(probe_ns(&s), Some(100_000_000));
        s.budget = Duration::from_millis(1_900);
        assert_eq!(probe_ns(&s), None);
        s.budget = Duration::from_secs(10);
        s.wake_probe = false;
        assert_eq!(probe_ns(&s), None);
        s.wake_probe = true;
        let p = probe_spec(&s, 500_000_000);
        assert_eq!(p.sizes, vec![1]);
        assert!(p.channel.busy_poll && p.channel.wait == WaitMode::Spin);
        assert!(!p.wake_probe && !p.limits);
    }
}
