//! The report's warnings, grouped by kind: one line per kind (what it is,
//! how many results it concerns, the first few named), the full texts
//! folded under it. A run of a dozen results once opened on fifteen
//! warning lines, some listing forty sizes; the reader needs to know what
//! kinds of trouble there were, and can unfold the details.

use std::fmt::Write;

use crate::result::SweepResult;

use super::details::esc;

/// Marker of the per-sweep warning about noisy points (see
/// `sweep::assemble`): those become one line of their own.
const NOISY_MARK: &str = "(marked noisy)";

/// Longest kind title, in characters, before it is cut.
const TITLE_CHARS: usize = 60;

/// Words of a warning that name its kind when it has no short
/// `kind: details` prefix.
const TITLE_WORDS: usize = 6;

/// One kind of warning: its title and every (result, text) of that kind.
struct Kind {
    key: String,
    title: String,
    items: Vec<(String, String)>,
}

/// A warning's kind: the text before its first colon when that is short
/// ("slow mode: ...", "peer: ..."), else its first words; digits do not
/// count, so the same warning about other sizes or times is the same kind.
/// Returns (key, title).
fn kind_of(w: &str) -> (String, String) {
    let title = match w.find(':') {
        Some(i) if i <= TITLE_CHARS => w[..i].to_string(),
        _ => {
            let words: Vec<&str> = w.split_whitespace().take(TITLE_WORDS).collect();
            format!("{}&hellip;", esc(&words.join(" ")))
        }
    };
    let title = if title.ends_with("&hellip;") {
        title
    } else {
        esc(&title)
    };
    let key: String = title
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    (key, title)
}

/// Warnings grouped by kind, in first-seen order.
#[derive(Default)]
pub(super) struct Groups {
    kinds: Vec<Kind>,
}

impl Groups {
    /// Add `text`, a warning about `name`, to its kind ([`kind_of`]).
    pub(super) fn add(&mut self, name: &str, text: &str) {
        let (key, title) = kind_of(text);
        self.add_to(key, title, name, text.to_string());
    }

    /// Add `text` to the kind `key` (titled `title` if it is new).
    fn add_to(&mut self, key: String, title: String, name: &str, text: String) {
        match self.kinds.iter_mut().find(|k| k.key == key) {
            Some(k) => k.items.push((name.to_string(), text)),
            None => self.kinds.push(Kind {
                key,
                title,
                items: vec![(name.to_string(), text)],
            }),
        }
    }

    /// One `<li>` per kind: its title, how many `noun`s it concerns (the
    /// first three named), and every text folded under it.
    pub(super) fn write(&self, items: &mut String, noun: &str) {
        for k in &self.kinds {
            let mut who: Vec<&str> = Vec::new();
            for (name, _) in &k.items {
                if !who.contains(&name.as_str()) {
                    who.push(name);
                }
            }
            let shown: Vec<String> = who.iter().take(3).map(|n| esc(n)).collect();
            let more = match who.len() {
                0..=3 => String::new(),
                n => format!(" and {} more", n - 3),
            };
            let _ = writeln!(
                items,
                "<li><details><summary><b>{}</b> &middot; {} {noun}{}: {}{more}</summary><ul>",
                k.title,
                who.len(),
                if who.len() == 1 { "" } else { "s" },
                shown.join(", ")
            );
            for (name, text) in &k.items {
                let _ = writeln!(items, "<li><b>{}</b>: {}</li>", esc(name), esc(text));
            }
            items.push_str("</ul></details></li>\n");
        }
    }
}

/// The warnings section of `results` (labelled by `names`), if any.
pub(super) fn warnings(h: &mut String, results: &[SweepResult], names: &[String]) {
    let mut groups = Groups::default();
    let mut noisy: Vec<(&str, u64, usize)> = Vec::new();
    for (r, name) in results.iter().zip(names) {
        if !r.complete {
            let why = r
                .incomplete_reason
                .as_deref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default();
            groups.add_to(
                "incomplete".into(),
                "incomplete run".into(),
                name,
                format!(
                    "incomplete run{why} \u{2014} the points present are valid, larger sizes are missing"
                ),
            );
        }
        // One entry a sweep, however many of its warnings carry the mark.
        if r.warnings.iter().any(|w| w.contains(NOISY_MARK)) {
            noisy.push((name, r.summary.noisy_points, r.points.len()));
        }
        for w in r.warnings.iter().filter(|w| !w.contains(NOISY_MARK)) {
            groups.add(name, w);
        }
    }
    let mut items = String::new();
    noisy_line(&mut items, &mut noisy);
    groups.write(&mut items, "result");
    if !items.is_empty() {
        let _ = write!(
            h,
            "<section id=warnings><h2>Warnings</h2><ul class=warn>\n{items}</ul></section>\n"
        );
    }
}

/// The noisy points of every sweep as one line (the total and the worst
/// result), each result's count folded under it, worst first.
fn noisy_line(items: &mut String, noisy: &mut [(&str, u64, usize)]) {
    let share = |n: u64, of: usize| n as f64 / of.max(1) as f64;
    noisy.sort_by(|a, b| share(b.1, b.2).total_cmp(&share(a.1, a.2)));
    let Some((worst, n, of)) = noisy.first() else {
        return;
    };
    let (all, points) = noisy
        .iter()
        .fold((0, 0), |(a, p), (_, n, of)| (a + n, p + of));
    let _ = writeln!(
        items,
        "<li><details><summary><b>noisy points</b> &middot; {all} of {points} points in {} result{} \
         did not reach the precision target within the budget (worst: {}, {n} of {of}); a larger \
         --budget or a quieter machine helps</summary><ul>",
        noisy.len(),
        if noisy.len() == 1 { "" } else { "s" },
        esc(worst)
    );
    for (name, n, of) in noisy.iter() {
        let _ = writeln!(items, "<li><b>{}</b>: {n} of {of}</li>", esc(name));
    }
    items.push_str("</ul></details></li>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_of_one_kind_share_a_key_whatever_their_numbers() {
        let a = kind_of("slow mode: 1 of 1 sizes from 64 KiB on took more than 4x");
        let b = kind_of("slow mode: 3 of 9 sizes from 1 MiB on took more than 4x");
        assert_eq!(a, b);
        assert_eq!(a.1, "slow mode");
        let c = kind_of("the c2c limit took more than 1.00 s (its share of the budget is 10.00 ms) before 64 KiB: no c2c limit there");
        let d = kind_of("the c2c limit took more than 2.50 s (its share of the budget is 10.00 ms) before 1 MiB: no c2c limit there");
        assert_eq!(c.0, d.0);
        assert_ne!(a.0, c.0);
        assert!(c.1.ends_with("&hellip;"), "{}", c.1);
    }

    #[test]
    fn a_dozen_results_make_one_line_per_kind_with_the_texts_folded() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/unix-pingpong.json"
        );
        let r = crate::result::read_result(std::path::Path::new(path)).unwrap();
        let mut results = vec![r; 12];
        let names: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
        for (i, r) in results.iter_mut().enumerate() {
            r.warnings.push(format!(
                "slow mode: {i} of 9 sizes from {} KiB on took more than 4x",
                i + 1
            ));
        }
        results[3].complete = false;
        let mut h = String::new();
        warnings(&mut h, &results, &names);
        // Noisy points, slow mode, the incomplete run: three lines.
        assert_eq!(h.matches("<li><details>").count(), 3, "{h}");
        assert!(h.contains("<b>slow mode</b> &middot; 12 results: r0, r1, r2 and 9 more"));
        assert!(h.contains("in 12 results did not reach"), "{h}");
        assert!(h.contains("<li><b>r11</b>: slow mode: 11 of 9 sizes"));
        assert!(h.contains("<b>incomplete run</b> &middot; 1 result: r3"));
    }
}
