//! What a study's tables must not hide (issue 35 item 7): `study.json`
//! had `warnings: []` with 44 of 44 points noisy, and tables showed 100.8
//! Mbit/s of payload on a 100 Mbit/s link and 1,004 Mbit/s of TCP on
//! 1 Gbit/s. Every table now says how many of the points behind it are
//! noisy, a figure above its link's TCP goodput limit is withheld from the
//! tables (kept in `cases[]`) with its reason in the warnings, and the
//! warnings count both. Pure functions of the cases and their sweeps.

use crate::result::{StudyCaseResult, StudyTable, SweepResult};

/// A peak above this share of its link's TCP goodput limit is not a
/// figure of the link (the limit's own accounting is exact to well under
/// 1%; a token bucket's burst or a cache is what lets a sweep exceed it).
pub const OVER_LIMIT_SHARE: f64 = 1.02;

/// The points of a study's sweeps that did not reach their precision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Noise {
    /// Points marked noisy.
    pub noisy: usize,
    /// All points.
    pub points: usize,
}

/// Count the noisy points of `sweeps`.
pub fn count(sweeps: &[(String, SweepResult)]) -> Noise {
    let mut n = Noise::default();
    for (_, r) in sweeps {
        n.points += r.points.len();
        n.noisy += r.points.iter().filter(|p| p.noisy).count();
    }
    n
}

/// Whether a case's peak lies above what its link can carry.
fn over_limit(c: &StudyCaseResult) -> bool {
    c.peak_fraction.is_some_and(|f| f > OVER_LIMIT_SHARE)
}

/// The cases as the tables show them: a peak above its link's limit
/// withheld (its fraction and sizes with it).
pub fn withhold(cases: &[StudyCaseResult]) -> (Vec<StudyCaseResult>, usize) {
    let mut withheld = 0;
    let shown = cases
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if over_limit(&c) {
                withheld += 1;
                c.peak_bits_per_s = None;
                c.peak_fraction = None;
                c.peak_bytes = None;
                c.n_half_bytes = None;
            }
            c
        })
        .collect();
    (shown, withheld)
}

/// Append to every table's title the noise behind it and what was
/// withheld, so that no rendering (terminal, Markdown, HTML) shows a
/// table without them.
pub fn annotate(tables: &mut [StudyTable], noise: Noise, withheld: usize) {
    let mut note = format!(
        "; {} of {} points noisy (not within their precision in the budget)",
        noise.noisy, noise.points
    );
    if withheld > 0 {
        note.push_str(&format!(
            "; {withheld} peaks above their link's goodput limit withheld (see warnings)"
        ));
    }
    for t in tables {
        t.title.push_str(&note);
    }
}

/// The study's warnings: the noise, and each peak above its link's limit
/// with its figures and reason.
pub fn warnings(noise: Noise, cases: &[StudyCaseResult]) -> Vec<String> {
    let mut w = Vec::new();
    if noise.noisy > 0 {
        w.push(format!(
            "{} of {} points did not reach their precision within the budget (marked noisy in \
             the sweeps): differences between cases smaller than that noise are not findings; \
             a larger budget (--effort full) or a quieter machine helps",
            noise.noisy, noise.points
        ));
    }
    if let Some(listed) = noisy_points(cases) {
        w.push(listed);
    }
    for c in cases.iter().filter(|c| over_limit(c)) {
        w.push(format!(
            "{}: peak {:.1} Mbit/s is {:.3} of the link's TCP goodput limit {:.1} Mbit/s, more \
             than the link can carry (a shaper's burst or a cache at the measured sizes): \
             withheld from the tables",
            c.label,
            c.peak_bits_per_s.unwrap_or(0.0) / 1e6,
            c.peak_fraction.unwrap_or(0.0),
            c.goodput_bits_per_s / 1e6
        ));
    }
    w
}

/// Cases listed by name in [`noisy_points`]; the rest are counted.
const NOISY_CASES_LISTED: usize = 40;

/// The noisy points by case (`tcp-fe: 1 B, 64 KiB`), so that a reader of
/// study.json knows which figures rest on them; None when none is.
pub fn noisy_points(cases: &[StudyCaseResult]) -> Option<String> {
    let noisy: Vec<&StudyCaseResult> = cases.iter().filter(|c| !c.noisy_bytes.is_empty()).collect();
    if noisy.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = noisy
        .iter()
        .take(NOISY_CASES_LISTED)
        .map(|c| {
            let sizes: Vec<String> = c
                .noisy_bytes
                .iter()
                .map(|&b| crate::units::format_bytes(b))
                .collect();
            format!("{}: {}", c.label, sizes.join(", "))
        })
        .collect();
    if noisy.len() > NOISY_CASES_LISTED {
        parts.push(format!(
            "and {} more cases",
            noisy.len() - NOISY_CASES_LISTED
        ));
    }
    Some(format!(
        "noisy points (marked {} in the tables where a figure rests on one): {}",
        super::tables::NOISY_MARK,
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(label: &str, peak: f64, limit: f64) -> StudyCaseResult {
        let mut c: StudyCaseResult = serde_json::from_value(serde_json::json!({
            "label": label, "role": "cell", "transport": "tcp", "link": "fe",
            "link_bits_per_s": 100_000_000u64, "mtu_bytes": 1500, "mode": "pingpong",
            "latency_ns": null, "peak_min_bytes": 0, "peak_bits_per_s": peak,
            "peak_bytes": 65536, "n_half_bytes": 4096, "goodput_bits_per_s": limit,
            "peak_fraction": peak / limit
        }))
        .unwrap();
        c.peak_fraction = Some(peak / limit);
        c
    }

    #[test]
    fn noisy_points_are_listed_in_the_warnings_and_marked_in_the_tables() {
        let mut a = case("fe-tcp", 94.1e6, 95.64e6);
        a.noisy_bytes = vec![1, 65536];
        a.latency_ns = Some(50e3);
        a.latency_noisy = true;
        let b = case("ge-tcp", 900e6, 941e6);
        let w = noisy_points(&[a.clone(), b.clone()]).expect("one case is noisy");
        assert!(w.contains("fe-tcp: 1 B, 64 KiB"), "{w}");
        assert!(!w.contains("ge-tcp"), "{w}");
        assert!(noisy_points(std::slice::from_ref(&b)).is_none());
        // fe-vs-ge: fe's latency and peak (at 64 KiB) noisy, n_1/2 not.
        let (mut fe, mut ge) = (a, b);
        (fe.transport, fe.link, ge.transport, ge.link) =
            ("tcp".into(), "fe".into(), "tcp".into(), "ge".into());
        let t = crate::study::tables::tables(crate::study::StudyName::FeVsGe, &[fe, ge]);
        // The two latency spreads (one round: none) are never marked.
        assert_eq!(
            t[0].rows[0].noisy,
            [true, false, true, false, false, false, false, false]
        );
        let text = crate::study::tables::text(&t);
        assert!(text.contains("94.1~"), "{text}");
        assert!(text.contains("~ noisy:"), "{text}");
        let md = crate::study::tables::markdown(&t);
        assert!(md.contains("| 50.0~ |"), "{md}");
    }

    #[test]
    fn peaks_above_the_link_are_withheld_and_said_and_noise_is_in_every_title() {
        let cases = [
            case("fe-raw", 100.8e6, 95.64e6),
            case("fe-tcp", 94.1e6, 95.64e6),
        ];
        let (shown, withheld) = withhold(&cases);
        assert_eq!(withheld, 1);
        assert_eq!(shown[0].peak_bits_per_s, None);
        assert_eq!(shown[1].peak_bits_per_s, Some(94.1e6));
        let w = warnings(
            Noise {
                noisy: 44,
                points: 44,
            },
            &cases,
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("44 of 44 points"), "{}", w[0]);
        assert!(
            w[1].contains("fe-raw: peak 100.8 Mbit/s is 1.054"),
            "{}",
            w[1]
        );
        let mut tables = vec![StudyTable {
            title: "Peak".into(),
            row_header: String::new(),
            columns: Vec::new(),
            rows: Vec::new(),
            decimals: Default::default(),
        }];
        annotate(
            &mut tables,
            Noise {
                noisy: 3,
                points: 40,
            },
            withheld,
        );
        assert!(
            tables[0].title.contains("3 of 40 points noisy"),
            "{}",
            tables[0].title
        );
        assert!(
            tables[0].title.contains("1 peaks above"),
            "{}",
            tables[0].title
        );
        assert!(warnings(
            Noise {
                noisy: 0,
                points: 9
            },
            &cases[1..]
        )
        .is_empty());
    }
}

/// The emulated links' framing in words, for the warnings of a study run
/// in a lab (issue 35 item 7): the lab's shaper counts the IP packet and
/// a 14-byte header per frame, not the preamble, gap and FCS real
/// Ethernet spends, so a shaped link carries a little more TCP than the
/// real one; the tables' fractions are of the shaped limit.
pub fn framing_note(cases: &[StudyCaseResult]) -> Option<String> {
    let mut seen = Vec::new();
    for c in cases {
        let key = (c.link_bits_per_s, c.mtu_bytes);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
    }
    let parts: Vec<String> = seen
        .iter()
        .filter_map(|&(bits, mtu)| {
            let l = crate::sys::tcp_goodput_limit(
                bits as f64 / 1e6,
                mtu,
                crate::sys::IpVersion::V4,
                true,
            )?;
            Some(format!(
                "{} Mbit/s at MTU {mtu}: {:.1} Mbit/s of TCP shaped, {:.1} on real Ethernet",
                bits / 1_000_000,
                l.goodput_shaped_mbit_per_s,
                l.goodput_ethernet_mbit_per_s
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "the lab's shaper counts each frame's IP packet and 14-byte header, not the \
             preamble, inter-frame gap and FCS of real Ethernet; peaks and fractions are \
             against the shaped limit ({})",
            parts.join("; ")
        )
    })
}

#[cfg(test)]
mod framing_tests {
    use super::*;

    #[test]
    fn the_framing_note_gives_both_limits_once_per_link() {
        let c: StudyCaseResult = serde_json::from_value(serde_json::json!({
            "label": "fe-tcp", "role": "cell", "transport": "tcp", "link": "fe",
            "link_bits_per_s": 100_000_000u64, "mtu_bytes": 1500, "mode": "pingpong",
            "latency_ns": null, "peak_min_bytes": 0, "peak_bits_per_s": null,
            "peak_bytes": null, "n_half_bytes": null, "goodput_bits_per_s": 95.64e6,
            "peak_fraction": null
        }))
        .unwrap();
        let note = framing_note(&[c.clone(), c]).unwrap();
        // fe: 100 x 1448/1514 shaped, 100 x 1448/1538 on the wire.
        assert!(
            note.contains(
                "100 Mbit/s at MTU 1500: 95.6 Mbit/s of TCP shaped, 94.1 on real Ethernet"
            ),
            "{note}"
        );
        assert_eq!(note.matches("MTU 1500").count(), 1);
        assert!(framing_note(&[]).is_none());
    }
}
