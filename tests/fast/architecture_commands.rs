//! Commands are thin (issue 46 item 2): a file of `src/commands/` parses
//! its arguments, calls a plan (`src/plan/`) and prints; no command
//! imports another, and the directory stays small. Read from the source
//! as text, as the layer test next door reads the module graph.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::architecture::{group_refs, ident_len, non_test_code, walk};

/// The most lines `src/commands/` may hold, all its files together: a
/// command parses, calls a plan and prints (issue 46: 6,843 lines before
/// the orchestration moved to `src/plan/`).
const COMMANDS_MAX_LINES: usize = 3_500;

/// The sibling command modules a file of `src/commands/` names, given its
/// command (`own`), how deep it is under `src/commands/` (0 for
/// `commands/x.rs`, 1 for `commands/x/y.rs`) and its non-test code:
/// `crate::commands::X` anywhere and the parent's `super::X` (`super::
/// super::X` one folder down), also as items of a group; its own command
/// and names that are no command (`super::*`, a helper of `mod.rs`) are
/// not counted.
fn command_imports(
    code: &str,
    own: &str,
    depth: usize,
    commands: &BTreeSet<String>,
) -> BTreeSet<String> {
    let parent = "super::".repeat(depth + 1);
    let mut named = BTreeSet::new();
    for prefix in ["crate::commands::", parent.as_str()] {
        let mut from = 0;
        while let Some(i) = code[from..].find(prefix).map(|i| i + from) {
            let at = i + prefix.len();
            from = at;
            // `super::super::x` is not `super::x` of a deeper parent.
            if code[..i].ends_with("super::") {
                continue;
            }
            let n = ident_len(&code.as_bytes()[at..]);
            if n > 0 {
                named.insert(code[at..at + n].to_string());
            } else if code.as_bytes().get(at) == Some(&b'{') {
                group_refs(&code[at + 1..], &mut named);
            }
        }
    }
    named
        .into_iter()
        .filter(|m| m != own && commands.contains(m))
        .collect()
}

/// The command modules of `dir` (`src/commands/`): its files and folders
/// by name, `mod.rs` aside.
fn command_modules(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .expect("readable src/commands")
        .map(|e| e.expect("a directory entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            let name = name.strip_suffix(".rs").unwrap_or(&name).to_string();
            (name != "mod").then_some(name)
        })
        .collect()
}

#[test]
fn commands_are_thin_and_import_no_other_command() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let commands = command_modules(&dir);
    assert!(commands.len() > 10, "too few commands read: {commands:?}");
    let mut files = Vec::new();
    walk(&dir, &mut files);
    let (mut lines, mut found) = (0, Vec::new());
    for path in files {
        let text = fs::read_to_string(&path).expect("readable source");
        lines += text.lines().count();
        let rel = path.strip_prefix(&dir).expect("under src/commands");
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let own = parts[0].strip_suffix(".rs").unwrap_or(&parts[0]);
        if own == "mod" {
            continue;
        }
        let named = command_imports(&non_test_code(&text), own, parts.len() - 1, &commands);
        for m in named {
            found.push(format!("commands/{} imports command {m}", rel.display()));
        }
    }
    assert!(
        found.is_empty(),
        "a command imports another: move what they share into a plan (src/plan/):\n{}",
        found.join("\n")
    );
    assert!(
        lines <= COMMANDS_MAX_LINES,
        "src/commands/ holds {lines} lines, more than {COMMANDS_MAX_LINES}: a command parses, \
         calls a plan (src/plan/) and prints; move the orchestration into a plan"
    );
}

#[test]
fn command_imports_are_read_as_the_check_reads_them() {
    let commands: BTreeSet<String> = ["npb", "run", "report", "lab"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let code = "use super::npb::NpbPlan;\nuse super::{report::x, context_for};\n\
                fn f() { crate::commands::lab::go(); super::run::y(); super::helper(); }\n\
                use super::*;\n#[cfg(test)]\nmod tests { use super::lab; }";
    let want: BTreeSet<String> = ["lab", "npb", "report"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // `run` is the file's own command; `context_for` and `helper` are no
    // command; the test module's `super::lab` is its own file's.
    assert_eq!(
        command_imports(&non_test_code(code), "run", 0, &commands),
        want
    );
    // One folder down, `super::` is the file's own command: only
    // `super::super::X` and `crate::commands::X` name a sibling.
    let nested = "use super::report::a;\nuse super::super::npb::b;\nuse crate::commands::lab;";
    let want: BTreeSet<String> = ["lab", "npb"].iter().map(|s| s.to_string()).collect();
    assert_eq!(command_imports(nested, "run", 1, &commands), want);
}
