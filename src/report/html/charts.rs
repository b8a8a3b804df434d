//! The charts section of the HTML report: which charts, with which
//! captions, and which results are drawn as curves or as limits.
//!
//! The transports are the curves. The in-process baselines (a transport
//! whose [`crate::transport::Transport::limit_kind`] answers) are the
//! machine's limits: memcpy's bandwidth is a grey dashed line on the
//! throughput chart and gets its own memory-hierarchy chart, the
//! cache-line floor a grey dashed line on the latency chart; only a report
//! of baselines alone draws them as curves. The throughput chart comes
//! twice, linear and logarithmic, with a switch; the logarithmic one shows
//! first when the curves span more than two decades.

use std::fmt::Write;

use anyhow::Result;

use super::details::esc;
use crate::report::chart::limit;
use crate::report::chart::sweep::{self, color_hex, Series};
use crate::report::summary::physical_limit;
use crate::result::LimitRole;

/// The charts of `all` (every sweep result, in report order).
pub(super) fn charts_section(h: &mut String, all: &[Series]) -> Result<()> {
    h.push_str("<section id=charts><h2>Charts</h2>\n");
    // The baselines are limits drawn on the transports' charts; only a
    // report of baselines alone draws them as curves.
    let role = |s: &Series| s.limit_role;
    let transports: Vec<&Series> = all.iter().filter(|s| role(s).is_none()).collect();
    let series: Vec<Series> = if transports.is_empty() {
        all.to_vec()
    } else {
        transports.into_iter().cloned().collect()
    };
    let series = &series[..];
    let memcpy = all
        .iter()
        .find(|s| role(s) == Some(LimitRole::MemcpyBandwidth) && series.len() < all.len());
    let (run_floor, below_floor) = cacheline_floor_ns(all, series);
    // A floor with points below it is withheld, with the reason.
    let floor_ns = run_floor.filter(|_| below_floor.is_empty());
    if series.len() > 1 {
        h.push_str("<p class=toggles>Show: ");
        for s in series {
            let c = color_hex(s.color);
            let _ = write!(
                h,
                "<label><input type=checkbox checked data-color=\"{c}\"><span class=swatch style=\"background:{c}\"></span>{}</label> ",
                esc(s.label)
            );
        }
        h.push_str("</p>\n");
    }
    h.push_str("<div class=grid>\n");
    let unsaturated: Vec<String> = series
        .iter()
        .filter(|s| s.analysis.saturation_bytes.is_none())
        .map(|s| esc(s.label))
        .collect();
    let mut saturation_caption = String::from(
        "Message size against time, both logarithmic. From the saturation point (ringed) on, time \
         grows linearly with size: larger blocks add little throughput.",
    );
    if !unsaturated.is_empty() {
        let _ = write!(
            saturation_caption,
            " No saturation point found in the sizes measured for: {}.",
            unsaturated.join(", ")
        );
    }
    throughput_figure(h, series, memcpy)?;
    let floor_note = match (run_floor, floor_ns) {
        (_, Some(f)) => format!(" Grey dashed line: the run's cache-line floor ({f:.0} ns), the least time any message between two processes here can take."),
        (Some(f), None) => format!(
            " The run's cache-line floor ({f:.0} ns) is not drawn: {} measured below it, so it was \
             measured at a busier moment.",
            below_floor.join(", ")
        ),
        (None, None) => String::new(),
    };
    let latency_caption = format!(
        "One-way time of messages up to 4 KiB; error bars: the 95% confidence interval of each median \
         (distribution-free, from the kept trials).{floor_note}"
    );
    let figures: [(&str, &str, String, &str); 4] = [
        ("signature", "Network signature", sweep::signature(series)?,
         "Throughput against the time one message takes (log time). The first point's time is the \
          latency; the slope shows how fast the path &ldquo;accelerates&rdquo; to its peak."),
        ("saturation", "Saturation", sweep::saturation(series)?,
         &saturation_caption),
        ("latency", "Small-message latency", sweep::small_message_latency(series, floor_ns)?,
         &latency_caption),
        ("cpu", "CPU cost per byte", sweep::cpu_cost(series)?,
         "CPU time (user + system) per byte moved, from getrusage of each end's own measuring thread: \
          solid, the measuring end (A); dashed, the peer (B)."),
    ];
    for (id, name, svg, caption) in &figures {
        figure(h, id, name, svg, caption);
    }
    if let Some(svg) = crate::report::chart::cpu_throughput::throughput_per_cpu(series)? {
        figure(
            h,
            "cpu-throughput",
            "Throughput per CPU time",
            &svg,
            "Data moved per second of CPU time (Bounanos and Fleury 2007, Fig. 2), the reciprocal of the CPU cost: \
             solid, getrusage of both ends' measuring threads; dotted, the whole machine \
             (--cost whole or soak: every CPU, softirqs and kernel threads included).",
        );
    }
    limit_figures(h, series, memcpy, run_floor)?;
    match sweep::efficiency(series)? {
        Some(svg) => {
            let limits: Vec<String> = series
                .iter()
                .filter_map(|s| {
                    physical_limit(s.result).map(|l| format!("{}: {}", esc(s.label), esc(&l.name)))
                })
                .collect();
            let caption = format!(
                "Throughput as a share of the physical limit (dashed line: 100%). {}.",
                limits.join("; ")
            );
            figure(
                h,
                "efficiency",
                "Efficiency against the physical limit",
                &svg,
                &caption,
            );
            h.push_str("</div></section>\n");
        }
        None => {
            h.push_str("</div>\n");
            h.push_str(
                "<p class=note id=efficiency>No efficiency chart against a link: no result carries a link limit \
                 (the link speed or MTU of the interface was unknown, or the data never crossed a \
                 network link: loopback, Unix sockets).</p></section>\n",
            );
        }
    }
    Ok(())
}

/// The throughput chart, drawn twice (linear and logarithmic throughput)
/// with a switch between them; the logarithmic one shows first when the
/// curves span more than two decades.
fn throughput_figure(h: &mut String, series: &[Series], memcpy: Option<&Series>) -> Result<()> {
    let log_first = sweep::throughput_wants_log(series, memcpy);
    let lin = sweep::throughput_vs_size(series, memcpy, false)?;
    let log = sweep::throughput_vs_size(series, memcpy, true)?;
    let scale = if log_first { "log" } else { "lin" };
    let checked = |s: &str| if s == scale { " checked" } else { "" };
    let limit = match memcpy {
        Some(m) => format!(
            " Grey dashed line: {} bandwidth, the most a copy between two processes here could move \
             (a limit, not a transport; on the linear scale cut off above the transports).",
            esc(m.label)
        ),
        None => String::new(),
    };
    let _ = write!(
        h,
        "<figure id=throughput data-scale={scale}><h3>Throughput vs message size</h3>\n\
         <p class=scale>Throughput axis: <label><input type=radio name=tscale value=lin{}> linear</label> \
         <label><input type=radio name=tscale value=log{}> logarithmic</label></p>\n\
         <div class=ylin>{}</div>\n<div class=ylog>{}</div>\n\
         <figcaption>Median throughput of each size (8 &times; size / one-way time). Hollow dots: noisy points. \
         Dashed lines S1&hellip;: confirmed switch-overs between Hockney segments; rings D1&hellip;: confirmed \
         drop-outs (all candidates are listed below with their status and likely causes).{limit}</figcaption></figure>\n",
        checked("lin"),
        checked("log"),
        lin.trim(),
        log.trim()
    );
    Ok(())
}

/// The limit charts: memcpy's memory hierarchy, and the transports'
/// throughput against memcpy and the core-to-core copy, and latency
/// against the cache-line floor.
fn limit_figures(
    h: &mut String,
    series: &[Series],
    memcpy: Option<&Series>,
    run_floor: Option<f64>,
) -> Result<()> {
    if let Some(m) = memcpy {
        figure(
            h,
            "memory",
            "Memory hierarchy (memcpy)",
            &limit::memory_hierarchy(m)?,
            "memcpy bandwidth in one process against size; dashed lines: the cache sizes of the host. \
             A copy reads its source and writes its destination, so it leaves a cache about when twice \
             the message no longer fits.",
        );
    }
    if let Some(svg) = limit::memcpy_fraction(series)? {
        figure(
            h,
            "memcpy-fraction",
            "Throughput against memcpy",
            &svg,
            "Each intra-node transport's throughput as a share of memcpy's at the same size \
             (points[].limits.memcpy_bits_per_s; log scale: the shares span orders of magnitude; a dashed \
             line marks 100% when reached). Bidirectional results count both directions and can exceed it.",
        );
    }
    if let Some(svg) = limit::c2c_fraction(series)? {
        figure(
            h,
            "c2c-fraction",
            "Efficiency against the core-to-core copy",
            &svg,
            "Each intra-node transport's throughput as a share of the core-to-core single copy at the \
             same size (points[].limits.c2c_bits_per_s: one of the two CPUs copying out a message the \
             other has just written, one flag per hand-off; the c2c baseline). No transfer between two \
             processes on these CPUs can beat it by copying; log scale; a dashed line marks 100% when reached. \
             A --nocache result (cold buffers, what an application's fresh data sees) is against the \
             cold limit (c2c --nocache: lines in neither core's cache), a warm one against the warm \
             limit; with both, their labels say nocache=true and nocache=false.",
        );
    }
    if let Some((svg, withheld)) = limit::floor_multiple(series, run_floor)? {
        let withheld = if withheld > 0 {
            format!(
                " {withheld} point(s) below 1&times; withheld: no transfer beats the cache-line \
                 hand-off, so the floor was measured at a busier moment than those points."
            )
        } else {
            String::new()
        };
        figure(
            h,
            "floor-multiple",
            "Latency against the cache-line floor",
            &svg,
            &format!(
                "One-way time as a multiple of the run's cache-line floor, {:.0} ns, every transport \
                 divided by the same floor: the least the run measured (the cache-line baseline and \
                 points[].limits.floor_ns; dashed line: 1&times;, the floor itself).{withheld}",
                run_floor.unwrap_or(f64::NAN)
            ),
        );
    }
    Ok(())
}

/// The run's one cache-line floor in ns ([`crate::report::floor`]) and
/// the transports whose latency lies below it, for whom it is not drawn.
fn cacheline_floor_ns(all: &[Series], series: &[Series]) -> (Option<f64>, Vec<String>) {
    let Some(floor) = crate::report::floor::run_floor_ns(all.iter().map(|s| s.result)) else {
        return (None, Vec::new());
    };
    let below = series
        .iter()
        .filter(|s| s.limit_role.is_none())
        .filter(|s| {
            s.result
                .points
                .iter()
                .any(|p| p.bytes <= 4096 && p.median_ns < floor)
        })
        .map(|s| esc(s.label))
        .collect();
    (Some(floor), below)
}

fn figure(h: &mut String, id: &str, name: &str, svg: &str, caption: &str) {
    let _ = write!(
        h,
        "<figure id={id}><h3>{name}</h3>\n{}\n<figcaption>{caption}</figcaption></figure>\n",
        svg.trim()
    );
}
