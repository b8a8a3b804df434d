//! Transport and launcher kinds are types, not names (ARCHITECTURE.md,
//! "Add a transport", "Add a launcher"): what a transport or a launcher can
//! do is a method of its trait (`Transport::starts_both_ends`,
//! `Transport::claims_nic`, `Launcher::shares_cpus`...), asked of the
//! handle a command resolved once. Outside the registries
//! (`src/transport/`, `src/cluster/launchers/`) no code may decide by a
//! name: this test reads the source and fails on
//!
//! * a prefix or suffix test whose text could begin or end a kind's name
//!   (`starts_with("mpi:")`, `starts_with("lab")`, `ends_with(')')` of
//!   `mpi:NAME(tcp)`);
//! * a comparison with a launcher's name (`== "local"`, `!= "ssh"`) or a
//!   name of a family (`"mpi:openmpi"`, `"lab:x"`);
//! * a list of two transport names or more, as a slice (`["raw",
//!   "xdp"]`) or a pattern (`"raw" | "xdp"`): a policy or a plan kept as
//!   names, which a new transport would silently miss.
//!
//! Comparing a name with one transport's name (`via == "tcp"`) stays
//! allowed: results carry names, and picking one transport's rows out of
//! them is identity, not a kind. Names come from the registries
//! themselves, so a new transport or launcher is covered without an edit.

use std::fs;
use std::path::Path;

use super::architecture::{test_module_start, walk};

/// The names the rules look for.
struct Kinds {
    /// Every built-in transport's name (`tcp`, `raw`...).
    transports: Vec<String>,
    /// Every launcher's plain `--launch` name (`ssh`, `local`, `lab`).
    launchers: Vec<String>,
    /// Prefixes and suffixes of families of names (`mpi:`, `lab:`, and
    /// `(tcp)`, the suffix of an MPI forced onto TCP).
    families: Vec<String>,
}

impl Kinds {
    /// The names the registries know.
    fn from_registries() -> Kinds {
        let transports = wulf::transport::catalogue()
            .into_iter()
            .map(|(name, _)| name.to_string())
            .collect();
        let forms = wulf::cluster::launchers::REGISTRY
            .iter()
            .flat_map(|e| e.forms.iter().copied());
        let (mut families, mut launchers) = (Vec::new(), Vec::new());
        for form in forms {
            match form.strip_suffix("NAME") {
                Some(prefix) => families.push(prefix.to_string()),
                None => launchers.push(form.to_string()),
            }
        }
        // The MPIs are found at run time; their names are `mpi:NAME`
        // (the launcher's family too) and `mpi:NAME(tcp)`.
        families.push("(tcp)".to_string());
        Kinds {
            transports,
            launchers,
            families,
        }
    }

    /// Every whole name or family part a prefix or suffix test could match.
    fn all(&self) -> impl Iterator<Item = &String> {
        self.transports
            .iter()
            .chain(&self.launchers)
            .chain(&self.families)
    }
}

/// The text of the string (`"..."`) or character (`'.'`) literal at the
/// start of `s`, if one is there.
fn literal(s: &str) -> Option<&str> {
    let s = s.trim_start();
    let quote = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &s[1..];
    rest.find(quote).map(|end| &rest[..end])
}

/// Every string literal of `line`, in order.
fn literals(line: &str) -> Vec<&str> {
    line.split('"').skip(1).step_by(2).collect()
}

/// The offending parts of one line of non-test code.
fn line_findings(line: &str, kinds: &Kinds) -> Vec<String> {
    let mut out = Vec::new();
    for (call, prefix) in [
        ("starts_with(", true),
        ("strip_prefix(", true),
        ("ends_with(", false),
        ("strip_suffix(", false),
    ] {
        for (at, _) in line.match_indices(call) {
            let Some(text) = literal(&line[at + call.len()..]).filter(|t| !t.is_empty()) else {
                continue;
            };
            let hits = |k: &String| match prefix {
                true => k.starts_with(text),
                false => k.ends_with(text),
            };
            if kinds.all().any(hits) {
                out.push(format!("{call}{text:?}): a name's prefix or suffix"));
            }
        }
    }
    for op in ["==", "!="] {
        for (at, _) in line.match_indices(op) {
            let after = literal(&line[at + 2..]);
            let before = line[..at].trim_end().strip_suffix('"').and_then(|b| {
                let start = b.rfind('"')?;
                Some(&b[start + 1..])
            });
            for text in after.into_iter().chain(before) {
                let family = kinds.families.iter().any(|f| text.starts_with(f.as_str()));
                if kinds.launchers.iter().any(|l| l == text) || family {
                    out.push(format!("{op} {text:?}: a launcher's or a family's name"));
                }
            }
        }
    }
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    for pair in literals(&compact).windows(2) {
        let both = pair.iter().all(|n| kinds.transports.iter().any(|t| t == n));
        if both && compact.contains(&format!("\"{}\"|\"{}\"", pair[0], pair[1])) {
            out.push(format!(
                "\"{}\" | \"{}\": transports by name",
                pair[0], pair[1]
            ));
        }
    }
    out
}

/// The slices of string literals in `code` (`["a", "b"]`, across lines
/// too) that hold two transport names or more.
fn name_lists(code: &str, kinds: &Kinds) -> Vec<String> {
    let mut out = Vec::new();
    for (open, _) in code.match_indices('[') {
        let Some(len) = code[open..].find(']') else {
            continue;
        };
        let inside = &code[open + 1..open + len];
        let items: Vec<&str> = inside
            .split(',')
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .collect();
        let names: Option<Vec<&str>> = items
            .iter()
            .map(|i| {
                let i = i.strip_suffix(".into()").unwrap_or(i);
                let i = i.strip_suffix(".to_string()").unwrap_or(i);
                i.strip_prefix('"')?.strip_suffix('"')
            })
            .collect();
        let Some(names) = names else { continue };
        let transports = names
            .iter()
            .filter(|n| kinds.transports.iter().any(|t| t == *n))
            .count();
        if transports >= 2 {
            let line = code[..open].lines().count().max(1);
            out.push(format!(
                "line {line}: [{inside}]: a list of transport names"
            ));
        }
    }
    out
}

/// Every finding in `text`, one file's source, as `line N: what`.
fn findings(text: &str, kinds: &Kinds) -> Vec<String> {
    let code = &text[..test_module_start(text).unwrap_or(text.len())];
    // Comment lines blanked, not removed: line numbers stay the file's.
    let code: String = code
        .lines()
        .map(|l| if l.trim().starts_with("//") { "" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (k, line) in code.lines().enumerate() {
        for f in line_findings(line, kinds) {
            out.push(format!("line {}: {f}", k + 1));
        }
    }
    out.extend(name_lists(&code, kinds));
    out
}

/// Where the kinds are defined: the names may be spelled out there.
const REGISTRIES: &[&str] = &["transport/", "cluster/launchers/"];

#[test]
fn no_code_outside_the_registries_decides_by_a_kind_name() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let kinds = Kinds::from_registries();
    assert!(
        kinds.transports.len() > 5 && kinds.launchers.contains(&"local".to_string()),
        "the registries' names were not read"
    );
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut found = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let name = path.file_name().unwrap().to_string_lossy();
        if REGISTRIES.iter().any(|r| rel.starts_with(r))
            || name == "tests.rs"
            || name.ends_with("_tests.rs")
        {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        found.extend(
            findings(&text, &kinds)
                .into_iter()
                .map(|f| format!("{rel} {f}")),
        );
    }
    assert!(
        found.is_empty(),
        "code that decides by a transport's or a launcher's name: ask the handle (a method of \
         Transport or Launcher, added in the registry's module) instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn each_kind_of_name_branching_is_found() {
    let kinds = Kinds {
        transports: vec!["tcp".into(), "raw".into(), "xdp".into()],
        launchers: vec!["local".into(), "lab".into()],
        families: vec!["mpi:".into(), "lab:".into(), "(tcp)".into()],
    };
    let bad = [
        "if t.starts_with(\"mpi:\") {",
        "let in_lab = l.starts_with(\"lab\");",
        "let n = m.strip_prefix(\"mpi:\").unwrap_or(m);",
        "x.filter(|n| !n.ends_with(')'))",
        "if spread.launch != \"local\" {",
        "if \"lab:x\" == name {",
        "matches!(t, \"raw\" | \"xdp\")",
        "const LEAN: [&str; 2] = [\n    \"raw\",\n    \"xdp\",\n];",
    ];
    for code in bad {
        assert!(!findings(code, &kinds).is_empty(), "not found: {code}");
    }
    let fine = [
        "if via == \"tcp\" {",
        "let v = vec![\"tcp\".to_string()];",
        "if name.starts_with(\"--\") {}",
        "// if t.starts_with(\"mpi:\") {}",
        "let s = format!(\"mpi:{name}\");",
        "#[cfg(test)]\nmod tests { const X: [&str; 2] = [\"raw\", \"xdp\"]; }",
    ];
    for code in fine {
        assert_eq!(findings(code, &kinds), Vec::<String>::new(), "{code}");
    }
}
