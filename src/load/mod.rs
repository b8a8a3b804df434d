//! Conditions of a measurement: the whole CPU cost of communication
//! ([`kernel`], the kernel's accounting, or [`soaker`], cyclesoak's
//! method; [`whole`] puts them together) and controlled background load
//! (`--load cpu[:N],memory[:N],network[:RATE]`).
//!
//! Every load runs on threads of this process, started before the
//! measurement and stopped (and joined) when its [`Loads`] guard is
//! dropped: on success, on error and after Ctrl-C alike, so no thread or
//! process outlives the run. What each load achieved (iterations or bytes
//! per second) is read when it stops and recorded in the result.

mod cpu;
pub mod kernel;
mod memory;
mod network;
pub mod peer;
pub mod perturb;
pub mod soaker;
pub mod whole;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One kind of background load, as given to `--load`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadSpec {
    /// Busy threads at normal priority (default: one per CPU).
    Cpu { threads: Option<usize> },
    /// Threads streaming through buffers larger than the last-level cache.
    Memory { threads: Option<usize> },
    /// A competing TCP stream (to the peer's sink, else on loopback), at
    /// most `rate_bits_per_s`.
    Network { rate_bits_per_s: Option<u64> },
}

/// `specs` as `--load` text, which [`parse_loads`] reads back (how a
/// peer is told which loads to run).
pub fn spec_text(specs: &[LoadSpec]) -> String {
    let item = |kind: &str, n: Option<String>| match n {
        Some(n) => format!("{kind}:{n}"),
        None => kind.to_string(),
    };
    specs
        .iter()
        .map(|s| match *s {
            LoadSpec::Cpu { threads } => item("cpu", threads.map(|n| n.to_string())),
            LoadSpec::Memory { threads } => item("memory", threads.map(|n| n.to_string())),
            LoadSpec::Network { rate_bits_per_s } => {
                item("network", rate_bits_per_s.map(|r| r.to_string()))
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Most threads one load kind may start (a typo such as cpu:1000 is an
/// error, not a frozen machine).
pub const MAX_LOAD_THREADS: usize = 256;

/// Parse `cpu[:N],memory[:N],network[:RATE]` (RATE in bit/s, SI units:
/// 100M, 1G). Each kind at most once.
pub fn parse_loads(text: &str) -> Result<Vec<LoadSpec>, String> {
    let mut out: Vec<LoadSpec> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (kind, arg) = match item.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (item, None),
        };
        let threads = |a: Option<&str>| -> Result<Option<usize>, String> {
            match a {
                None => Ok(None),
                Some(a) => match a.parse::<usize>() {
                    Ok(n) if (1..=MAX_LOAD_THREADS).contains(&n) => Ok(Some(n)),
                    _ => Err(format!(
                        "'{item}': the thread count must be 1 to {MAX_LOAD_THREADS}"
                    )),
                },
            }
        };
        let spec = match kind {
            "cpu" => LoadSpec::Cpu {
                threads: threads(arg)?,
            },
            "memory" | "mem" => LoadSpec::Memory {
                threads: threads(arg)?,
            },
            "network" | "net" => LoadSpec::Network {
                rate_bits_per_s: match arg {
                    None => None,
                    Some(a) => match crate::units::parse_bytes(a) {
                        Ok(r) if r > 0 => Some(r),
                        _ => {
                            return Err(format!(
                                "'{item}': the rate is in bit/s with SI units (100M, 1G), above 0"
                            ))
                        }
                    },
                },
            },
            other => {
                return Err(format!(
                    "unknown load '{other}' (known: cpu[:N], memory[:N], network[:RATE])"
                ))
            }
        };
        if out
            .iter()
            .any(|s| std::mem::discriminant(s) == std::mem::discriminant(&spec))
        {
            return Err(format!("'{kind}' is given twice"));
        }
        out.push(spec);
    }
    if out.is_empty() {
        return Err("no load given (cpu[:N], memory[:N], network[:RATE])".into());
    }
    Ok(out)
}

/// What one load was and what it achieved (recorded in results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadRecord {
    /// `cpu`, `memory` or `network`.
    pub kind: String,
    /// Threads it ran.
    pub threads: usize,
    /// Where they ran: the CPU each thread was pinned to, `null` when not
    /// pinned.
    pub cpus: Vec<Option<usize>>,
    /// Memory load: bytes of the buffer each thread streams through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u64>,
    /// Network load: the rate asked for, bit/s (`null`: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_bits_per_s: Option<u64>,
    /// Network load: where the stream ran (`loopback tcp ADDR`; `to peer
    /// ADDR`: the peer's sink, across the measured path; `lab link NODE ->
    /// NODE (to ADDR)`: between two lab nodes holding ranks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How long it ran, seconds.
    pub ran_s: f64,
    /// CPU load: loop iterations per second, all threads together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_per_s: Option<f64>,
    /// Memory load: bytes read and written per second; network load:
    /// payload bytes received per second (to a peer: sent, as the
    /// receiver is the peer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<f64>,
}

/// Where `--load network` sends its stream instead of loopback: a
/// connected stream into the peer's sink (`peer::sink`), opened by the
/// layer that knows the peer.
pub struct NetworkTarget {
    /// The connected stream the load writes into.
    pub stream: std::net::TcpStream,
    /// What the record's `path` says (`to peer 198.18.1.2:PORT`).
    pub path: String,
    /// What must live as long as the stream (the sink's session), dropped
    /// after the stream is shut down.
    pub keep: Box<dyn Send>,
}

/// Threads of one load: a stop flag, a progress counter, the handles.
pub(crate) struct Workers {
    stop: Arc<AtomicBool>,
    count: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
    started: Instant,
}

impl Workers {
    fn new() -> Workers {
        Workers {
            stop: Arc::new(AtomicBool::new(false)),
            count: Arc::new(AtomicU64::new(0)),
            threads: Vec::new(),
            started: Instant::now(),
        }
    }

    /// Spawn a worker running `f(stop, count)`.
    fn spawn(
        &mut self,
        name: String,
        f: impl FnOnce(&AtomicBool, &AtomicU64) + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop, count) = (self.stop.clone(), self.count.clone());
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || f(&stop, &count))?;
        self.threads.push(h);
        Ok(())
    }

    /// Stop and join every thread; the count and the seconds run.
    fn finish(&mut self) -> (u64, f64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        (
            self.count.load(Ordering::Relaxed),
            self.started.elapsed().as_secs_f64(),
        )
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.finish();
    }
}

/// One running load.
struct Running {
    spec: LoadSpec,
    record: LoadRecord,
    workers: Workers,
}

/// Running background loads; stopped and joined on drop (always).
pub struct Loads {
    running: Vec<Running>,
    warnings: Vec<String>,
}

/// Where load threads go: the CPUs the measured ends do not use first,
/// then (only when a load asks for more threads than there are free CPUs)
/// the ends' own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// CPUs in the order threads are placed on them, round-robin.
    pub order: Vec<usize>,
    /// How many CPUs at the start of `order` the ends do not use.
    pub free: usize,
}

impl Placement {
    /// Every CPU of this machine, those in `ends` last.
    pub fn avoiding(ends: &[usize]) -> Placement {
        Placement::of((0..crate::sys::cpu_count()).collect(), ends)
    }

    /// `cpus`, those in `ends` last.
    pub fn of(cpus: Vec<usize>, ends: &[usize]) -> Placement {
        let (mut order, taken): (Vec<usize>, Vec<usize>) =
            cpus.into_iter().partition(|c| !ends.contains(c));
        let free = order.len();
        order.extend(taken);
        Placement { order, free }
    }

    /// Threads of a load that gives no count: one per free CPU, or one per
    /// CPU when none is free (they then share the ends' CPUs, with a warning).
    pub fn default_threads(&self) -> usize {
        if self.free > 0 {
            self.free
        } else {
            self.order.len().max(1)
        }
    }

    /// The CPU of thread `i`.
    pub fn cpu_of(&self, i: usize) -> usize {
        self.order
            .get(i % self.order.len().max(1))
            .copied()
            .unwrap_or(0)
    }

    /// Whether thread `i` lands on a CPU of the measured ends.
    pub fn on_an_end(&self, i: usize) -> bool {
        self.order.len() > self.free && i % self.order.len().max(1) >= self.free
    }
}

impl Loads {
    /// Start every load in `specs`, placed anywhere. A load that cannot
    /// start stops those already started (the guard drops) and is an error.
    pub fn start(specs: &[LoadSpec]) -> anyhow::Result<Loads> {
        Loads::start_placed(specs, &Placement::avoiding(&[]))
    }

    /// Start every load in `specs`, its threads on the CPUs of `placement`
    /// (the measured ends' CPUs last); a warning for each load whose threads
    /// had to share the ends' CPUs.
    pub fn start_placed(specs: &[LoadSpec], placement: &Placement) -> anyhow::Result<Loads> {
        Loads::start_with(specs, placement, None)
    }

    /// [`Loads::start_placed`], the network load's stream into `target`
    /// when given (the peer's sink) instead of loopback.
    pub fn start_with(
        specs: &[LoadSpec],
        placement: &Placement,
        mut target: Option<NetworkTarget>,
    ) -> anyhow::Result<Loads> {
        let mut loads = Loads {
            running: Vec::new(),
            warnings: Vec::new(),
        };
        for &spec in specs {
            let (workers, record) = match spec {
                LoadSpec::Cpu { threads } => {
                    cpu::start(threads.unwrap_or(placement.default_threads()), placement)?
                }
                LoadSpec::Memory { threads } => {
                    memory::start(threads.unwrap_or(placement.default_threads()), placement)?
                }
                LoadSpec::Network { rate_bits_per_s } => {
                    network::start(rate_bits_per_s, target.take())?
                }
            };
            // Network loads are not pinned: only pinned threads are placed.
            let pinned = record.cpus.iter().any(Option::is_some);
            let shared: Vec<String> = (0..record.threads)
                .filter(|&i| pinned && placement.on_an_end(i))
                .map(|i| placement.cpu_of(i).to_string())
                .collect();
            if !shared.is_empty() {
                loads.warnings.push(format!(
                    "load: {} x{} has {} thread(s) on the measured ends' CPUs ({}): {} of {} CPUs \
                     are free of the ends, so the load competes with the measurement for its CPUs \
                     as well as for the machine",
                    record.kind,
                    record.threads,
                    shared.len(),
                    shared.join(","),
                    placement.free,
                    placement.order.len()
                ));
            }
            loads.running.push(Running {
                spec,
                record,
                workers,
            });
        }
        Ok(loads)
    }

    /// What a result should say about where the loads ran.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Stop every load and say what each achieved.
    pub fn stop(mut self) -> Vec<LoadRecord> {
        self.finish()
    }

    /// What each load achieved so far (they keep running).
    pub fn records(&self) -> Vec<LoadRecord> {
        self.running
            .iter()
            .map(|r| {
                let count = r.workers.count.load(Ordering::Relaxed);
                achieved(r, count, r.workers.started.elapsed().as_secs_f64())
            })
            .collect()
    }

    fn finish(&mut self) -> Vec<LoadRecord> {
        self.running
            .drain(..)
            .map(|mut r| {
                let (count, secs) = r.workers.finish();
                achieved(&r, count, secs)
            })
            .collect()
    }

    /// A line per load for the terminal.
    pub fn describe(records: &[LoadRecord]) -> String {
        records
            .iter()
            .map(|r| {
                let what = match (r.iterations_per_s, r.bytes_per_s) {
                    (Some(i), _) => format!("{:.3e} iterations/s", i),
                    (_, Some(b)) => format!("{:.1} MB/s", b / 1e6),
                    _ => String::new(),
                };
                let cpus: Vec<String> = r
                    .cpus
                    .iter()
                    .map(|c| c.map_or("-".to_string(), |c| c.to_string()))
                    .collect();
                format!(
                    "load: {} x{} on cpus {} for {:.1} s: {what}\n",
                    r.kind,
                    r.threads,
                    cpus.join(","),
                    r.ran_s
                )
            })
            .collect()
    }
}

impl Drop for Loads {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The record of `r` after `count` units of work in `secs`.
fn achieved(r: &Running, count: u64, secs: f64) -> LoadRecord {
    let mut rec = r.record.clone();
    let rate = count as f64 / secs.max(1e-9);
    rec.ran_s = secs;
    match r.spec {
        LoadSpec::Cpu { .. } => rec.iterations_per_s = Some(rate),
        LoadSpec::Memory { .. } | LoadSpec::Network { .. } => rec.bytes_per_s = Some(rate),
    }
    rec
}

/// The loads of several runs of one plan under the same `--load` (the
/// loaded halves of `--loaded-vs-unloaded`, merged into one result): per
/// kind, the seconds summed and the rates weighted by them, so that
/// rate x seconds is all the work done (for a network load, every byte
/// sent); the latest record's other fields (a sink's port changes with
/// each run).
pub fn merge_records(earlier: Vec<LoadRecord>, later: Vec<LoadRecord>) -> Vec<LoadRecord> {
    let mut out = later;
    for e in earlier {
        let Some(l) = out.iter_mut().find(|l| l.kind == e.kind) else {
            out.push(e);
            continue;
        };
        let ran_s = e.ran_s + l.ran_s;
        let weigh = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if ran_s > 0.0 => Some((a * e.ran_s + b * l.ran_s) / ran_s),
            (a, b) => b.or(a),
        };
        l.iterations_per_s = weigh(e.iterations_per_s, l.iterations_per_s);
        l.bytes_per_s = weigh(e.bytes_per_s, l.bytes_per_s);
        l.ran_s = ran_s;
    }
    out
}

/// The statement a result needs when `--load network` ran on loopback
/// although the measurement spans several machines (MPI or NAS ranks
/// spread by `--hosts` over ssh, Slurm or an MPI launcher, where wulf
/// starts no sink; in a lab the load crosses the ranks' links instead):
/// the stream then crosses none of the measured links (issue 30, item 3). None when no
/// network load ran on loopback or the measurement stays on this machine.
pub fn network_path_note(records: &[LoadRecord], spans_nodes: bool) -> Option<String> {
    let on_loopback = records.iter().any(|r| {
        r.kind == "network" && r.path.as_deref().is_some_and(|p| p.starts_with("loopback"))
    });
    (on_loopback && spans_nodes).then(|| {
        "load: --load network ran on this machine's loopback, not across the measured path: the \
         ranks run on several nodes and the stream crosses none of the links between them, so it \
         loads this node's kernel network stack (and softirq work) only; a load across the path \
         needs a wulf serve peer (`wulf sweep --peer HOST`) or ranks in lab nodes including the \
         one the command runs in (`--lab`, `--launch lab`): wulf starts no sink on hosts reached \
         by ssh, Slurm or an MPI launcher"
            .to_string()
    })
}

/// A record with the achieved figures still empty.
fn record(kind: &str, cpus: Vec<Option<usize>>) -> LoadRecord {
    LoadRecord {
        kind: kind.into(),
        threads: cpus.len(),
        cpus,
        buffer_bytes: None,
        rate_limit_bits_per_s: None,
        path: None,
        ran_s: 0.0,
        iterations_per_s: None,
        bytes_per_s: None,
    }
}

#[cfg(test)]
mod placement_tests {
    use super::Placement;

    #[test]
    fn loads_go_to_the_cpus_the_ends_leave_free_and_onto_theirs_only_when_asked() {
        let p = Placement::of((0..4).collect(), &[0, 1]);
        assert_eq!(p.order, [2, 3, 0, 1]);
        assert_eq!(p.default_threads(), 2);
        assert_eq!((p.cpu_of(0), p.cpu_of(1), p.cpu_of(2)), (2, 3, 0));
        assert!(!p.on_an_end(1) && p.on_an_end(2) && !p.on_an_end(4));
        // Two CPUs, both measured: one thread per CPU, on the ends.
        let full = Placement::of(vec![0, 1], &[0, 1]);
        assert_eq!((full.free, full.default_threads()), (0, 2));
        assert!(full.on_an_end(0));
        // Nothing to avoid: nothing is ever on an end.
        let any = Placement::of(vec![0, 1], &[]);
        assert!(!any.on_an_end(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_network_load_is_stated_only_where_the_ranks_span_nodes() {
        let mut net = record("network", vec![None, None]);
        net.path = Some("loopback tcp 127.0.0.1:4000".into());
        let cpu = record("cpu", vec![Some(1)]);
        let both = [cpu.clone(), net.clone()];
        assert!(network_path_note(&both, true).unwrap().contains("loopback"));
        assert_eq!(network_path_note(&both, false), None);
        assert_eq!(network_path_note(&[cpu], true), None);
        net.path = Some("to peer 198.18.1.2:5000".into());
        assert_eq!(network_path_note(&[net], true), None);
    }

    #[test]
    fn merged_records_keep_all_the_work_done() {
        let net = |ran_s: f64, rate: f64, port: u16| LoadRecord {
            ran_s,
            bytes_per_s: Some(rate),
            path: Some(format!("to peer 198.18.0.2:{port}")),
            ..record("network", vec![None])
        };
        let cpu = LoadRecord {
            ran_s: 2.0,
            iterations_per_s: Some(10.0),
            ..record("cpu", vec![Some(1)])
        };
        let merged = merge_records(
            vec![net(2.0, 100.0, 1), cpu.clone()],
            vec![net(3.0, 50.0, 2)],
        );
        assert_eq!(merged.len(), 2);
        let n = &merged[0];
        assert_eq!(n.ran_s, 5.0);
        // 200 + 150 bytes over 5 s.
        assert!((n.bytes_per_s.unwrap() * n.ran_s - 350.0).abs() < 1e-9);
        assert_eq!(n.path.as_deref(), Some("to peer 198.18.0.2:2"));
        assert_eq!(merged[1], cpu);
        assert_eq!(merge_records(Vec::new(), vec![cpu.clone()]), vec![cpu]);
    }

    #[test]
    fn spec_text_reads_back() {
        for text in ["cpu:2,memory,network:100000000", "cpu", "memory:3,network"] {
            let specs = parse_loads(text).unwrap();
            assert_eq!(spec_text(&specs), text);
            assert_eq!(parse_loads(&spec_text(&specs)).unwrap(), specs);
        }
    }

    #[test]
    fn parses_combined_loads_and_refuses_bad_ones() {
        let l = parse_loads("cpu:2,memory,network:100M").unwrap();
        assert_eq!(
            l,
            vec![
                LoadSpec::Cpu { threads: Some(2) },
                LoadSpec::Memory { threads: None },
                LoadSpec::Network {
                    rate_bits_per_s: Some(100_000_000)
                }
            ]
        );
        for bad in [
            "",
            "gpu",
            "cpu:0",
            "cpu:x",
            "cpu,cpu:2",
            "network:0",
            "cpu:100000",
        ] {
            assert!(parse_loads(bad).is_err(), "{bad}");
        }
    }
}
