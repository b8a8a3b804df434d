//! The report's section for a link matrix (`wulf matrix`): the findings
//! first (slow nodes, slow links, asymmetric pairs, fingerprint
//! differences, missing nodes), then latency and bandwidth heatmaps, the
//! distribution of the cells, and the node table.
//!
//! Heatmaps are inline SVG, one square per directed cell (row: measuring
//! node or sender), coloured by how far the cell is from the median of
//! all cells on a diverging scale (blue better, red worse, saturating at
//! half or twice the median), each with a tooltip. Beyond
//! [`HEATMAP_MAX_NODES`] nodes a map of SVG squares would weigh
//! megabytes (about 130 bytes of markup a square: over 100 MB a map at
//! 1,000 nodes) with squares too small to point at:
//! the map is then a PNG image, one pixel per cell, embedded as a data
//! URI and scaled up without smoothing; the findings and the node table
//! name the cells and nodes a tooltip would have.

use std::fmt::Write;

use super::details::esc;
use crate::report::format::matrix_text::pattern_name;
use crate::result::matrix::Pattern;
use crate::result::matrix::{CellFigures, MatrixFigures, MatrixResult};
use crate::units::format_bytes;

/// Most nodes drawn as an SVG heatmap (more: a PNG one).
pub const HEATMAP_MAX_NODES: usize = 128;
/// Least width of a heatmap on the page, CSS pixels.
const HEATMAP_MIN_WIDTH: usize = 480;

/// One section per matrix.
pub fn matrix_sections(h: &mut String, matrices: &[MatrixFigures]) {
    for (i, m) in matrices.iter().enumerate() {
        section(h, m, i + 1);
    }
}

#[derive(Clone, Copy)]
enum Metric {
    Latency,
    Bandwidth,
}

impl Metric {
    fn value(self, c: &CellFigures) -> Option<f64> {
        match self {
            Metric::Latency => c.latency_ns(),
            Metric::Bandwidth => c.bits_per_s(),
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Metric::Latency => format!("{:.1} us", v / 1e3),
            Metric::Bandwidth => format!("{:.1} Mbit/s", v / 1e6),
        }
    }

    /// log2 of how much worse than the median, clamped to [-1, 1].
    fn badness(self, v: f64, median: f64) -> f64 {
        let r = match self {
            Metric::Latency => v / median,
            Metric::Bandwidth => median / v,
        };
        r.log2().clamp(-1.0, 1.0)
    }
}

fn section(h: &mut String, m: &MatrixFigures, no: usize) {
    let _ = write!(
        h,
        "<section id=matrix{no} class=matrix><h2>Link matrix: {} nodes over {}{}</h2>\n\
         <p class=sub>agents by {} &middot; {} pattern, {} {} &middot; latency: {} ping-pong, one-way; \
         bandwidth: {} stream &middot; {:.1} s ({:.1} s measuring, coordinator CPU {:.2} s)</p>\n",
        m.nodes.len(),
        esc(&m.via),
        if m.complete {
            ""
        } else {
            " <span class=bad>incomplete</span>"
        },
        esc(&m.launch),
        pattern_name(m.pattern),
        m.rounds,
        match (m.pattern, m.serial) {
            (Pattern::Pairs, true) => "rounds, one pair at a time",
            (Pattern::Pairs, false) => "rounds, pairs of a round at once",
            _ => "steps, the pairs of a step at once",
        },
        format_bytes(m.latency_bytes),
        format_bytes(m.bandwidth_bytes),
        m.wall_s,
        m.rounds_s,
        m.coordinator_cpu_s
    );
    findings(h, m);
    steps_table(h, m);
    h.push_str("<div class=charts>\n");
    for (metric, title) in [
        (Metric::Latency, "Latency (row: measuring node)"),
        (Metric::Bandwidth, "Bandwidth (row: sender)"),
    ] {
        let median = match metric {
            Metric::Latency => m.analysis.latency.map(|s| s.median),
            Metric::Bandwidth => m.analysis.bandwidth.map(|s| s.median),
        };
        let Some(median) = median else { continue };
        // Multipair steps repeat the same pairs: no map to draw.
        if m.pattern != Pattern::Multipair {
            if m.nodes.len() <= HEATMAP_MAX_NODES {
                heatmap(h, m, metric, median, title);
            } else {
                raster_heatmap(h, m, metric, median, title);
            }
        }
        histogram(h, m, metric, title);
    }
    h.push_str("</div>\n");
    node_table(h, m);
    h.push_str("</section>\n");
}

fn findings(h: &mut String, m: &MatrixResult) {
    let name = |i: usize| esc(&m.nodes[i].name);
    let a = &m.analysis;
    let mut items = Vec::new();
    let metric = |s: &str| {
        if s == "latency" {
            Metric::Latency
        } else {
            Metric::Bandwidth
        }
    };
    for l in &a.lossy_links {
        // The text format's sentence, escaped: one wording for both.
        let names = |i: usize| m.nodes[i].name.as_str();
        let line = crate::report::format::matrix_text::lossy_link_line(l, &names);
        items.push(format!(
            "<b>Lossy link</b>: {}",
            esc(line.trim_start_matches("lossy link: "))
        ));
    }
    if let Some(hb) = &a.host_bound {
        let line = crate::report::format::matrix_text::host_bound_line(hb);
        items.push(format!(
            "<b>Host-bound</b>: {}",
            esc(line.trim_start_matches("host-bound: "))
        ));
    }
    for s in &a.slow_nodes {
        let k = metric(&s.metric);
        items.push(format!(
            "<b>Slow node {}</b>: {} {} against {} between the other nodes ({:.0}% of its cells)",
            name(s.node),
            esc(&s.metric),
            k.show(s.value),
            k.show(s.median),
            100.0 * s.share_outlying
        ));
    }
    for c in a.outlier_cells.iter().filter(|c| !c.explained_by_node) {
        let k = metric(&c.metric);
        items.push(format!(
            "<b>Slow link {} &rarr; {}</b>: {} {} (median {}, score {:.1})",
            name(c.from),
            name(c.to),
            esc(&c.metric),
            k.show(c.value),
            k.show(c.median),
            c.score
        ));
    }
    for p in &a.asymmetric_pairs {
        let k = metric(&p.metric);
        items.push(format!(
            "<b>Asymmetric pair {} &harr; {}</b>: {} {} one way, {} the other",
            name(p.a),
            name(p.b),
            esc(&p.metric),
            k.show(p.a_to_b),
            k.show(p.b_to_a)
        ));
    }
    for d in &a.fingerprint_differences {
        let values: Vec<String> = d
            .values
            .iter()
            .map(|v| {
                let who: Vec<String> = v.nodes.iter().map(|&i| name(i)).collect();
                format!("<code>{}</code> on {}", esc(&v.value), who.join(", "))
            })
            .collect();
        items.push(format!(
            "<b>Fingerprints differ</b> in <code>{}</code>: {}",
            esc(&d.field),
            values.join("; ")
        ));
    }
    for n in m.nodes.iter().filter(|n| n.error.is_some()) {
        items.push(format!(
            "<b>Missing {}</b>: {}",
            esc(&n.name),
            esc(n.error.as_deref().unwrap_or(""))
        ));
    }
    if items.is_empty() {
        h.push_str("<p class=findings>No slow node, slow link, asymmetric pair or fingerprint difference.</p>\n");
        return;
    }
    h.push_str("<ul class=findings>\n");
    for i in items {
        let _ = writeln!(h, "<li>{i}</li>");
    }
    h.push_str("</ul>\n");
}

fn heatmap(h: &mut String, m: &MatrixFigures, metric: Metric, median: f64, title: &str) {
    let n = m.nodes.len();
    let cell = (480 / n.max(1)).clamp(3, 40);
    let label = if n <= 32 { 70 } else { 0 };
    let size = label + cell * n;
    let _ = write!(
        h,
        "<figure class=heatmap><figcaption>{} &middot; median {}</figcaption>\n\
         <svg xmlns='http://www.w3.org/2000/svg' width={size} height={size} role=img>\n",
        esc(title),
        metric.show(median)
    );
    if label > 0 {
        for (i, node) in m.nodes.iter().enumerate() {
            let mid = label + i * cell + cell / 2;
            let _ = writeln!(
                h,
                "<text x={} y={mid} font-size=10 text-anchor=end dominant-baseline=middle>{}</text>\
                 <text x={mid} y={} font-size=10 text-anchor=start transform='rotate(-90 {mid} {})'>{}</text>",
                label - 4,
                esc(&node.name),
                label - 4,
                label - 4,
                esc(&node.name)
            );
        }
    }
    // The rounds' cells: the analysis judged them. A re-measure (the same
    // pair again, alone) once was drawn over its round's cell, a grey "not
    // measured" square hiding a measured 18.4 us (issue 49): it is said in
    // the round cell's tooltip instead.
    let again: Vec<&CellFigures> = m.figures.iter().filter(|c| c.is_remeasure()).collect();
    for c in rounds_cells(m) {
        let (x, y) = (label + c.to * cell, label + c.from * cell);
        // Two processes of one host (`--ppn`): no link, no colour of one.
        let intra = crate::result::matrix::intra_node(&m.nodes, c.from, c.to);
        let (fill, mut tip) = match metric.value(c) {
            Some(v) if intra => (
                "#ccd".to_string(),
                format!(
                    "{} → {}: {} (intra-node: two processes of one host)",
                    m.nodes[c.from].name,
                    m.nodes[c.to].name,
                    metric.show(v)
                ),
            ),
            Some(v) => (
                color(metric.badness(v, median)),
                format!(
                    "{} → {}: {}",
                    m.nodes[c.from].name,
                    m.nodes[c.to].name,
                    metric.show(v)
                ),
            ),
            None => (
                "#999".to_string(),
                format!(
                    "{} → {}: {}",
                    m.nodes[c.from].name,
                    m.nodes[c.to].name,
                    c.error.as_deref().unwrap_or("not measured")
                ),
            ),
        };
        if c.cut() {
            tip.push_str(" (cut at its deadline: the trials measured by then)");
        }
        if let Some(r) = again.iter().find(|r| (r.from, r.to) == (c.from, c.to)) {
            let v = metric.value(r).map(|v| metric.show(v));
            let _ = write!(
                tip,
                "; measured again alone: {}",
                v.as_deref()
                    .or(r.error.as_deref())
                    .unwrap_or("not measured")
            );
        }
        let _ = writeln!(
            h,
            "<rect x={x} y={y} width={cell} height={cell} fill='{fill}' stroke='#fff' stroke-width=0.5><title>{}</title></rect>",
            esc(&tip)
        );
    }
    h.push_str("</svg>\n");
    scale(h, metric, median);
    h.push_str("</figure>\n");
}

/// The heatmap of a large matrix: a PNG with one pixel per cell (row:
/// measuring node), the same colours as [`heatmap`], grey for a cell not
/// measured, embedded as a data URI.
fn raster_heatmap(h: &mut String, m: &MatrixFigures, metric: Metric, median: f64, title: &str) {
    let n = m.nodes.len();
    let mut rgb = vec![0xffu8; n * n * 3];
    for c in rounds_cells(m).filter(|c| c.from < n && c.to < n) {
        let at = 3 * (c.from * n + c.to);
        let px = match metric.value(c) {
            Some(v) => color_rgb(metric.badness(v, median)),
            None => [0x99; 3],
        };
        rgb[at..at + 3].copy_from_slice(&px);
    }
    let Ok(png) = encode_png(n, &rgb) else {
        return;
    };
    use base64::Engine as _;
    let _ = write!(
        h,
        "<figure class=heatmap><figcaption>{} &middot; median {} &middot; one pixel per cell,          nodes in the order of the node table</figcaption>
         <img class=raster alt='{} heatmap of {n} nodes' width={w} height={w}          style='image-rendering:pixelated;max-width:100%;height:auto' src='data:image/png;base64,{}'>
",
        esc(title),
        metric.show(median),
        esc(title),
        base64::engine::general_purpose::STANDARD.encode(png),
        w = n.max(HEATMAP_MIN_WIDTH),
    );
    scale(h, metric, median);
    h.push_str("</figure>\n");
}

/// An `n` x `n` RGB image as PNG.
fn encode_png(n: usize, rgb: &[u8]) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let side = u32::try_from(n).unwrap_or(u32::MAX);
    let mut enc = png::Encoder::new(&mut out, side, side);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(rgb)?;
    Ok(out)
}

/// Diverging colour: -1 (twice as good) blue, 0 white, 1 (twice as bad) red.
fn color(badness: f64) -> String {
    let [r, g, b] = color_rgb(badness);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// [`color`] as red, green and blue.
fn color_rgb(badness: f64) -> [u8; 3] {
    let t = badness.abs();
    let (r, g, b) = if badness > 0.0 {
        (255.0, 255.0 - 200.0 * t, 255.0 - 200.0 * t)
    } else {
        (255.0 - 200.0 * t, 255.0 - 120.0 * t, 255.0)
    };
    [r as u8, g as u8, b as u8]
}

/// The cells of the rounds (or steps), without the re-measures: one per
/// directed pair, what the analysis judged and the maps draw.
fn rounds_cells(m: &MatrixFigures) -> impl Iterator<Item = &CellFigures> {
    m.figures.iter().filter(|c| !c.is_remeasure())
}

fn histogram(h: &mut String, m: &MatrixFigures, metric: Metric, title: &str) {
    let values: Vec<f64> = rounds_cells(m).filter_map(|c| metric.value(c)).collect();
    let desc = match metric {
        Metric::Latency => "latency per cell",
        Metric::Bandwidth => "bandwidth per cell",
    };
    super::matrix_figures::histogram(h, &values, |v| metric.show(v), desc, title);
}

/// The colour scale of a heatmap of `metric` around `median`: blue for a
/// cell twice as good or better, red for twice as bad or worse.
fn scale(h: &mut String, metric: Metric, median: f64) {
    let (better, worse) = match metric {
        Metric::Latency => (median / 2.0, median * 2.0),
        Metric::Bandwidth => (median * 2.0, median / 2.0),
    };
    super::matrix_figures::colour_scale(
        h,
        &metric.show(better),
        &metric.show(median),
        &metric.show(worse),
        [color(-1.0), color(0.0), color(1.0)],
    );
}

fn steps_table(h: &mut String, m: &MatrixResult) {
    let steps = &m.analysis.steps;
    if steps.is_empty() {
        return;
    }
    let rate = steps.iter().any(|st| st.rate_messages_per_s.is_some());
    let alone = steps.iter().any(|st| st.alone_median_bits_per_s.is_some());
    h.push_str(
        "<table class=steps><caption>Steps: the pairs of each step measured at the same time</caption>\n\
         <tr><th>step</th><th>pairs</th><th>aggregate</th><th>slowest pair</th><th>median pair</th><th>ping-pongs/s</th>",
    );
    if rate {
        let _ = write!(
            h,
            "<th>{} messages/s</th><th>{} messages/s</th>",
            format_bytes(m.latency_bytes),
            format_bytes(m.bandwidth_bytes)
        );
    }
    if alone {
        h.push_str("<th>median pair alone</th>");
    }
    h.push_str("</tr>\n");
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for st in steps {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td>",
            st.step + 1,
            st.pairs,
            Metric::Bandwidth.show(st.aggregate_bits_per_s),
            Metric::Bandwidth.show(st.min_bits_per_s),
            Metric::Bandwidth.show(st.median_bits_per_s),
            st.pingpong_rate_per_s
        );
        if rate {
            let large = st.aggregate_bits_per_s / 8.0 / m.bandwidth_bytes.max(1) as f64;
            let _ = write!(
                h,
                "<td>{}</td><td>{large:.0}</td>",
                or_dash(st.rate_messages_per_s.map(|v| format!("{v:.0}")))
            );
        }
        if alone {
            let _ = write!(
                h,
                "<td>{}</td>",
                or_dash(
                    st.alone_median_bits_per_s
                        .map(|v| Metric::Bandwidth.show(v))
                )
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    contention_table(h, m);
}

/// Each node's bandwidth as a sender under the pattern and alone.
fn contention_table(h: &mut String, m: &MatrixResult) {
    if m.analysis.contention.is_empty() {
        return;
    }
    h.push_str(
        "<table class=contention><caption>Contention: each node sending under the pattern against the same pairs alone (medians)</caption>\n\
         <tr><th>node</th><th>under the pattern</th><th>alone</th><th>kept</th></tr>\n",
    );
    for c in &m.analysis.contention {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0}%</td></tr>",
            esc(m.nodes.get(c.node).map_or("?", |x| x.name.as_str())),
            Metric::Bandwidth.show(c.loaded_bits_per_s),
            Metric::Bandwidth.show(c.alone_bits_per_s),
            100.0 * c.kept
        );
    }
    h.push_str("</table>\n");
}

fn node_table(h: &mut String, m: &MatrixResult) {
    h.push_str(
        "<table class=nodes><caption>Nodes: medians of every cell each takes part in</caption>\n\
         <tr><th>node</th><th>address</th><th>latency</th><th>bandwidth</th><th>failed cells</th><th>kernel</th><th>interface</th><th>note</th></tr>\n",
    );
    for (i, node) in m.nodes.iter().enumerate() {
        let s = m.analysis.node_summary.get(i);
        let iface = node
            .host
            .as_ref()
            .and_then(|h| h.interfaces.first())
            .map(|x| {
                format!(
                    "{} {} mtu {}",
                    x.name,
                    x.driver.as_deref().unwrap_or("?"),
                    x.mtu_bytes.map_or("?".into(), |v| v.to_string())
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=bad>{}</td></tr>",
            esc(&node.name),
            esc(node.address.as_deref().unwrap_or("-")),
            s.and_then(|s| s.latency_ns).map_or("-".into(), |v| Metric::Latency.show(v)),
            s.map_or("-".into(), bandwidth_views),
            s.map_or(0, |s| s.failed_cells),
            esc(node.host.as_ref().map_or("-", |h| h.kernel.as_str())),
            esc(&iface),
            esc(node.error.as_deref().unwrap_or(""))
        );
    }
    h.push_str("</table>\n");
}

/// A node's median bandwidth, with mpiGraph's send and receive views
/// where the analysis has them (schema 4).
fn bandwidth_views(s: &crate::result::matrix::NodeSummary) -> String {
    let both = s
        .bits_per_s
        .map_or("-".into(), |v| Metric::Bandwidth.show(v));
    match (s.sent_bits_per_s, s.received_bits_per_s) {
        (Some(out), Some(into)) => format!(
            "{both} (sent {}, received {})",
            Metric::Bandwidth.show(out),
            Metric::Bandwidth.show(into)
        ),
        _ => both,
    }
}

#[cfg(test)]
#[path = "matrix_tests.rs"]
mod tests;
