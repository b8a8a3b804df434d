//! The report's detail sections: the switch-overs and drop-outs with their
//! likely causes and the Hockney segments, and each result's machine,
//! placement, options and command line.

use std::fmt::Write;

use super::machines::{machine_label, run_lines, Book};
use crate::report::chart::sweep::Series;
use crate::report::summary::link_where;
use crate::result::SweepResult;
use crate::sys::recorded_same_machine;
use crate::units::{format_bits_per_s, format_bytes, format_ns};

pub(super) fn anomalies(h: &mut String, series: &[Series]) {
    h.push_str("<section id=anomalies><h2>Switch-overs and drop-outs</h2>\n");
    // Confirmed events in the table; the other candidates folded below it
    // (a dozen results once made this section 7,700 px long at 800 px).
    let (mut shown, mut folded) = (String::new(), String::new());
    let mut any = false;
    for s in series {
        let a = s.analysis;
        // The configuration cell carries the series colour, to match the charts.
        let who = format!(
            "<span class=swatch style=\"background:{}\"></span>{}",
            crate::report::chart::sweep::color_hex(s.color),
            esc(s.label)
        );
        for (k, seg) in a.segments.iter().skip(1).enumerate() {
            any = true;
            let rows = if seg.confirmed == Some(true) {
                &mut shown
            } else {
                &mut folded
            };
            let _ = writeln!(
                rows,
                "<tr><td>S{}</td><td class=nw>{}</td><td class=nw>from {}</td><td>switch-over: a new Hockney segment, {}; {}</td><td>{}</td></tr>",
                s.first_switchover_no + k,
                who,
                format_bytes(seg.from_bytes),
                segment_text(seg),
                status(seg.confirmed),
                cause(&seg.likely_cause)
            );
        }
        for (k, d) in a.dropouts.iter().enumerate() {
            any = true;
            let sizes = if d.from_bytes == d.to_bytes {
                format_bytes(d.from_bytes)
            } else {
                format!(
                    "{} to {}<br><span class=dim>{} sizes</span>",
                    format_bytes(d.from_bytes),
                    format_bytes(d.to_bytes),
                    d.points
                )
            };
            // An unconfirmed drop-out whose edge held alone: the edge is
            // the finding (a step the first pass saw as a dip's end).
            if d.confirmed == Some(false) && !d.confirmed_edges.is_empty() {
                let held: Vec<String> = d
                    .confirmed_edges
                    .iter()
                    .map(|(b, dir)| format!("{} from {}", dir.name(), format_bytes(*b)))
                    .collect();
                let _ = writeln!(
                    shown,
                    "<tr><td>D{}</td><td class=nw>{}</td><td class=nw>{}</td><td>edge: {} (the drop-out candidate around it was not confirmed as a dip; this edge held on its own)</td><td>{}</td></tr>",
                    s.first_dropout_no + k,
                    who,
                    sizes,
                    held.join(", "),
                    cause(&d.likely_cause)
                );
                continue;
            }
            let rows = if d.confirmed == Some(true) {
                &mut shown
            } else {
                &mut folded
            };
            let _ = writeln!(
                rows,
                "<tr><td>D{}</td><td class=nw>{}</td><td class=nw>{}</td><td>drop-out: throughput {:.0}% below its neighbours; {}</td><td>{}</td></tr>",
                s.first_dropout_no + k,
                who,
                sizes,
                100.0 * d.depth_fraction,
                status(d.confirmed),
                cause(&d.likely_cause)
            );
        }
    }
    let unfit: Vec<String> = series
        .iter()
        .filter(|s| s.analysis.segments.iter().any(|g| g.poor_fit))
        .map(|s| esc(s.label))
        .collect();
    if !any && unfit.is_empty() {
        shown.push_str("<tr><td colspan=5>None found: each curve is one Hockney line without dips beyond the noise.</td></tr>\n");
    } else if !any {
        let _ = writeln!(
            shown,
            "<tr><td colspan=5>None found, but the Hockney lines of {} do not fit their points (noise or load): \
             events smaller than that scatter cannot be seen there.</td></tr>",
            unfit.join(", ")
        );
    } else if shown.is_empty() {
        shown.push_str("<tr><td colspan=5>None confirmed: the candidates below were not found again in fresh trials (or not checked).</td></tr>\n");
    }
    const HEAD: &str =
        "<table class=list>\n<thead><tr><th>mark</th><th>configuration</th><th>sizes</th>\
                        <th>what</th><th>likely cause</th></tr></thead>\n<tbody>\n";
    let _ = writeln!(h, "{HEAD}{shown}</tbody></table>");
    if !folded.is_empty() {
        let n = folded.matches("<tr>").count();
        let _ = writeln!(
            h,
            "<details><summary>{n} further candidate{} not confirmed or not checked (not marked on the charts)</summary>\n\
             {HEAD}{folded}</tbody></table></details>",
            if n == 1 { "" } else { "s" }
        );
    }
    for s in series {
        let _ = write!(
            h,
            "<details><summary>Hockney segments of {} (t = &alpha; + n / &beta;)</summary>\n<table class=list><thead><tr>\
             <th>sizes</th><th>points fitted</th><th>&alpha;</th><th>&beta;</th><th>rms residual</th></tr></thead><tbody>\n",
            esc(s.label)
        );
        for (k, seg) in s.analysis.segments.iter().enumerate() {
            let _ = writeln!(
                h,
                "<tr><td>{} to {}</td><td class=num>{}</td>{}<td class=num>{:.1}%</td></tr>",
                format_bytes(seg.from_bytes),
                format_bytes(seg.to_bytes),
                seg.points,
                parameter_cells(seg, k > 0),
                100.0 * seg.rms_rel_residual
            );
        }
        h.push_str("</tbody></table></details>\n");
    }
    let _ = write!(
        h,
        "<p class=note>A drop-out is a run of sizes whose throughput bound lies below its neighbours' by more than \
         their confidence intervals allow; a switch-over is where the piecewise Hockney fit starts a new segment. \
         Only events the confirmation pass found again in fresh trials are marked on the charts. \
         Causes are matched against what the result recorded: eager limit, socket buffers granted, MSS, MTU, \
         the transport's own thresholds, page size with misaligned buffers. \
         Hockney parameters are physical (&alpha; &ge; 0, &beta; &gt; 0) with {}.</p>\n</section>\n",
        esc(crate::analysis::line_fit::INTERVAL_METHOD)
    );
}

/// The alpha and beta cells of a segment's row: the parameters with their
/// intervals; "does not fit" when the line does not describe its points;
/// a later segment's alpha is the intercept of its line, an extrapolation
/// to an empty message, and says so.
fn parameter_cells(seg: &crate::analysis::Segment, later: bool) -> String {
    if seg.poor_fit {
        return format!(
            "<td class=num colspan=2>does not fit<br><span class=dim>rms residual above {:.0}%: \
             no line describes these points (noisy or under load)</span></td>",
            100.0 * crate::analysis::MAX_FIT_RMS_REL
        );
    }
    let bound = if seg.bandwidth_bound {
        "<br><span class=dim>bandwidth-bound: &alpha; held at 0</span>"
    } else if later {
        "<br><span class=dim>intercept: the line extrapolated to 0 B, not a start-up time</span>"
    } else {
        ""
    };
    let beta = seg
        .beta_bits_per_s
        .map(|b| {
            format!(
                "{}{}",
                format_bits_per_s(b),
                match seg.beta_ci_bits_per_s {
                    Some((lo, Some(hi))) => interval(Some((lo, hi)), format_bits_per_s),
                    Some((lo, None)) => format!(
                        " <span class=dim>[{}, unbounded]</span>",
                        format_bits_per_s(lo)
                    ),
                    None => String::new(),
                }
            )
        })
        .unwrap_or_else(|| "latency-bound".into());
    format!(
        "<td class=num>{}{}{bound}</td><td class=num>{beta}</td>",
        format_ns(seg.alpha_ns),
        interval(seg.alpha_ci_ns, format_ns),
    )
}

fn segment_text(seg: &crate::analysis::Segment) -> String {
    if seg.poor_fit {
        return format!(
            "its line does not fit (rms residual {:.0}%)",
            100.0 * seg.rms_rel_residual
        );
    }
    // A later segment's alpha is its line's intercept, not a start-up time.
    match seg.beta_bits_per_s {
        Some(b) => format!(
            "&beta; = {}, intercept {}",
            format_bits_per_s(b),
            format_ns(seg.alpha_ns)
        ),
        None => format!("latency-bound, intercept {}", format_ns(seg.alpha_ns)),
    }
}

fn cause(c: &Option<String>) -> String {
    match c {
        Some(c) => esc(c),
        None => "<span class=dim>no known threshold</span>".into(),
    }
}

/// Whether the confirmation pass found the event again.
fn status(confirmed: Option<bool>) -> &'static str {
    match confirmed {
        Some(true) => "<b>confirmed</b> by fresh trials",
        Some(false) => {
            "<span class=dim>not confirmed by fresh trials (not marked on the charts)</span>"
        }
        None => {
            "<span class=dim>no confirmation pass in this result (not marked on the charts)</span>"
        }
    }
}

/// A 95% interval as "[low, high]" in the unit `fmt` writes.
fn interval(ci: Option<(f64, f64)>, fmt: fn(f64) -> String) -> String {
    ci.map(|(lo, hi)| format!(" <span class=dim>[{}, {}]</span>", fmt(lo), fmt(hi)))
        .unwrap_or_default()
}

/// Note each sweep's machines in `book`: its measuring end, and its peer
/// unless that is the same machine (same kernel, loopback path; files from
/// before boot ids were recorded can only be judged by host name). Returns
/// each result's "M1" or "M1 to M2".
pub(super) fn note_sweeps(
    book: &mut Book,
    results: &[SweepResult],
    names: &[String],
) -> Vec<String> {
    let mut on = Vec::new();
    for (r, name) in results.iter().zip(names) {
        let a = book.note(&r.host, "measuring end (A)", name);
        let b = r.peer_host.as_ref().and_then(|peer| {
            let same =
                recorded_same_machine(&r.host, peer).unwrap_or(peer.hostname == r.host.hostname);
            (r.options.peer.is_some() || !same).then(|| book.note(peer, "peer (B)", name))
        });
        on.push(machine_label(a, b));
    }
    on
}

/// Each sweep result's entry under "Machines and command lines", after the
/// machines themselves ([`Book::write`]): its command line, placement and
/// options, folded. `on` is what [`note_sweeps`] returned.
pub(super) fn sweep_details(
    h: &mut String,
    results: &[SweepResult],
    names: &[String],
    on: &[String],
) {
    for ((r, name), on) in results.iter().zip(names).zip(on) {
        let _ = writeln!(
            h,
            "<details><summary><b>{}</b> &middot; {} ({on}) &middot; started {} &middot; {:.1} s</summary>",
            esc(name),
            esc(&r.host.hostname),
            esc(&r.started_at),
            r.wall_s
        );
        let _ = writeln!(
            h,
            "<p><b>Command line</b></p><pre class=cmd>{}</pre>",
            esc(&shell_line(&r.command_line))
        );
        let p = &r.placement;
        let cpu = |c: Option<usize>| c.map(|c| format!("CPU {c}")).unwrap_or("not pinned".into());
        let _ = writeln!(
            h,
            "<p><b>Placement</b>: measuring end (A) on {}, {}; peer (B) on {}, {}. \
             <b>Options</b>: budget {} s, precision &plusmn;{}%, {}{}buffer offset {} B; transport {}</p>",
            esc(&p.client_host),
            cpu(p.client_cpu),
            esc(&p.server_host),
            cpu(p.server_cpu),
            r.options.budget_s,
            100.0 * r.options.precision,
            if r.options.nocache { "cache-cold buffers, " } else { "" },
            if r.options.tails { "tails, " } else { "" },
            r.options.offset_bytes,
            esc(&transport_options(&r.options.transport))
        );
        if let Some(lab) = &r.placement.lab {
            let _ = writeln!(h, "<p><b>Lab</b>: {}</p>", esc(&lab.describe()));
        }
        if let Some(l) = &r.link {
            let _ = writeln!(
                h,
                "<p><b>Link limit</b> ({}): {}</p>",
                esc(&link_where(l)),
                esc(&l.limit.formula)
            );
        }
        if let Some(run) = run_lines(&r.host) {
            let _ = writeln!(h, "<p><b>Run</b> (A): {}</p>", esc(&run));
        }
        h.push_str("</details>\n");
    }
}

/// Transport settings as `key value, ...` (the peer's under "peer"), so
/// the line can wrap.
fn transport_options(map: &serde_json::Map<String, serde_json::Value>) -> String {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "-".to_string(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(m) => format!("[{}]", transport_options(m)),
        other => other.to_string(),
    };
    // Unset values (a buffer size not requested) say nothing: left out.
    map.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let k = if k == "server" { "peer" } else { k.as_str() };
            format!("{k} {}", text(v))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The command line as one could paste it into a shell.
pub(super) fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_shell_quoting() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let args = ["wulf", "sweep", "--sizes", "1:64Ki", "it's here"].map(String::from);
        assert_eq!(
            shell_line(&args),
            "wulf sweep --sizes 1:64Ki 'it'\\''s here'"
        );
    }

    #[test]
    fn peer_machine_is_shown_unless_it_is_this_one() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        let mut r = crate::result::read_result(std::path::Path::new(path)).unwrap();
        // (the result's machines, the machines block).
        let shown = |r: &SweepResult| {
            let mut book = Book::default();
            let on = note_sweeps(&mut book, std::slice::from_ref(r), &["x".to_string()]);
            let mut h = String::new();
            book.write(&mut h, 1);
            (on[0].clone(), h.contains("peer (B)"))
        };
        // The fixture: a local peer, no boot ids (judged by host name).
        assert_eq!(shown(&r), ("M1".into(), false));
        r.host.boot_id = Some("boot-a".into());
        r.peer_host.as_mut().unwrap().boot_id = Some("boot-a".into());
        r.host.path_crosses_interface = Some(false);
        assert_eq!(shown(&r), ("M1".into(), false));
        // Same name and kernel, but across an interface: another namespace
        // of the same machine, its view listed under M1.
        r.host.path_crosses_interface = Some(true);
        assert_eq!(shown(&r), ("M1".into(), true));
        // Another kernel: another machine.
        r.peer_host.as_mut().unwrap().boot_id = Some("boot-b".into());
        assert_eq!(shown(&r), ("M1 to M2".into(), true));
    }

    #[test]
    fn a_line_that_does_not_fit_shows_no_parameters() {
        let seg = crate::analysis::Segment {
            from_bytes: 1,
            to_bytes: 1 << 20,
            points: 40,
            alpha_ns: 123_456.0,
            alpha_ci_ns: None,
            beta_bits_per_s: Some(1e9),
            beta_ci_bits_per_s: None,
            bandwidth_bound: false,
            rms_rel_residual: 0.45,
            poor_fit: true,
            likely_cause: None,
            confirmed: None,
        };
        let cells = parameter_cells(&seg, false);
        assert!(cells.contains("does not fit"), "{cells}");
        assert!(!cells.contains("123.46 us"), "{cells}");
        assert!(segment_text(&seg).contains("does not fit"));
        let fits = crate::analysis::Segment {
            poor_fit: false,
            ..seg
        };
        assert!(parameter_cells(&fits, true).contains("intercept"));
        assert!(!parameter_cells(&fits, false).contains("intercept"));
    }
}
