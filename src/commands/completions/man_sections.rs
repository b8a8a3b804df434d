//! The man page sections clap cannot write: EXAMPLES (per page), EXIT
//! STATUS, ENVIRONMENT and FILES (on every page, as docs/reference.md has
//! them). A test checks that every `WULF_*` variable the source reads or
//! sets is listed here.

/// Examples of one page: (command line, what it does).
type Examples = &'static [(&'static str, &'static str)];

/// The examples of the page `page` (`wulf`, `wulf-sweep`, `wulf-tune-tcp`).
fn examples(page: &str) -> Examples {
    match page {
        "wulf" => &[
            (
                "wulf run",
                "measure every transport on this machine, side by side",
            ),
            (
                "wulf sweep tcp --json r.json",
                "one transport's sweep, saved",
            ),
            (
                "wulf serve",
                "on node2: the peer of `wulf sweep tcp --peer node2`",
            ),
            (
                "wulf matrix --hosts 'node[01-16]'",
                "every pair of nodes, over ssh",
            ),
            ("wulf report r.json -o report.html", "draw results"),
        ],
        "wulf-sweep" => &[
            ("wulf sweep tcp", "local peer started for you"),
            (
                "wulf sweep tcp --peer node2 --json r.json",
                "against `wulf serve` on node2, saved",
            ),
            (
                "wulf sweep shm --wait block",
                "sleep on a futex: more processes than cores",
            ),
            ("wulf sweep 'mpi:openmpi(tcp)'", "Open MPI forced onto TCP"),
            (
                "wulf sweep raw --lab ge --integrity",
                "raw frames between two lab nodes",
            ),
        ],
        "wulf-serve" => &[
            (
                "wulf serve --secret-file /etc/wulf/serve.secret --allow 10.0.0.0/8",
                "clients must know the secret and come from 10.0.0.0/8",
            ),
            (
                "systemctl enable --now wulf-serve",
                "the packaged unit, once /etc/wulf/serve.secret exists",
            ),
        ],
        "wulf-run" => &[
            ("wulf run", "every transport here, NAS MG, a summary"),
            (
                "wulf run --lab fe",
                "what crosses an emulated Fast Ethernet link",
            ),
            (
                "wulf run --repeat 3 --only shm,tcp",
                "runs to compare at the run level",
            ),
        ],
        "wulf-matrix" => &[
            ("wulf matrix --hosts 'node[01-16]'", "agents started by ssh"),
            (
                "wulf matrix --hostfile hosts.txt --serial",
                "one pair at a time",
            ),
            (
                "wulf matrix --launch local --hosts 'sim[1-64]'",
                "64 simulated nodes on this machine",
            ),
        ],
        "wulf-report" => &[
            (
                "wulf report before.json after.json -o tuning.html",
                "overlay any results",
            ),
            (
                "wulf report r.json --format openmetrics",
                "figures for Prometheus' textfile collector",
            ),
        ],
        "wulf-compare" => &[
            ("wulf compare before.json after.json", "one run per side"),
            (
                "wulf compare base.json new.json --fail-if-slower 10",
                "exit 4 on a shown regression, 5 if too noisy to say",
            ),
        ],
        "wulf-tune-tcp" => &[
            (
                "wulf tune tcp --peer node2",
                "socket buffers, Nagle and MSS against node2",
            ),
            (
                "wulf tune tcp --peer node2 --offloads",
                "also the NIC's offloads (root; restored after)",
            ),
        ],
        "wulf-info" => &[
            ("wulf info", "this machine and every interface"),
            (
                "wulf info --peer node2",
                "only the interface on the route to node2",
            ),
        ],
        "wulf-lab-up" | "wulf-lab" => &[
            (
                "wulf lab up --nodes 4 --link ge",
                "four nodes on emulated Gigabit Ethernet",
            ),
            (
                "wulf lab exec node1 -- ping -c1 node4",
                "any command, inside a node",
            ),
            ("wulf lab down", "remove it"),
        ],
        "wulf-npb" | "wulf-npb-mg" => &[
            (
                "wulf npb mg --class W --np 1,2,4 --via shm,tcp,mpi:openmpi",
                "MG class W over three transports",
            ),
            (
                "wulf npb mg --lab fe --np 4",
                "one rank per node, 4 lab nodes",
            ),
        ],
        "wulf-collective" => &[
            (
                "wulf collective allreduce",
                "every MPI here and shm, 2 ranks",
            ),
            ("wulf collective barrier --np 2", "the barrier's latency"),
        ],
        "wulf-hpl" => &[("wulf hpl --np 2 --n 4000", "HPL here, 2 Open MPI processes")],
        "wulf-study" => &[(
            "wulf study fe-vs-ge",
            "tcp and each MPI's TCP path over fe and ge",
        )],
        "wulf-completions" => &[(
            "wulf completions bash > ~/.local/share/bash-completion/completions/wulf",
            "bash completion for one user",
        )],
        "wulf-manpages" => &[(
            "wulf manpages ~/.local/share/man/man1",
            "these pages, for one user",
        )],
        _ => &[],
    }
}

/// Exit statuses (docs/reference.md's table, shortened).
const EXIT_STATUS: Examples = &[
    ("0", "success"),
    ("1", "error: I/O, a failed integrity check, an unusable transport, a file that is not a wulf result"),
    ("2", "invalid command line or input, a port in use, missing privileges (a lab, `tune tcp --offloads` as a non-root user)"),
    ("3", "peer problem: unreachable, timed out, busy, refused (limits, secret, --allow), died mid-run; for matrix and npb, a node or rank lost"),
    ("4", "compare --fail-if-slower: a slowdown shown beyond the threshold"),
    ("5", "compare --fail-if-slower: too noisy to exclude one"),
    ("130", "interrupted (Ctrl-C, SIGTERM); what was measured is saved, marked incomplete"),
];

/// Every variable wulf reads or sets: (name, meaning).
pub const ENVIRONMENT: Examples = &[
    ("WULF_SECRET", "the shared secret of `wulf serve` and its clients when --secret-file is not given"),
    ("WULF_CACHE_DIR", "where MPI adapters compiled with each library's mpicc are cached (default $XDG_CACHE_HOME/wulf or ~/.cache/wulf); must be private"),
    ("WULF_SHM_SINGLE_COPY_MIN_BYTES", "in the peer's environment: the size from which shm switches from its ring to a single copy (default 8 KiB)"),
    ("WULF_LAB_DIR", "where labs keep their state (default /run/wulf/lab)"),
    ("WULF_REFRAME_REFERENCES", "read by the ReFrame checks in /usr/share/wulf/reframe, not by wulf: the references file to use"),
    ("WULF_AGENT_SECRET", "set by wulf: a cluster run's one-time secret, to each agent it starts"),
    ("WULF_EXIT_ON_STDIN_EOF", "set by wulf: an agent started through ssh exits when its stdin closes"),
    ("WULF_LAB, WULF_LAB_NODE", "set by wulf: the lab and node a process runs in"),
    ("WULF_EXE", "the executable MPI launchers start as a worker (default: the running one)"),
    ("WULF_LAUNCH_REPORT", "set by wulf: the file rank 0 of an MPI-launched matrix reports through"),
    ("WULF_NPB_FAULT", "a test hook corrupting one NAS value, to show verification failing; unset in normal use"),
    ("WULF_FRAME_FAULT", "a test hook: `flip-payload:N` corrupts raw frames from the Nth received on, to show `--integrity all` catching them; unset in normal use"),
    ("WULF_PPN", "set by wulf: the processes per node (--ppn) a matrix's agents started by srun are one of"),
    ("WULF_PHASES", "set to anything: each sweep prints on stderr how long each phase took (setup, limits, warm-up, points, confirmation, floor, close), to see where a budget went"),
];

/// Files wulf reads or writes.
const FILES: Examples = &[
    ("wulf-results/TIMESTAMP/", "`wulf run`'s results: one JSON file per transport, points.csv, report.html"),
    ("/etc/wulf/serve.secret", "the secret of the packaged wulf-serve unit (mode 0600)"),
    ("/usr/lib/systemd/system/wulf-serve.service", "the packaged unit of `wulf serve`, not enabled"),
    ("~/.cache/wulf/mpi", "compiled MPI adapters (WULF_CACHE_DIR)"),
    ("/run/wulf/lab/NAME/", "a lab's state until `wulf lab down` (WULF_LAB_DIR)"),
    ("/run/wulf/offloads/IFACE.json", "an interface's offloads before `tune tcp --offloads` changed them; the next run restores them"),
    (".wulf-matrix-JOB.json", "under srun or mpirun, rank 0's rendezvous file (mode 0600, removed at the end)"),
    ("/usr/share/wulf/reframe/", "ReFrame checks, a site configuration and references"),
];

/// Text for roff: backslashes and hyphens escaped (a plain `-` may be
/// typeset as a hyphen, breaking copied options), no line starting with
/// a control character.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// One tagged paragraph per entry, the tag in bold.
fn tagged(out: &mut String, entries: Examples) {
    for (tag, text) in entries {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(tag), roff(text)));
    }
}

/// The sections appended to the page `page` (its name without `.1`).
pub fn render(page: &str) -> String {
    let mut out = String::new();
    let examples = examples(page);
    if !examples.is_empty() {
        out.push_str(".SH EXAMPLES\n");
        tagged(&mut out, examples);
    }
    out.push_str(".SH \"EXIT STATUS\"\n");
    tagged(&mut out, EXIT_STATUS);
    out.push_str(".SH ENVIRONMENT\n");
    tagged(&mut out, ENVIRONMENT);
    out.push_str(".SH FILES\n");
    tagged(&mut out, FILES);
    out.push_str(".SH \"SEE ALSO\"\n");
    out.push_str(&roff("The reference of exit codes, variables and files: /usr/share/doc/wulf/README.md, docs/reference.md in the source."));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyphens_and_leading_dots_are_escaped() {
        assert_eq!(roff("--json a.json"), "\\-\\-json a.json");
        assert_eq!(roff(".wulf"), "\\&.wulf");
        assert_eq!(roff("a\\b"), "a\\eb");
    }

    #[test]
    fn every_page_has_the_reference_sections() {
        for page in ["wulf", "wulf-sweep", "wulf-lab-status"] {
            let text = render(page);
            for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH FILES"] {
                assert!(text.contains(section), "{page}: no {section}");
            }
        }
        assert!(render("wulf-sweep").contains(".SH EXAMPLES"));
        assert!(render("wulf").contains("WULF_SECRET"));
    }
}
