//! "Machines and command lines": every machine the results ran on,
//! described once, whatever kind of result (sweep, NPB, matrix) names it.
//!
//! A machine is a running kernel: two hosts with one boot id are one
//! machine (namespaces, containers, MPI ranks bound to different cores),
//! whatever their host names, interfaces or CPU bindings say. A 3-rank run
//! on one box once showed three blocks, M1 to M3, all with one boot id, one
//! of them "1 logical CPUs" (a rank counted its binding, issue 49). Hosts
//! without a boot id (older files) are one machine when their descriptions
//! agree. What differs between the views of one machine (its name in a
//! namespace, an interface, the sysctls of a namespace) is listed under its
//! block, said of the results that saw it so.

use std::fmt::Write;

use super::details::{esc, shell_line};
use crate::result::matrix::MatrixFigures;
use crate::sys::{Host, BOUND_KEY};

/// The machines of a report, in first-seen order.
#[derive(Default)]
pub(super) struct Book {
    machines: Vec<Machine>,
}

/// One machine: how each result saw it (view 0 is the first).
struct Machine {
    key: String,
    views: Vec<View>,
}

/// One description of a machine and the results (role, name) that gave it.
struct View {
    text: String,
    users: Vec<(String, String)>,
}

impl Book {
    /// Record that result `name` ran its `role` on `host`; returns the
    /// machine's index (0 for M1).
    pub(super) fn note(&mut self, host: &Host, role: &str, name: &str) -> usize {
        let text = machine_text(host);
        let key = match &host.boot_id {
            Some(id) => format!("boot {id}"),
            None => format!("text {text}"),
        };
        let i = match self.machines.iter().position(|m| m.key == key) {
            Some(i) => i,
            None => {
                self.machines.push(Machine {
                    key,
                    views: Vec::new(),
                });
                self.machines.len() - 1
            }
        };
        let views = &mut self.machines[i].views;
        match views.iter_mut().find(|v| v.text == text) {
            Some(v) => v.users.push((role.into(), name.into())),
            None => views.push(View {
                text,
                users: vec![(role.into(), name.into())],
            }),
        }
        i
    }

    /// One folded block per machine (the first open): M1 in full, the
    /// others by what differs from M1, and under each the other views of it.
    /// `results` is how many results the report has, so that a machine all
    /// of them ran on says so rather than listing them.
    pub(super) fn write(&self, h: &mut String, results: usize) {
        let first: Vec<&str> = self
            .machines
            .first()
            .map(|m| m.views[0].text.lines().collect())
            .unwrap_or_default();
        for (i, m) in self.machines.iter().enumerate() {
            let (class, mut shown) = if i == 0 {
                ("machine", m.views[0].text.clone())
            } else {
                let differs = differing(&m.views[0].text, &first);
                ("machine-diff", format!("as M1, except:\n{differs}"))
            };
            let own: Vec<&str> = m.views[0].text.lines().collect();
            for v in &m.views[1..] {
                let _ = write!(
                    shown,
                    "\n\nas {} saw it, except:\n{}",
                    names_of(&v.users),
                    differing(&v.text, &own)
                );
            }
            let users: Vec<&(String, String)> = m.views.iter().flat_map(|v| &v.users).collect();
            let _ = writeln!(
                h,
                "<details{}><summary><b>Machine M{}</b> &middot; {}</summary><pre class={class}>{}</pre></details>",
                if i == 0 { " open" } else { "" },
                i + 1,
                esc(&whose(&users, results)),
                esc(&shown)
            );
        }
    }
}

/// Note each matrix's nodes in `book` (the nodes whose agents read a
/// fingerprint); returns, per matrix, each node's "NODE on M1".
pub(super) fn note_matrices(book: &mut Book, matrices: &[MatrixFigures]) -> Vec<Vec<String>> {
    matrices
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let role = format!("nodes of link matrix {}", i + 1);
            m.nodes
                .iter()
                .map(|n| match &n.host {
                    Some(host) => {
                        let at = book.note(host, &role, &n.name);
                        format!("{} on {}", n.name, machine_label(at, None))
                    }
                    None => format!("{} (no fingerprint)", n.name),
                })
                .collect()
        })
        .collect()
}

/// Each matrix's entry under "Machines and command lines": its command
/// line, how its agents were started, and which machine each node is.
pub(super) fn matrix_details(h: &mut String, matrices: &[MatrixFigures], on: &[Vec<String>]) {
    for (i, (m, nodes)) in matrices.iter().zip(on).enumerate() {
        let _ = writeln!(
            h,
            "<details><summary><b>Link matrix {}</b> &middot; {} nodes by {} &middot; started {} &middot; {:.1} s</summary>",
            i + 1,
            m.nodes.len(),
            esc(&m.launch),
            esc(&m.started_at),
            m.wall_s
        );
        let _ = writeln!(
            h,
            "<p><b>Command line</b></p><pre class=cmd>{}</pre>\n<p><b>Nodes</b>: {}</p>\n</details>",
            esc(&shell_line(&m.command_line)),
            esc(&nodes.join(", "))
        );
    }
}

/// "M1", or "M1 to M2" for a result whose two ends are different machines.
pub(super) fn machine_label(a: usize, b: Option<usize>) -> String {
    match b {
        Some(b) if b != a => format!("M{} to M{}", a + 1, b + 1),
        _ => format!("M{}", a + 1),
    }
}

/// The lines of `text` that `base` lacks.
fn differing(text: &str, base: &[&str]) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !base.contains(l)).collect();
    if lines.is_empty() {
        "(nothing)".into()
    } else {
        lines.join("\n")
    }
}

/// The distinct names of `users`, in first-seen order.
fn distinct<'u>(users: impl IntoIterator<Item = &'u (String, String)>) -> Vec<&'u str> {
    let mut names: Vec<&str> = Vec::new();
    for (_, n) in users {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    names
}

/// The results' names, each once.
fn names_of(users: &[(String, String)]) -> String {
    distinct(users).join(", ")
}

/// Who ran on a machine, by role: "every result's measuring end (A)" when
/// all did, else "measuring end (A): a, b; peer (B): c".
fn whose(users: &[&(String, String)], results: usize) -> String {
    let mut roles: Vec<&str> = Vec::new();
    for (r, _) in users.iter().copied() {
        if !roles.contains(&r.as_str()) {
            roles.push(r);
        }
    }
    roles
        .iter()
        .map(|role| {
            let names = distinct(users.iter().copied().filter(|(r, _)| r == role));
            if results > 1 && names.len() == results {
                format!("every result's {role}")
            } else {
                format!("{role}: {}", names.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A machine's description without what belongs to one run or one
/// process (the load, the process's CPU binding), so that the results of
/// one machine share one block.
pub(super) fn machine_text(host: &Host) -> String {
    host.describe_text()
        .lines()
        .filter(|l| !l.starts_with(LOAD_KEY) && !l.starts_with(BOUND_KEY))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a machine's description says of one run and its process: the
/// load and the binding, without their keys, joined by "; ".
pub(super) fn run_lines(host: &Host) -> Option<String> {
    let lines: Vec<String> = host
        .describe_text()
        .lines()
        .filter_map(|l| {
            if let Some(load) = l.strip_prefix(LOAD_KEY) {
                Some(format!("load {}", load.trim()))
            } else {
                l.strip_prefix(BOUND_KEY).map(|b| b.trim().to_string())
            }
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// How the load line of [`Host::describe_text`] starts.
const LOAD_KEY: &str = "load ";

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, boot: Option<&str>, cpus: usize, bound: usize) -> Host {
        let mut h = Host::probe();
        h.hostname = name.into();
        h.boot_id = boot.map(str::to_string);
        h.cpus = cpus;
        h.bound_cpus = Some(bound);
        h.interfaces.clear();
        h
    }

    /// Three ranks of one box (one boot id), one bound to a core, and a
    /// namespace with another host name: one machine, its other view
    /// listed under it; another boot id is another machine.
    #[test]
    fn one_block_per_boot_id_with_the_other_views_under_it() {
        let mut book = Book::default();
        let a = host("box", Some("b1"), 2, 2);
        let bound = host("box", Some("b1"), 2, 1);
        let ns = host("node2", Some("b1"), 2, 2);
        let other = host("far", Some("b2"), 4, 4);
        let m: Vec<usize> = [
            book.note(&a, "rank", "r0"),
            book.note(&bound, "rank", "r1"),
            book.note(&ns, "rank", "r2"),
            book.note(&other, "rank", "r3"),
        ]
        .to_vec();
        assert_eq!(m, [0, 0, 0, 1]);
        let mut h = String::new();
        book.write(&mut h, 4);
        assert_eq!(h.matches("<b>Machine M").count(), 2, "{h}");
        assert!(h.contains("rank: r0, r1, r2"), "{h}");
        assert!(
            h.contains("as r2 saw it, except:\nhost         node2"),
            "{h}"
        );
        // The binding is the process's: not in the machine's block.
        assert!(!h.contains("may run on"), "{h}");
        assert!(run_lines(&bound)
            .unwrap()
            .contains("may run on 1 of the 2 CPUs"));
        assert!(!run_lines(&a).unwrap().contains("may run on"));
    }

    /// Files without boot ids: one machine when the descriptions agree.
    #[test]
    fn without_boot_ids_the_description_decides() {
        let mut book = Book::default();
        let a = host("x", None, 2, 2);
        let b = host("y", None, 2, 2);
        assert_eq!(book.note(&a, "r", "1"), 0);
        assert_eq!(book.note(&a, "r", "2"), 0);
        assert_eq!(book.note(&b, "r", "3"), 1);
        assert_eq!(machine_label(0, Some(0)), "M1");
        assert_eq!(machine_label(0, Some(1)), "M1 to M2");
    }
}
