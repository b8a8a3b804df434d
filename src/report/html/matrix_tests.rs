//! The matrix section's heatmaps: squares up to HEATMAP_MAX_NODES, one
//! pixel per cell past it, a slow node's row red either way.

use super::*;
use crate::result::matrix::{MatrixAnalysis, MatrixCell, MatrixNode, MATRIX_KIND};
use crate::sweep::engine::test_point;

const BW_BYTES: u64 = 1 << 22;

/// A matrix of `n` nodes whose node `slow` has a tenth of the bandwidth
/// of the rest, analysed as `wulf matrix` does.
fn matrix(n: usize, slow: usize) -> MatrixResult {
    let nodes: Vec<MatrixNode> = (0..n)
        .map(|i| MatrixNode {
            name: format!("n{i}"),
            address: None,
            host: None,
            error: None,
            machine: None,
        })
        .collect();
    let mut cells = Vec::new();
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            let bits_per_s = if a == slow || b == slow { 90e6 } else { 900e6 };
            cells.push(MatrixCell {
                from: a,
                to: b,
                round: 0,
                latency: Some(test_point(8, 40e3)),
                bandwidth: Some(test_point(
                    BW_BYTES,
                    BW_BYTES as f64 * 8.0 / bits_per_s * 1e9,
                )),
                rate: None,
                alone_bandwidth: None,
                error: None,
                measure_s: 0.0,
                net: None,
                remeasure: false,
                intra_node: false,
                cut: false,
            });
        }
    }
    let analysis =
        crate::analysis::matrix::analyse(&nodes, &crate::result::matrix::figures_of(&cells));
    MatrixResult {
        kind: MATRIX_KIND.into(),
        schema_version: crate::result::matrix::MATRIX_SCHEMA_VERSION,
        tool_version: "test".into(),
        complete: true,
        incomplete_reason: None,
        command_line: Vec::new(),
        started_at: "2026-11-26T00:00:00Z".into(),
        wall_s: 1.0,
        rounds_s: 1.0,
        coordinator_cpu_s: 0.0,
        via: "tcp".into(),
        launch: "local".into(),
        latency_bytes: 8,
        bandwidth_bytes: BW_BYTES,
        serial: false,
        pattern: Pattern::Pairs,
        rounds: n - 1,
        nodes,
        cells,
        analysis: MatrixAnalysis { ..analysis },
        warnings: Vec::new(),
        budget_s: None,
        seed: None,
    }
}

/// The PNG data URIs of `html`, decoded: (width, height, RGB bytes).
fn rasters(html: &str) -> Vec<(u32, u32, Vec<u8>)> {
    use base64::Engine as _;
    html.split("src='data:image/png;base64,")
        .skip(1)
        .map(|rest| {
            let b64 = &rest[..rest.find('\'').expect("closed attribute")];
            let png = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64");
            let decoder = png::Decoder::new(std::io::Cursor::new(png));
            let mut reader = decoder.read_info().expect("a PNG");
            let mut buf = vec![0; reader.output_buffer_size().expect("size")];
            let info = reader.next_frame(&mut buf).expect("a frame");
            assert_eq!(info.color_type, png::ColorType::Rgb);
            buf.truncate(info.buffer_size());
            (info.width, info.height, buf)
        })
        .collect()
}

#[test]
fn a_small_matrix_is_drawn_in_squares() {
    let mut h = String::new();
    matrix_sections(&mut h, &[matrix(6, 2).into()]);
    assert!(rasters(&h).is_empty());
    // Two maps of 30 cells each, every square with its tooltip.
    assert_eq!(h.matches("stroke-width=0.5><title>").count(), 60);
    assert!(
        h.contains("n2 → n0: 90.0 Mbit/s"),
        "tooltip of the slow node's cell"
    );
}

#[test]
fn a_large_matrix_is_one_pixel_per_cell() {
    let n = HEATMAP_MAX_NODES + 22;
    let slow = 101;
    let mut h = String::new();
    matrix_sections(&mut h, &[matrix(n, slow).into()]);
    let maps = rasters(&h);
    assert_eq!(maps.len(), 2, "a latency and a bandwidth map");
    let maps_drawn: Vec<&str> = h
        .split("<figure class=heatmap>")
        .skip(1)
        .map(|f| &f[..f.find("</figure>").expect("closed figure")])
        .collect();
    assert_eq!(maps_drawn.len(), 2);
    assert!(
        maps_drawn.iter().all(|f| !f.contains("<svg")),
        "no squares past {HEATMAP_MAX_NODES} nodes"
    );
    let (w, ht, rgb) = &maps[1];
    assert_eq!((*w as usize, *ht as usize), (n, n));
    let px = |row: usize, col: usize| {
        let at = 3 * (row * n + col);
        [rgb[at], rgb[at + 1], rgb[at + 2]]
    };
    // The slow node's row and column are red, other cells white, the
    // diagonal (no cell) white too.
    assert_eq!(px(slow, 0), color_rgb(1.0));
    assert_eq!(px(7, slow), color_rgb(1.0));
    assert_eq!(px(7, 8), color_rgb(0.0));
    assert_eq!(px(7, 7), [0xff; 3]);
    // Uniform latency: the latency map has no red.
    assert!(maps[0].2.chunks(3).all(|p| p == [0xff, 0xff, 0xff]));
}

#[test]
fn load_pattern_tables_show_the_rate_and_the_pairs_alone() {
    let mut m = matrix(4, 99);
    m.pattern = Pattern::Shift;
    for c in &mut m.cells {
        c.round = (c.to + 4 - c.from) % 4 - 1;
        // Under the pattern each pair keeps half of what it has alone.
        let mut alone = c.bandwidth.clone().unwrap();
        alone.median_ns /= 2.0;
        alone.bits_per_s *= 2.0;
        c.alone_bandwidth = Some(alone);
        c.rate = Some(test_point(8, 500.0));
    }
    let figures = crate::result::matrix::figures_of(&m.cells);
    m.analysis = crate::analysis::matrix::analyse_pattern(m.pattern, &m.nodes, &figures);
    assert_eq!(m.analysis.contention.len(), 4);
    let mut h = String::new();
    matrix_sections(&mut h, &[m.into()]);
    assert!(
        h.contains("<th>8 B messages/s</th><th>4 MiB messages/s</th>"),
        "{h}"
    );
    // Four pairs of a shift step, each 2e6 small messages per second.
    assert!(h.contains("<td>8000000</td>"), "{h}");
    assert!(h.contains("<th>median pair alone</th>"));
    assert!(h.contains("<td>1800.0 Mbit/s</td>"), "the pairs alone: {h}");
    assert_eq!(h.matches("<td>50%</td>").count(), 4, "each node keeps half");
}

/// `--ppn 2`: the two processes of one host are drawn apart (no link's
/// colour, said so in the tooltip), no slow node comes of them, and each
/// node shows what it sent and received.
#[test]
fn intra_node_cells_are_drawn_apart_and_each_process_has_its_send_and_receive_view() {
    let mut m = matrix(4, 99);
    for (i, node) in m.nodes.iter_mut().enumerate() {
        let name = format!("h{}/{}", i / 2, i % 2);
        *node = MatrixNode::named(&name);
    }
    for c in &mut m.cells {
        c.intra_node = crate::result::matrix::intra_node(&m.nodes, c.from, c.to);
        if c.intra_node {
            c.bandwidth = Some(test_point(BW_BYTES, BW_BYTES as f64 * 8.0 / 20e9 * 1e9));
        }
    }
    let figures = crate::result::matrix::figures_of(&m.cells);
    m.analysis = crate::analysis::matrix::analyse(&m.nodes, &figures);
    assert!(
        m.analysis.slow_nodes.is_empty(),
        "{:?}",
        m.analysis.slow_nodes
    );
    assert_eq!(
        m.analysis.bandwidth.unwrap().cells,
        8,
        "inter-node cells only"
    );
    let mut h = String::new();
    matrix_sections(&mut h, &[m.into()]);
    assert!(h.contains("h0/0 → h0/1: "), "{h}");
    assert!(h.contains("(intra-node: two processes of one host)"));
    assert!(h.contains("(sent 900"), "the send view in the node table");
}
