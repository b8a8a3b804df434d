//! `wulf compare --html`: the comparison tables of [`crate::report::compare`] as one
//! self-contained HTML page (no scripts, no external files), the verdicts
//! coloured so a changed band stands out at a glance.

use std::fmt::Write;

use super::details::esc;
use crate::analysis::compare::Comparison;
use crate::report::compare::{band_rows, figure_rows, notes, BAND_RIGHT, FIGURE_RIGHT};

/// One comparison of the page: B's runs against A's.
#[derive(Debug, Clone)]
pub struct Section {
    /// A's description (transport, mode, files).
    pub a_name: String,
    /// B's description.
    pub b_name: String,
    /// The comparison itself.
    pub comparison: Comparison,
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:72em;\
padding:0 1em;color:#222}table{border-collapse:collapse;margin:.8em 0}\
th,td{padding:.25em .7em;border-bottom:1px solid #ddd}th{text-align:left}\
td.r{text-align:right;font-variant-numeric:tabular-nums}\
.a-faster{background:#fde2e1}.b-faster{background:#e1f5e4}.same{color:#555}.inconclusive{background:#fff6d5}\
p.note{font-size:.92em;color:#444;max-width:60em}";

/// The page holding every section.
pub fn to_html(sections: &[Section]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>wulf compare</title><style>{STYLE}</style></head><body>\n<h1>wulf compare</h1>\n"
    );
    for sec in sections {
        let _ = writeln!(
            s,
            "<section><h2>B against A</h2><p><b>A</b> (baseline): {}<br><b>B</b>: {}</p>",
            esc(&sec.a_name),
            esc(&sec.b_name)
        );
        table(&mut s, &band_rows(&sec.comparison), &BAND_RIGHT);
        table(&mut s, &figure_rows(&sec.comparison), &FIGURE_RIGHT);
        for n in notes(&sec.comparison) {
            let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(&n));
        }
        s.push_str("</section>\n");
    }
    s.push_str("</body></html>\n");
    s
}

/// A table whose last column is the verdict, its row classed by it.
fn table(s: &mut String, rows: &[Vec<String>], right: &[bool]) {
    s.push_str("<table>\n<tr>");
    for h in &rows[0] {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr>\n");
    for r in &rows[1..] {
        let verdict = r.last().map(String::as_str).unwrap_or("");
        let class = if verdict.starts_with("A faster") {
            "a-faster"
        } else if verdict.starts_with("B faster") {
            "b-faster"
        } else if verdict.starts_with("inconclusive") {
            "inconclusive"
        } else {
            "same"
        };
        let _ = write!(s, "<tr class=\"{class}\">");
        for (c, v) in r.iter().enumerate() {
            let align = if right[c] { " class=\"r\"" } else { "" };
            let _ = write!(s, "<td{align}>{}</td>", esc(v));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
}
