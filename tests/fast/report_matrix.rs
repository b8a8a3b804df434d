//! A link matrix's HTML report, from a stored matrix file (issue 49, item
//! 8): re-measure cells never hide or replace a round's cell, the
//! distributions count one cell per directed pair, the host-bound verdict
//! the terminal prints is in the page, and "Machines and command lines"
//! describes the nodes' machine once (one boot id: one machine) with the
//! matrix's command line.

use crate::common::{file, matrix_with_remeasures, run, stderr, tempdir};

/// The page `wulf report` writes of `matrix`.
fn report_of(matrix: &serde_json::Value) -> String {
    let dir = tempdir();
    let input = file(&dir, "m.json");
    std::fs::write(&input, serde_json::to_vec(matrix).unwrap()).unwrap();
    let out = file(&dir, "m.html");
    let o = run(&[
        "report",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read_to_string(out).unwrap()
}

/// The squares of the map whose caption starts with `title`.
fn squares<'h>(html: &'h str, title: &str) -> Vec<&'h str> {
    let map = html
        .split("<figure class=heatmap>")
        .find(|f| f.contains(&format!("<figcaption>{title}")))
        .unwrap_or_else(|| panic!("no {title} map"));
    let map = &map[..map.find("</figure>").unwrap()];
    map.split("<rect").skip(1).collect()
}

#[test]
fn remeasures_do_not_hide_the_rounds_cells() {
    let html = report_of(&matrix_with_remeasures());
    for title in ["Latency", "Bandwidth"] {
        let cells = squares(&html, title);
        assert_eq!(cells.len(), 12, "{title}: one square per directed cell");
        // node2 -> node3's round cell, measured, keeps its colour and
        // figure; the failed re-measure is said in its tooltip.
        let c = cells
            .iter()
            .find(|c| c.contains("<title>node2 → node3: "))
            .unwrap();
        assert!(!c.contains("fill='#999'"), "{title}: drawn grey: {c}");
        assert!(
            c.contains("measured again alone: not measured"),
            "{title}: {c}"
        );
    }
    // node3 -> node1 shows the round's 95.6 Mbit/s, the re-measure's
    // 345.1 beside it.
    let bw = squares(&html, "Bandwidth");
    let c = bw
        .iter()
        .find(|c| c.contains("<title>node3 → node1: "))
        .unwrap();
    assert!(
        c.contains("node3 → node1: 95.6 Mbit/s; measured again alone: 345.1 Mbit/s"),
        "{c}"
    );
    // The distributions count the 12 cells, not 14.
    assert!(
        !html.contains("distribution of 13 cells"),
        "re-measures counted"
    );
    assert!(
        !html.contains("distribution of 14 cells"),
        "re-measures counted"
    );
    assert_eq!(html.matches("distribution of 12 cells").count(), 2);
}

#[test]
fn the_host_bound_verdict_and_the_machines_are_in_the_page() {
    let html = report_of(&matrix_with_remeasures());
    assert!(
        html.contains("<b>Host-bound</b>: cells reach 0.41 of their links&#39; goodput while the hosts&#39; CPUs are 97% busy"),
        "no host-bound verdict"
    );
    let machines = &html[html.find("<section id=machines>").unwrap()..];
    let machines = &machines[..machines.find("</section>").unwrap()];
    // Four lab nodes, one kernel: one machine, its other views under it.
    assert_eq!(machines.matches("<b>Machine M").count(), 1, "{machines}");
    assert!(machines.contains("nodes of link matrix 1: node1, node2, node3, node4"));
    assert!(machines.contains("as node2 saw it, except:"), "{machines}");
    assert!(machines.contains("<b>Link matrix 1</b>"));
    assert!(machines.contains("node1 on M1, node2 on M1, node3 on M1, node4 on M1"));
    assert!(
        machines.contains("matrix --nodes 4 --budget 8s"),
        "no command line"
    );
}
