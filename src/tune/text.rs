//! What `wulf tune tcp` prints: the configurations, the best setting per
//! size band, the bandwidth-delay product and the recommendations, as plain
//! text from a [`TuneSummary`] (a pure function, like the exporters in
//! `report`).

use std::fmt::Write;

use super::bands::Verdict;
use super::recommend::{Rfc1323State, Topic};
use super::summary::{ConfigSummary, TuneSummary};
use super::sysctl::is_clamped;
use crate::units::{format_bits_per_s, format_bytes, format_ns};

/// Width advice paragraphs are wrapped to.
const WRAP_COLUMNS: usize = 92;

/// A byte count for the table: exact binary units when exact, else two
/// decimals (granted buffers are rarely round: 3939840 B is 3.76 MiB).
fn approx_bytes(bytes: u64) -> String {
    let exact = format_bytes(bytes);
    if !exact.ends_with(" B") || bytes < 1 << 10 {
        return exact;
    }
    if bytes >= 1 << 20 {
        format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

/// Whether either end of a configuration had a buffer request clamped.
fn clamped(c: &ConfigSummary) -> bool {
    [&c.client, &c.server].iter().any(|e| {
        let snd = e.sndbuf_requested_bytes.zip(e.sndbuf_granted_bytes);
        let rcv = e.rcvbuf_requested_bytes.zip(e.rcvbuf_granted_bytes);
        [snd, rcv]
            .into_iter()
            .flatten()
            .any(|(r, g)| is_clamped(r, g))
    })
}

fn configurations(s: &TuneSummary, out: &mut String) {
    let _ = writeln!(
        out,
        "{:<17} {:>11} {:>11} {:>6} {:>10} {:>13} {:>9} {:>7}",
        "configuration", "sndbuf", "rcvbuf", "mss", "latency", "peak", "at size", "noisy"
    );
    let mut any_clamped = false;
    for c in &s.configurations {
        let mark = if clamped(c) {
            any_clamped = true;
            " *"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{:<17} {:>11} {:>11} {:>6} {:>10} {:>13} {:>9} {:>7}{}{mark}",
            c.config.label,
            or_dash(c.client.sndbuf_granted_bytes.map(approx_bytes)),
            or_dash(c.client.rcvbuf_granted_bytes.map(approx_bytes)),
            or_dash(c.client.mss_bytes.map(|m| m.to_string())),
            or_dash(c.latency_ns.map(format_ns)),
            or_dash(c.peak_bits_per_s.map(format_bits_per_s)),
            or_dash(c.peak_bytes.map(format_bytes)),
            format!("{}/{}", c.noisy_points, c.points),
            if c.complete { "" } else { "  INCOMPLETE" },
        );
    }
    let _ = writeln!(
        out,
        "(sndbuf, rcvbuf, mss: granted on this end at connect; Linux grants twice a buffer request)"
    );
    if any_clamped {
        let _ = writeln!(
            out,
            "* a buffer request was clamped by the kernel (see the recommendations)"
        );
    }
    for k in &s.skipped {
        let _ = writeln!(out, "not measured: {}: {}", k.label, k.reason);
    }
}

fn bands(s: &TuneSummary, out: &mut String) {
    let _ = writeln!(
        out,
        "\nbest setting by size band (median over the band's sizes of the median throughput)"
    );
    let _ = writeln!(
        out,
        "{:<15} {:<17} {:>13} {:>13} {:>7}  beyond noise (95% CIs disjoint)",
        "band", "best", "throughput", "default", "change"
    );
    for b in &s.bands {
        let (default, change, noise) = match &b.against_baseline {
            None => (
                "-".to_string(),
                "-".to_string(),
                "the default is best".to_string(),
            ),
            Some(c) => {
                let n = match c.verdict {
                    Verdict::Better => format!(
                        "yes: {} of {} sizes faster",
                        c.sizes_better, c.sizes_compared
                    ),
                    Verdict::Worse => {
                        format!("slower: {} of {} sizes", c.sizes_worse, c.sizes_compared)
                    }
                    Verdict::WithinNoise => format!(
                        "no: {} of {} sizes faster, {} slower",
                        c.sizes_better, c.sizes_compared, c.sizes_worse
                    ),
                };
                (
                    format_bits_per_s(c.baseline_bits_per_s),
                    format!("{:+.1}%", c.change * 100.0),
                    n,
                )
            }
        };
        let _ = writeln!(
            out,
            "{:<15} {:<17} {:>13} {:>13} {:>7}  {noise}",
            b.band,
            b.best,
            format_bits_per_s(b.best_bits_per_s),
            default,
            change
        );
    }
}

fn bdp(s: &TuneSummary, out: &mut String) {
    let _ = writeln!(out, "\nbandwidth-delay product");
    match &s.bandwidth_delay {
        None => {
            let _ = writeln!(out, "  not computed: no configuration measured any point");
        }
        Some(b) => {
            let at = b
                .peak_bytes
                .map(|p| format!(" at {}", format_bytes(p)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  peak {} ({}{at}) x round trip {} (twice the least one-way time of a small \
                 message: {} in {})",
                format_bits_per_s(b.peak_bits_per_s),
                b.peak_config,
                format_ns(b.round_trip_ns),
                format_bytes(b.round_trip_bytes),
                b.round_trip_config
            );
            let bdp = b.bdp_bytes.round() as u64;
            let _ = writeln!(
                out,
                "  = {bdp} bytes ({}) in flight to keep the path full; a Linux socket buffer \
                 holds about half its size in data, so buffers need about {}",
                approx_bytes(bdp),
                approx_bytes(2 * bdp)
            );
            if !s.recommendations.iter().any(|r| r.topic == Topic::Sysctl) {
                let _ = writeln!(out, "  no kernel buffer limit on the hosts is below that");
            }
        }
    }
}

fn on_off(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "on",
        Some(false) => "OFF",
        None => "unknown",
    }
}

fn rfc1323_line(r: &Rfc1323State) -> String {
    let ts = match r.timestamps {
        Some(0) => "OFF".to_string(),
        Some(v) => format!("on (mode {v})"),
        None => "unknown".into(),
    };
    format!(
        "RFC 1323 on {}: window scaling {}, timestamps {ts}; SACK {}",
        r.host,
        on_off(r.window_scaling),
        on_off(r.sack)
    )
}

/// Wrap `text` to [`WRAP_COLUMNS`], indenting continuation lines by `indent`.
fn wrap(text: &str, first: &str, indent: usize) -> String {
    let mut out = String::from(first);
    let mut col = first.chars().count();
    for word in text.split_whitespace() {
        let w = word.chars().count();
        if col > indent && col + 1 + w > WRAP_COLUMNS {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if col > indent {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += w;
    }
    out.push('\n');
    out
}

fn recommendations(s: &TuneSummary, out: &mut String) {
    let _ = writeln!(out, "\nrecommendations");
    for (i, r) in s.recommendations.iter().enumerate() {
        let topic = match r.topic {
            Topic::Sysctl => "sysctl",
            Topic::SocketBuffers => "socket buffers",
            Topic::Nagle => "nagle",
            Topic::Mss => "mss",
            Topic::Rfc1323 => "rfc 1323",
            Topic::WakeUp => "wake-up",
        };
        let on = r
            .host
            .as_ref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default();
        let first = format!("{:>3}. [{topic}{on}] ", i + 1);
        out.push_str(&wrap(&r.advice, &first, 7));
        for c in &r.commands {
            let _ = writeln!(out, "         # {c}");
        }
    }
    if s.recommendations.iter().any(|r| !r.commands.is_empty()) {
        let _ = writeln!(
            out,
            "     (sysctl -w lasts until reboot; put the same settings in /etc/sysctl.d/ to keep them)"
        );
    }
    for r in &s.rfc1323 {
        let _ = writeln!(out, "{}", rfc1323_line(r));
    }
}

/// A CPU cost per byte, ns, with enough digits for small figures.
fn ns_per_byte(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3} ns/B"))
}

fn offloads(s: &TuneSummary, out: &mut String) {
    let Some(o) = &s.offloads else { return };
    let _ = writeln!(
        out,
        "\noffloads of {} (changed with {}, one at a time from the state at start)",
        o.interface, o.tool
    );
    let _ = writeln!(
        out,
        "{:<22} {:>10} {:>13} {:>14} {:>14}",
        "configuration", "latency", "peak", "whole CPU", "getrusage"
    );
    let shown = s
        .configurations
        .iter()
        .filter(|c| c.config.offload.is_some() || c.config.factor == super::plan::Factor::Baseline);
    for c in shown {
        let _ = writeln!(
            out,
            "{:<22} {:>10} {:>13} {:>14} {:>14}",
            c.config.label,
            or_dash(c.latency_ns.map(format_ns)),
            or_dash(c.peak_bits_per_s.map(format_bits_per_s)),
            ns_per_byte(c.whole_ns_per_byte),
            ns_per_byte(c.getrusage_ns_per_byte),
        );
    }
    let _ = writeln!(
        out,
        "(CPU per byte at the peak size: whole = every CPU's busy time in /proc/stat; \
         getrusage = both ends' threads)"
    );
    match (&o.restore_error, o.restored) {
        (None, true) => {
            let _ = writeln!(out, "{} restored to its settings at start", o.interface);
        }
        (e, _) => {
            let _ = writeln!(
                out,
                "warning: {} NOT restored to its settings at start{}",
                o.interface,
                e.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
            );
        }
    }
}

/// The whole report `wulf tune tcp` prints.
pub fn render(s: &TuneSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tune {} {}: {} configurations measured x {} sizes, budget {:.0} s, peer {}\n",
        s.transport,
        s.mode,
        s.configurations.len(),
        s.sizes_bytes.len(),
        s.budget_s,
        s.peer.as_deref().unwrap_or("local")
    );
    configurations(s, &mut out);
    bands(s, &mut out);
    offloads(s, &mut out);
    bdp(s, &mut out);
    recommendations(s, &mut out);
    for w in &s.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approximate_sizes() {
        assert_eq!(approx_bytes(3939840), "3.76 MiB");
        assert_eq!(approx_bytes(131072), "128 KiB");
        assert_eq!(approx_bytes(69120), "67.5 KiB");
        assert_eq!(approx_bytes(1000), "1000 B");
    }

    #[test]
    fn wrapping_keeps_words_and_indents() {
        let t = wrap(&"word ".repeat(40), "  1. ", 7);
        assert!(t.lines().all(|l| l.chars().count() <= WRAP_COLUMNS), "{t}");
        assert!(
            t.lines().skip(1).all(|l| l.starts_with("       word")),
            "{t}"
        );
        assert_eq!(t.split_whitespace().filter(|w| *w == "word").count(), 40);
    }
}
