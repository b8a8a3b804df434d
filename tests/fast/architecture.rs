//! The crate's modules form layers: a module imports only modules on a
//! lower line of ARCHITECTURE.md's layers table, which is this test's
//! input (so the drawing and the code cannot drift apart), and no module
//! imports, directly or through others, a module that imports it back.
//!
//! The module graph is built from the source as text: a module is a
//! directory `src/<m>/` or a file `src/<m>.rs` (`main` and `lib` are not
//! modules); module `a` depends on `b` when `a`'s non-test code names
//! `crate::b`, also as an item of a grouped import, nested or not (`use
//! crate::{b::{x, y}, c}` names `b` and `c`; `module_cycles.py`, the
//! project's shared checker, ends a group at its first `}` and would miss
//! `c`). Test code is left out: files named `tests.rs` or `*_tests.rs`,
//! everything after `#[cfg(test)] mod tests`, and comment lines. A
//! re-export counts like any other reference, so a `pub use` that points
//! up a layer is a dependency.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Module name -> the modules it names, each with the files that name it.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The module graph of the crate whose sources are under `src`.
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut graph = Graph::new();
    for path in files {
        let rel = path.strip_prefix(src).expect("under src");
        let first = rel
            .components()
            .next()
            .expect("a path")
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let top = first.strip_suffix(".rs").unwrap_or(&first).to_string();
        let name = path.file_name().expect("a file").to_string_lossy();
        if top == "main" || top == "lib" || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let raw = fs::read(&path).expect("readable source");
        let text = String::from_utf8_lossy(&raw);
        let deps = module_refs(&non_test_code(&text));
        let entry = graph.entry(top.clone()).or_default();
        for d in deps.into_iter().filter(|d| *d != top) {
            entry
                .entry(d)
                .or_default()
                .insert(rel.display().to_string());
        }
    }
    // Only edges to modules that exist (`crate::error` is one; a name that
    // is no module, such as a macro's, is not).
    let names: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d, _| names.contains(d));
    }
    graph
}

/// Every `.rs` file under `dir`.
pub(crate) fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text before the first `#[cfg(test)] mod tests`, without comment lines.
pub(crate) fn non_test_code(text: &str) -> String {
    let code = &text[..test_module_start(text).unwrap_or(text.len())];
    code.lines()
        .filter(|l| !l.trim().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `#[cfg(test)]`, blanks, `mod`, at least one blank, `tests` first occurs.
pub(crate) fn test_module_start(text: &str) -> Option<usize> {
    const ATTR: &str = "#[cfg(test)]";
    let mut from = 0;
    while let Some(i) = text[from..].find(ATTR).map(|i| i + from) {
        let rest = text[i + ATTR.len()..].trim_start();
        if let Some(after_mod) = rest.strip_prefix("mod") {
            let name = after_mod.trim_start();
            if name.len() < after_mod.len() && name.starts_with("tests") {
                return Some(i);
            }
        }
        from = i + ATTR.len();
    }
    None
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_lowercase() || c == b'_'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'
}

/// The length of the identifier (`[a-z_][a-z0-9_]*`) at the start of `s`.
pub(crate) fn ident_len(s: &[u8]) -> usize {
    match s.first() {
        Some(&c) if is_ident_start(c) => {
            1 + s[1..].iter().take_while(|&&c| is_ident_char(c)).count()
        }
        _ => 0,
    }
}

/// The modules named by `crate::m` and by `crate::{m::x, n::{y, z}, o}`
/// in `code`.
fn module_refs(code: &str) -> BTreeSet<String> {
    const CRATE: &str = "crate::";
    let bytes = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(CRATE).map(|i| i + from) {
        let at = i + CRATE.len();
        let n = ident_len(&bytes[at..]);
        if n > 0 {
            out.insert(code[at..at + n].to_string());
        } else if bytes.get(at) == Some(&b'{') {
            group_refs(&code[at + 1..], &mut out);
        }
        from = at;
    }
    out
}

/// The modules of a grouped import, given the text after its opening
/// brace: the first identifier of each of its own items (`b` of
/// `b::{x, y}`, `c` of `c`), up to its matching closing brace; the items
/// of nested groups are paths inside those modules, not modules.
pub(crate) fn group_refs(group: &str, out: &mut BTreeSet<String>) {
    let bytes = group.as_bytes();
    let (mut depth, mut item_start, mut i) = (0usize, true, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'}' if depth == 0 => return,
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b',' if depth == 0 => item_start = true,
            c if depth == 0 && item_start && !c.is_ascii_whitespace() => {
                item_start = false;
                let n = ident_len(&bytes[i..]);
                if n > 0 {
                    out.insert(group[i..i + n].to_string());
                    i += n;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The layers of ARCHITECTURE.md's table (the `text` block under "##
/// Layers"), bottom first: each line's modules, the names before the
/// first run of three blanks (the description follows it).
fn layers(doc: &str) -> Vec<Vec<String>> {
    let (_, section) = doc
        .split_once("## Layers")
        .expect("a \"## Layers\" section");
    let (_, block) = section.split_once("```text").expect("its ```text table");
    let (table, _) = block.split_once("```").expect("the table's closing fence");
    let mut out: Vec<Vec<String>> = table
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let names = l.split_once("   ").map_or(l, |(names, _)| names);
            names.split_whitespace().map(str::to_string).collect()
        })
        .collect();
    out.reverse();
    out
}

/// What is wrong with `graph` against the `layers` table: a module the
/// table leaves out, names twice or that is no module, and every import
/// of a module on the importer's own line or a higher one, with its files.
fn layer_violations(graph: &Graph, layers: &[Vec<String>]) -> Vec<String> {
    let mut level: BTreeMap<&str, usize> = BTreeMap::new();
    let mut found = Vec::new();
    for (k, line) in layers.iter().enumerate() {
        for m in line {
            if level.insert(m, k).is_some() {
                found.push(format!("{m}: in the table twice"));
            }
            if !graph.contains_key(m) {
                found.push(format!("{m}: in the table, but no module of src/"));
            }
        }
    }
    for (a, deps) in graph {
        let Some(&la) = level.get(a.as_str()) else {
            found.push(format!("{a}: a module the table leaves out"));
            continue;
        };
        for (b, files) in deps {
            if level.get(b.as_str()).is_some_and(|&lb| lb >= la) {
                let files: Vec<&str> = files.iter().map(String::as_str).collect();
                let at = if level[b.as_str()] == la {
                    "its own"
                } else {
                    "a higher"
                };
                found.push(format!("{a} -> {b} ({at} line): {}", files.join(" ")));
            }
        }
    }
    found
}

#[test]
fn no_module_imports_its_own_or_a_higher_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let graph = module_graph(&root.join("src"));
    let doc = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let table = layers(&doc);
    assert!(table.len() > 5, "too few layers read: {table:?}");
    let found = layer_violations(&graph, &table);
    assert!(
        found.is_empty(),
        "the code and ARCHITECTURE.md's layers table disagree (a module may import only \
         modules on lower lines): move the code, or fix the table and say why there:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_layers_table_is_read_and_checked() {
    let doc = "# A\n## Layers\n\n```text\n top  other     what is on top; more\n \
               mid                the middle\n base       the bottom\n```\n## Next\n```text\nx\n```";
    let table = layers(doc);
    assert_eq!(table, vec![vec!["base"], vec!["mid"], vec!["top", "other"]]);
    let mut g = Graph::new();
    for (a, b) in [
        ("top", "mid"),
        ("mid", "base"),
        ("base", "mid"),
        ("top", "other"),
    ] {
        let file = format!("{a}/x.rs");
        g.entry(a.into())
            .or_default()
            .entry(b.into())
            .or_default()
            .insert(file);
    }
    g.entry("gone".into()).or_default();
    assert_eq!(
        layer_violations(&g, &table),
        vec![
            "other: in the table, but no module of src/",
            "base -> mid (a higher line): base/x.rs",
            "gone: a module the table leaves out",
            "top -> other (its own line): top/x.rs",
        ]
    );
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph[v].keys() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().expect("on the stack");
                    self.on_stack.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(
        graph.len() > 10,
        "too few modules found under {}",
        src.display()
    );
    let found = cycles(&graph);
    let mut report = String::new();
    for comp in &found {
        report += &format!("cycle: {}\n", comp.join(", "));
        for a in comp {
            for (b, files) in &graph[a] {
                if comp.contains(b) {
                    let files: Vec<&str> = files.iter().map(String::as_str).collect();
                    report += &format!("  {a} -> {b}: {}\n", files.join(" "));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other (see ARCHITECTURE.md for the layers):\n{report}"
    );
}

#[test]
fn the_graph_reads_grouped_and_nested_imports() {
    let code =
        "use crate::a::x;\n// use crate::commented::x;\nuse crate::{b::y, c::{z, w}, d::v};\n\
                fn f() { crate::e(); crate::Upper; }\nuse crate::{f::{g::{h, i}, j}, k, Up};\n\
                #[cfg(test)]\nmod tests { use crate::t; }";
    let refs = module_refs(&non_test_code(code));
    // `d` and `k` follow a nested group's closing brace; `g`, `h`, `i`
    // and `j` are inside `f`, not modules.
    let want: BTreeSet<String> = ["a", "b", "c", "d", "e", "f", "k"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(refs, want);
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "d")] {
        g.entry(a.into()).or_default().entry(b.into()).or_default();
        g.entry(b.into()).or_default();
    }
    assert_eq!(
        cycles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}

/// Process-wide state the code may keep, by file and name, each for a
/// reason ARCHITECTURE.md gives ("No process globals"): the stop flag a
/// signal handler sets, caches of facts about the machine, MPI's own
/// per-process state, scratch buffers. Configuration is not among them: it
/// travels in the run context, the sweep spec or the channel options.
const ALLOWED_STATICS: &[(&str, &str)] = &[
    ("exec/mod.rs", "INTERRUPTED"), // the stop flag (Ctrl-C handler)
    ("lib.rs", "EXIT_ON_SIGNAL"),   // how that handler ends the process
    ("exec/process.rs", "PENDING_SIGNAL"), // a signal lab exec forwards
    ("exec/owned.rs", "REGISTRY"),  // what a command started, for its signal
    ("exec/owned.rs", "FIRST_SIGNAL"), // when the first signal came
    ("sweep/limits.rs", "TABLE"),   // limits measured on this machine
    ("sweep/placement.rs", "LAST"), // the CPUs' last busy reading (2 s)
    ("sys/schedstat.rs", "SCHED_FILE"), // each thread's own schedstat file
    ("transport/cma.rs", "PROBED"), // whether this kernel allows cma
    ("transport/cma_probe.rs", "WORD"), // the probe's target word
    ("transport/shm_region.rs", "COUNTER"), // unique region names
    ("transport/mpi/loader.rs", "API"), // the loaded adapter's symbols
    ("transport/mpi/ffi.rs", "INITIALISED"), // MPI_Init once per process
    ("transport/mpi/ffi.rs", "PROGRESS"), // MPI calls made (stall check)
    ("transport/mpi/endpoint.rs", "SLOT"), // the rank's one MPI handle
    ("transport/mpi/mod.rs", "WORKER"), // this process is an MPI job's rank
    ("transport/mpi/mod.rs", "ENTRIES"), // MPI installations found
    ("transport/pvm/library.rs", "API"), // libpvm3's symbols, loaded once
    ("transport/ucx/library.rs", "API"), // libucp's symbols, loaded once
    ("transport/ofi/library.rs", "API"), // libfabric's symbols, loaded once
    ("transport/pvm/mod.rs", "ENROLLED"), // PVM enrolls the whole process
    ("comm/mod.rs", "REDUCE_SCRATCH"), // a reduction's scratch buffer
    // serde's Deserialize takes no context: a matrix read lean keeps its
    // choice and the figures it streams out beside the decoder, per thread.
    ("result/matrix_read.rs", "LEAN"),
    ("result/matrix_read.rs", "FIGURES"),
];

/// The names of the `static` items (and thread-locals) in `code`.
fn static_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in code.lines() {
        let t = line.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let t = t.strip_prefix("pub(crate) ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("static ") else {
            continue;
        };
        let rest = rest.strip_prefix("mut ").unwrap_or(rest);
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            names.push(name);
        }
    }
    names
}

#[test]
fn no_process_globals_beyond_the_documented_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut unexpected = Vec::new();
    let mut set_var = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let code = non_test_code(&fs::read_to_string(&path).unwrap());
        for s in static_names(&code) {
            if !ALLOWED_STATICS.contains(&(rel.as_str(), s.as_str())) {
                unexpected.push(format!("{rel}: static {s}"));
            }
        }
        // libpvm finds its pvmd only through this process's environment
        // (PVMSOCK): the one documented exception.
        if code.contains("set_var(") && rel != "transport/pvm/mod.rs" {
            set_var.push(rel);
        }
    }
    assert!(
        unexpected.is_empty(),
        "process-wide state that is not documented in ARCHITECTURE.md (\"No process globals\"): \
         pass it in the run context, the spec or the options instead, or add it with its reason:\n{}",
        unexpected.join("\n")
    );
    assert!(
        set_var.is_empty(),
        "std::env::set_var outside tests (children get Command::env): {set_var:?}"
    );
}

#[test]
fn statics_are_found_as_the_check_reads_them() {
    let code =
        "pub static A: u8 = 0;\n    static B: Mutex<()> = Mutex::new(());\nstatic mut C: u8 = 0;\n\
                pub(crate) static D: u8 = 0;\nlet s = \"static\";\nfn static_x() {}";
    assert_eq!(static_names(code), vec!["A", "B", "C", "D"]);
}

/// What the pure layers may not import: the modules that measure, spawn
/// processes, discover MPIs or touch the network. The report is drawn from
/// result files alone (a report once made 36 MPI path probes through
/// `transport`), and `stats` and `analysis` are functions of their input.
const IMPURE: &[&str] = &[
    "transport",
    "launch",
    "cluster",
    "commands",
    "peer",
    "exec",
    "lab",
    "sweep",
    "measure",
    "tune",
    "collective",
];

#[test]
fn the_pure_layers_import_nothing_that_measures_or_spawns() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    let mut found = Vec::new();
    for pure in ["stats", "analysis", "report"] {
        let deps = graph.get(pure).expect("the module exists");
        for bad in IMPURE {
            if let Some(files) = deps.get(*bad) {
                found.push(format!("{pure} -> {bad}: {files:?}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "pure layers importing upward:\n{}",
        found.join("\n")
    );
}
