//! `linpack` (Innocente et al. 2000: ScaLAPACK/Linpack on 4 nodes over Fast Ethernet,
//! Gigabit and Myrinet): the real HPL (`wulf hpl`, HPC Challenge on Open
//! MPI) at 1, 2 and 4 lab nodes over fe, ge and 10ge links, one process
//! per node, N fixed per effort so that the node counts and links solve
//! the same problem. Pure: the plan; `wulf study linpack` runs each case
//! as an ordinary `wulf hpl --lab` and the report reads the HPL files.
//!
//! The lab's nodes share this machine's CPUs: with more nodes than CPUs
//! they take turns, so the rates compare links at a node count, not the
//! node counts' scaling (the README says so beside the table).

use super::Effort;

/// The links compared, slowest first (Innocente et al. 2000's Fast Ethernet, then
/// Gigabit; 10ge stands in for the faster interconnect).
pub const LINKS: [&str; 3] = ["fe", "ge", "10ge"];

/// Node counts: Innocente et al. 2000 ran 4 nodes; 1 is the interconnect-free base.
pub const NODES: [usize; 3] = [1, 2, 4];

/// HPL's block size for every case.
pub const NB: usize = 80;

/// One `wulf hpl` run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinpackCase {
    /// `fe-2n`: link and node count (also the file name's stem).
    pub label: String,
    /// The lab's link.
    pub link: String,
    /// Nodes, one MPI process each.
    pub nodes: usize,
    /// HPL's problem size.
    pub n: usize,
    /// HPL's block size.
    pub nb: usize,
}

impl LinpackCase {
    /// `wulf hpl`'s arguments for this case, its result written to `json`.
    pub fn hpl_args(&self, json: &str) -> Vec<String> {
        vec![
            "hpl".into(),
            "--lab".into(),
            self.link.clone(),
            "--np".into(),
            self.nodes.to_string(),
            "--n".into(),
            self.n.to_string(),
            "--nb".into(),
            self.nb.to_string(),
            "--json".into(),
            json.into(),
        ]
    }
}

/// HPL's N for an effort: large enough that the solve, not the start,
/// dominates at 4 nodes; small enough for a 2-CPU machine's minutes.
pub fn problem_size(effort: Effort) -> usize {
    match effort {
        Effort::Quick => 1200,
        Effort::Default => 2400,
        Effort::Thorough => 4800,
    }
}

/// The cases: every link (or only `links` when given) at every node
/// count, links outermost.
pub fn plan(links: &[String], effort: Effort) -> Vec<LinpackCase> {
    let n = problem_size(effort);
    let mut v = Vec::new();
    for link in links {
        for &nodes in &NODES {
            v.push(LinpackCase {
                label: format!("{}-{nodes}n", super::file_safe(link)),
                link: link.clone(),
                nodes,
                n,
                nb: NB,
            });
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_link_runs_at_one_two_and_four_nodes_with_one_problem() {
        let links: Vec<String> = LINKS.iter().map(|s| s.to_string()).collect();
        let p = plan(&links, Effort::Quick);
        assert_eq!(p.len(), 9);
        assert_eq!(p[0].label, "fe-1n");
        assert_eq!(p[8].label, "10ge-4n");
        assert!(p.iter().all(|c| c.n == 1200 && c.n % c.nb == 0));
        assert_eq!(
            p[4].hpl_args("x.json").join(" "),
            "hpl --lab ge --np 2 --n 1200 --nb 80 --json x.json"
        );
        assert!(problem_size(Effort::Thorough) > problem_size(Effort::Default));
    }
}
