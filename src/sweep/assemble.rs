//! The result document of a sweep, assembled from what the sweep measured
//! and where it ran (shared by sweeps against a peer and in-process
//! baselines).

use std::time::Instant;

use super::spec::SweepSpec;
use crate::result::{self, Definitions, LinkEfficiency, Placement, Point, SweepResult};
use crate::sys::Host;

/// When and where a sweep started.
pub struct Start {
    /// Monotonic start.
    pub started: Instant,
    /// Wall-clock start, RFC 3339.
    pub started_at: String,
    /// This machine (load_after still empty).
    pub host: Host,
}

/// What a sweep produced, for [`assemble`].
pub struct Finish<'a> {
    /// The peer's machine, if there is a peer.
    pub peer_host: Option<Host>,
    /// Definitions of the figures.
    pub definitions: Definitions,
    /// Transport settings of both ends.
    pub transport_settings: serde_json::Map<String, serde_json::Value>,
    /// Where the ends ran.
    pub placement: Placement,
    /// Measured clock read cost.
    pub timer_overhead_ns: f64,
    /// Measured points.
    pub points: Vec<Point>,
    /// Warnings so far.
    pub warnings: Vec<String>,
    /// Efficiency against the network link the data crossed, if known.
    pub link: Option<LinkEfficiency>,
    /// Why the sweep stopped early, if it did.
    pub error: Option<&'a anyhow::Error>,
    /// The confirmation pass, when the sweep got that far.
    pub confirmation: Option<result::Confirmation>,
    /// The sizes the budget could not hold (see [`super::link_fit`]).
    pub left_out: Option<result::SizesLeftOut>,
    /// Wall time before measuring began, s (peer start, handshake).
    pub setup_s: Option<f64>,
}

/// Build the result document of a sweep (shared by peers and baselines).
pub fn assemble(spec: &SweepSpec, start: Start, f: Finish<'_>) -> SweepResult {
    let Start {
        started,
        started_at,
        mut host,
    } = start;
    host.load_after = crate::sys::load_average();
    let mut warnings = f.warnings;
    if let Some(l) = &f.left_out {
        let last_kept = f.points.last().map(|p| p.bytes);
        let budget_s = spec.budget.as_secs_f64();
        warnings.push(super::link_fit::warning(l, budget_s, last_kept));
    }
    let noisy = f.points.iter().filter(|p| p.noisy).count();
    if noisy > 0 {
        warnings.push(format!(
            "{noisy} of {} points did not reach +-{:.1}% within the budget (marked noisy); \
             a larger --budget or a quieter machine helps",
            f.points.len(),
            spec.precision * 100.0
        ));
    }
    if let Some(p) = f.points.first() {
        if let Some(floor) = p.limits.and_then(|l| l.floor_ns) {
            if p.median_ns < floor {
                warnings.push(format!(
                    "the latency ({:.0} ns) is below the cache-line floor ({floor:.0} ns, the lowest of \
                     its measurements before and after the sweep): the floor met busier moments; \
                     its multiple is withheld",
                    p.median_ns
                ));
            }
        }
    }
    warnings.extend(
        f.confirmation
            .as_ref()
            .and_then(super::confirm::nothing_measured),
    );
    warnings.extend(whole_below_own(&f.points, spec.peer.is_some()));
    warnings.extend(disturbed_warning(&f.points, spec.loaded));
    let peak_min_bytes = super::burst::peak_min_bytes(super::burst::free_burst_bytes(&f.placement));
    let (summary, burst_warning) = super::burst::summary(&f.points, peak_min_bytes);
    warnings.extend(burst_warning);
    let timeout = spec.channel.timeout();
    SweepResult {
        kind: result::SWEEP_KIND.into(),
        schema_version: result::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        complete: f.error.is_none(),
        incomplete_reason: f.error.map(|e| format!("{e:#}")),
        command_line: spec.command_line.clone(),
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        host,
        peer_host: f.peer_host,
        transport: spec.transport.clone(),
        limit_role: crate::transport::limit_kind_of(&spec.transport),
        mode: spec.mode,
        definitions: f.definitions,
        options: result::Options {
            budget_s: spec.budget.as_secs_f64(),
            precision: spec.precision,
            timeout_s: timeout.as_secs_f64(),
            nocache: spec.nocache,
            offset_bytes: spec.offset_bytes,
            integrity: spec.integrity,
            integrity_all: spec.integrity_all,
            tails: spec.tails,
            peer: spec.peer.clone(),
            authenticated: None,
            wait: Some(spec.channel.wait),
            transport: f.transport_settings,
        },
        placement: f.placement,
        timer_overhead_ns: f.timer_overhead_ns,
        summary,
        points: f.points,
        warnings,
        link: f.link,
        mpi: None,
        confirmation: f.confirmation,
        run_to_run: None,
        conditions: None,
        sizes_left_out: f.left_out,
        setup_s: f.setup_s,
        wake_up: None,
    }
}

/// The whole machine cannot have spent less than the ends' own threads
/// (getrusage, a part of it, and measured to the nanosecond by the
/// scheduler). A whole cost below that has one of two causes: the kernel's
/// tick-sampled accounting missed part of many short busy bursts (seen at
/// small messages: /proc/stat read 0.59x getrusage at tcp 64 B on the
/// 2-vCPU development VM, 0.92x on an idle 16-core machine), or the
/// machine's other work changed after the background was measured. With a
/// remote peer only this machine's end counts. A warning naming the sizes.
fn whole_below_own(points: &[result::Point], remote_peer: bool) -> Option<String> {
    let low: Vec<String> = points
        .iter()
        .filter(|p| {
            let Some(whole) = p.cpu_whole.as_ref().and_then(|w| w.ns_per_byte) else {
                return false;
            };
            let own = p.cpu_client.ns_per_byte
                + if remote_peer {
                    0.0
                } else {
                    p.cpu_server.ns_per_byte
                };
            whole < 0.9 * own
        })
        .map(|p| crate::units::format_bytes(p.bytes))
        .collect();
    (!low.is_empty()).then(|| {
        format!(
            "whole CPU cost below the ends' own CPU time (getrusage) at {}: the kernel's \
             tick-sampled accounting missed part of the many short busy bursts, or the machine's \
             other work changed after its background was measured; read those whole-cost figures \
             as lower bounds",
            low.join(", ")
        )
    })
}

/// What the disturbed blocks did to the points (see
/// [`crate::measure::policy::DISTURBED_SHARE`]): which figures are the
/// clean blocks', and which had too few clean ones to be anything but the
/// machine's other work. None when every block was clean or the run delay
/// was not known.
fn disturbed_warning(points: &[Point], loaded: bool) -> Option<String> {
    use crate::measure::policy::{DISTURBED_SHARE, MIN_CLEAN_TRIALS};
    let disturbed: Vec<&Point> = points
        .iter()
        .filter(|p| !p.disturbed_trials.is_empty())
        .collect();
    if disturbed.is_empty() {
        return None;
    }
    let blocks: usize = disturbed.iter().map(|p| p.disturbed_trials.len()).sum();
    let of: u64 = points.iter().map(|p| p.trials).sum();
    let share = DISTURBED_SHARE * 100.0;
    let head = format!(
        "in {blocks} of {of} blocks (at {} of {} points) an end waited for a CPU for {share:.0}% \
         of the block or more (its run delay): other work on the machine took its CPU",
        disturbed.len(),
        points.len()
    );
    if loaded {
        return Some(format!(
            "{head}; under the load asked for, every block is the headline (points[].clean_share)"
        ));
    }
    // Points whose clean blocks were the slower ones: their figures are
    // every block's (see `clean_blocks_faster`).
    let slower: Vec<String> = disturbed
        .iter()
        .filter(|p| !crate::measure::policy::point_clean_faster(p))
        .map(|p| crate::units::format_bytes(p.bytes))
        .collect();
    let few: Vec<String> = disturbed
        .iter()
        .filter(|p| crate::measure::policy::interfered(p))
        .map(|p| crate::units::format_bytes(p.bytes))
        .collect();
    let mut w = format!(
        "{head}; those blocks stay in trials_ns, and each point's figures are from its clean \
         blocks (points[].clean_share)"
    );
    if !slower.is_empty() {
        w.push_str(&format!(
            "; at {} the clean blocks were slower than the disturbed ones (the run delay was each \
             wake-up's short wait for a busy CPU, not what slowed a block), so their figures are \
             every block's",
            slower.join(", ")
        ));
    }
    if !few.is_empty() {
        w.push_str(&format!(
            "; at {} fewer than {MIN_CLEAN_TRIALS} blocks were clean, so their figures are every \
             block's and measure the other work as much as the transport (marked noisy): a \
             quieter machine, other --cpus or --no-pin helps",
            few.join(", ")
        ));
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point of ten trials, `disturbed` of them flagged.
    fn point(trials_ns: Vec<f64>, disturbed: Vec<u32>) -> Point {
        let mut p = crate::sweep::point::test_point(1, 1000.0);
        p.trials = trials_ns.len() as u64;
        p.trials_ns = trials_ns;
        p.disturbed_trials = disturbed;
        p
    }

    #[test]
    fn the_warning_says_when_the_clean_blocks_were_the_slower_ones() {
        // Blocking ends on a busy machine: the one clean block is slow.
        let mut t = vec![1000.0; 10];
        t[9] = 50_000.0;
        let slow = point(t, (0..9).collect());
        let w = disturbed_warning(&[slow], false).unwrap();
        assert!(w.contains("at 1 B the clean blocks were slower"), "{w}");
        assert!(!w.contains("fewer than"), "{w}");
        // A spinning end preempted: the clean ones are the fast ones.
        let mut t = vec![1000.0; 10];
        t[0] = 50_000.0;
        let fast = point(t, vec![0]);
        let w = disturbed_warning(&[fast], false).unwrap();
        assert!(!w.contains("slower"), "{w}");
    }
}
