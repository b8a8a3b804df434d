//! What a person reads names everything there is: every registered
//! transport, study and report format appears in `--help` and the man
//! pages (issue 49 item 10), and no user-facing text speaks of "seeds",
//! a word from wulf's own history a reader cannot look up (item 17).

use std::path::Path;

use crate::common;
use common::*;

/// The text of `wulf ARGS`, which must succeed.
fn help(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether `name` occurs in `text` as a word of its own (not as the tail
/// of a longer name: `pvm` inside `pvm(xdr)` does not count for `xdr`).
fn names(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '-' && c != '(');
        edge(before) && edge(after)
    })
}

#[test]
fn sweep_help_and_man_page_list_every_registered_transport() {
    let text = help(&["sweep", "--help"]);
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["manpages", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let man = std::fs::read_to_string(dir.path().join("wulf-sweep.1")).unwrap();
    // The man page escapes '-' as '\-'.
    let man = man.replace("\\-", "-");
    let catalogue = wulf::transport::catalogue();
    assert!(catalogue.len() >= 14, "{catalogue:?}");
    for (name, _) in catalogue {
        assert!(
            names(&text, name),
            "`wulf sweep --help` lacks {name}:\n{text}"
        );
        assert!(man.contains(name), "wulf-sweep.1 lacks {name}");
    }
    assert!(text.contains("mpi:NAME"), "{text}");
}

#[test]
fn top_level_help_lists_every_study_format_and_named_link() {
    let text = help(&["--help"]);
    for study in wulf::study::StudyName::ALL {
        assert!(
            names(&text, study.as_str()),
            "`wulf --help` lacks study {}:\n{text}",
            study.as_str()
        );
    }
    // linpack is a study of its own kind (HPL runs, not lab sweeps).
    assert!(names(&text, "linpack"), "{text}");
    for exporter in wulf::report::export::EXPORTERS {
        assert!(
            names(&text, exporter.name()),
            "`wulf --help` lacks format {}:\n{text}",
            exporter.name()
        );
    }
    for (link, _) in wulf::lab::spec::NAMED_LINKS {
        assert!(
            names(&text, link),
            "`wulf --help` lacks link {link}:\n{text}"
        );
    }
}

/// Every `--help` a user can ask for: the top level and each visible
/// subcommand, found by asking the binary itself.
fn every_help() -> Vec<(String, String)> {
    let top = help(&["--help"]);
    let mut out = vec![("--help".to_string(), top.clone())];
    let commands = top
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("Options:").next())
        .unwrap_or("")
        .lines()
        // A command's own line; its wrapped description is indented more.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'))
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert!(commands.len() >= 10, "{commands:?}");
    for c in commands {
        out.push((format!("{c} --help"), help(&[&c, "--help"])));
    }
    out.push(("lab up --help".into(), help(&["lab", "up", "--help"])));
    out
}

/// Markdown files of the README and the user guide.
fn user_docs() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs/guide")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files
}

/// Whether `line` speaks of the studies wulf reproduces as "seeds": any
/// "seed" but `wulf matrix`'s random seed (`--seed N`, the result's
/// `seed`).
fn says_seed(line: &str) -> bool {
    let mut l = line.to_lowercase();
    for allowed in ["--seed <seed>", "--seed", "`seed`", "random seed"] {
        l = l.replace(allowed, "");
    }
    l.contains("seed")
}

#[test]
fn no_user_facing_text_speaks_of_seeds() {
    let mut found = Vec::new();
    for (what, text) in every_help() {
        if text.lines().any(says_seed) {
            found.push(format!("wulf {what}"));
        }
    }
    for file in user_docs() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if says_seed(line) {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "say which study, by its authors and title:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_cited_study_is_referenced_in_full_in_the_help_and_readme() {
    // clap wraps the help: compare with the line breaks taken out.
    let text = help(&["study", "--help"])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let references = readme
        .split("## References")
        .nth(1)
        .expect("README has a References section");
    for (key, full) in wulf::study::REFERENCES {
        assert!(
            text.contains(key) && text.contains(full),
            "`wulf study --help` lacks {key}:\n{text}"
        );
        assert!(
            references.contains(&format!("**{key}**")),
            "README's References lack {key}"
        );
    }
}
