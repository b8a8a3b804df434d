//! Baseline `memcpy`: copy bandwidth against size in one process, the limit
//! of every transport that copies (and the memory-hierarchy curve of the
//! machine, with its L1, L2, L3 and DRAM plateaus).
//!
//! One operation is one copy of `bytes` from a source buffer to a
//! destination buffer with the C library's memcpy (what transports use),
//! so the result is a `stream` sweep: time per copy and
//! `bits_per_s = bytes * 8 / time`. Cache-hot by default (the same two
//! buffers every time); with `--nocache` both rotate through pools larger
//! than twice the last-level cache, so every copy reads and writes memory.
//! The default sizes run from 1 byte to at least four times the last-level
//! cache, so the curve reaches DRAM whatever the machine.
//!
//! Plateaus are named from the cache sizes the kernel reports (the host
//! description's data and unified caches of CPU 0): a
//! copy of n bytes touches 2n bytes, so a size belongs to the smallest level
//! that holds 2n, and each plateau is the median throughput of the sizes
//! well inside a level (from the previous level's size to half this one's).

use std::io;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::baseline::{Baseline, BaselineBlock, BaselineSetup, LimitKind};
use super::Transport;
use crate::message::buffers::{BufferPool, FALLBACK_LLC_BYTES};
use crate::result::{Mode, Plateau, Point};
use crate::sys::thread_cpu_time;

/// The memcpy baseline.
pub struct Memcpy;

impl Transport for Memcpy {
    fn name(&self) -> &'static str {
        "memcpy"
    }

    fn about(&self) -> &'static str {
        "baseline: memory copy bandwidth in one process (the limit of copying transports)"
    }

    super::baseline::channel_less!();

    fn baseline(&self, setup: &BaselineSetup) -> Option<anyhow::Result<Box<dyn Baseline>>> {
        Some(MemcpyBench::new(setup).map(|b| Box::new(b) as Box<dyn Baseline>))
    }

    fn default_mode(&self) -> Mode {
        Mode::Stream
    }

    fn default_sizes(&self, perturb: bool) -> Option<Vec<u64>> {
        let llc = crate::sys::last_level_cache_bytes().unwrap_or(FALLBACK_LLC_BYTES);
        let max = (4 * llc).max(crate::message::schedule::DEFAULT_MAX_BYTES);
        Some(crate::message::schedule::netpipe(1, max, perturb))
    }

    fn limit_kind(&self) -> Option<super::baseline::LimitKind> {
        Some(super::baseline::LimitKind::MemcpyBandwidth)
    }

    fn run_budget_fraction(&self) -> f64 {
        0.4
    }
}

/// Copies between two buffer pools.
pub struct MemcpyBench {
    src: BufferPool,
    dst: BufferPool,
    nocache: bool,
    offset_bytes: u64,
    levels: Vec<CacheLevel>,
}

impl MemcpyBench {
    /// Buffers for copies of up to `setup.max_bytes`.
    pub fn new(setup: &BaselineSetup) -> anyhow::Result<MemcpyBench> {
        if setup.mode != Mode::Stream {
            return Err(crate::error::usage(format!(
                "memcpy times one copy per operation: use --mode stream (its default), not {}",
                setup.mode
            )));
        }
        let pool = || {
            BufferPool::new(
                setup.max_bytes,
                setup.offset_bytes,
                setup.nocache,
                setup.llc_bytes,
            )
        };
        Ok(MemcpyBench {
            src: pool()?,
            dst: pool()?,
            nocache: setup.nocache,
            offset_bytes: setup.offset_bytes,
            levels: cache_levels(&setup.caches),
        })
    }

    #[inline(always)]
    fn copy_one(&mut self) {
        let s = self.src.next_buf();
        let d = self.dst.next_buf();
        d.copy_from_slice(s);
        // The destination is never read: keep the copy from being elided.
        std::hint::black_box(d);
    }
}

impl Baseline for MemcpyBench {
    fn block(&mut self, bytes: u64, repeats: u64) -> io::Result<BaselineBlock> {
        self.src.prepare(bytes);
        self.dst.prepare(bytes);
        self.copy_one();
        let cpu0 = thread_cpu_time();
        let t0 = Instant::now();
        for _ in 0..repeats {
            self.copy_one();
        }
        let elapsed_ns = t0.elapsed().as_nanos() as u64;
        Ok(BaselineBlock {
            elapsed_ns,
            main_cpu: thread_cpu_time().since(cpu0),
            helper_cpu: Default::default(),
        })
    }

    fn integrity(&mut self, bytes: u64) -> io::Result<()> {
        use crate::message::pattern::{check, fill};
        self.src.prepare(bytes);
        self.dst.prepare(bytes);
        for op in 0..3 {
            let s = self.src.next_buf();
            fill(s, op, 0);
            let d = self.dst.next_buf();
            d.copy_from_slice(s);
            if let Some(e) = check(d, op, 0, "copy") {
                return Err(e);
            }
        }
        Ok(())
    }

    fn settings(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("copy".into(), json!("memcpy (Rust copy_from_slice)"));
        m.insert("nocache".into(), json!(self.nocache));
        m.insert("offset_bytes".into(), json!(self.offset_bytes));
        m.insert(
            "caches".into(),
            json!(self
                .levels
                .iter()
                .map(|l| json!({ "level": l.name(), "bytes": l.bytes }))
                .collect::<Vec<_>>()),
        );
        // A copy touches source and destination: it leaves a cache once
        // twice the message no longer fits.
        let thresholds: Vec<(u64, String)> = self
            .levels
            .iter()
            .map(|l| {
                (
                    l.bytes / 2,
                    format!(
                        "{} cache ({} B) full: source and destination no longer fit",
                        l.name(),
                        l.bytes
                    ),
                )
            })
            .collect();
        m.insert(
            crate::result::THRESHOLDS_KEY.into(),
            crate::result::thresholds_value(&thresholds),
        );
        m
    }

    fn helper_cpu(&self) -> Option<usize> {
        None
    }

    fn time_definition(&self) -> &'static str {
        "copy time: one memcpy of `bytes` within one process, averaged over a block of copies timed as one"
    }

    fn limit_kind(&self) -> LimitKind {
        LimitKind::MemcpyBandwidth
    }

    fn plateaus(&self, points: &[Point]) -> Vec<Plateau> {
        plateaus(points, &self.levels, self.nocache)
    }
}

/// A data or unified cache level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLevel {
    /// 1, 2, 3...
    pub level: u32,
    /// Size in bytes (of one instance, as seen by CPU 0).
    pub bytes: u64,
}

impl CacheLevel {
    fn name(&self) -> String {
        format!("L{}", self.level)
    }
}

/// The data and unified caches among `caches`, smallest level first.
pub fn cache_levels(caches: &[crate::sys::Cache]) -> Vec<CacheLevel> {
    let mut levels: Vec<CacheLevel> = caches
        .iter()
        .filter(|c| c.kind != "Instruction" && c.size_bytes > 0)
        .map(|c| CacheLevel {
            level: c.level,
            bytes: c.size_bytes,
        })
        .collect();
    levels.sort_by_key(|l| l.level);
    levels.dedup_by_key(|l| l.level);
    levels
}

/// Smallest copy that counts towards the L1 plateau: below it the call
/// overhead, not the cache, sets the pace.
const L1_PLATEAU_MIN_BYTES: u64 = 1 << 10;
/// Smallest copy that counts towards the DRAM plateau with `--nocache`.
const NOCACHE_PLATEAU_MIN_BYTES: u64 = 64 << 10;

/// Named plateaus of a memcpy curve: for each cache level, the median
/// throughput of the copies whose two buffers (2n bytes) fit that level but
/// not the previous one (n from the previous level's size up to half this
/// level's); DRAM for copies of at least the last level's size. With
/// `nocache` every copy comes from memory: one DRAM plateau.
pub fn plateaus(points: &[Point], levels: &[CacheLevel], nocache: bool) -> Vec<Plateau> {
    let mut ranges: Vec<(String, Option<u64>, u64, u64)> = Vec::new();
    if nocache {
        ranges.push(("DRAM".into(), None, NOCACHE_PLATEAU_MIN_BYTES, u64::MAX));
    } else {
        let mut prev = 0u64;
        for l in levels {
            let lo = if prev == 0 {
                L1_PLATEAU_MIN_BYTES.min(l.bytes / 4)
            } else {
                prev
            };
            ranges.push((l.name(), Some(l.bytes), lo, l.bytes / 2));
            prev = l.bytes;
        }
        if prev > 0 {
            ranges.push(("DRAM".into(), None, prev, u64::MAX));
        }
    }
    ranges
        .into_iter()
        .filter_map(|(level, cache_bytes, lo, hi)| {
            let mut rates: Vec<f64> = points
                .iter()
                .filter(|p| p.bytes >= lo && p.bytes <= hi)
                .map(|p| p.bits_per_s)
                .collect();
            if rates.is_empty() {
                return None;
            }
            let inside: Vec<u64> = points
                .iter()
                .map(|p| p.bytes)
                .filter(|&b| b >= lo && b <= hi)
                .collect();
            rates.sort_by(f64::total_cmp);
            let n = rates.len();
            let median = if n % 2 == 1 {
                rates[n / 2]
            } else {
                (rates[n / 2 - 1] + rates[n / 2]) / 2.0
            };
            Some(Plateau {
                level,
                cache_bytes,
                min_bytes: inside[0],
                max_bytes: inside[inside.len() - 1],
                points: n as u64,
                median_bits_per_s: median,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(bytes: u64, bits_per_s: f64) -> Point {
        let mut p = crate::sweep::engine::test_point(bytes, 1.0);
        p.bits_per_s = bits_per_s;
        p
    }

    #[test]
    fn plateaus_are_named_by_cache_size() {
        let levels = [
            CacheLevel {
                level: 1,
                bytes: 32 << 10,
            },
            CacheLevel {
                level: 2,
                bytes: 512 << 10,
            },
            CacheLevel {
                level: 3,
                bytes: 32 << 20,
            },
        ];
        let pts: Vec<Point> = (0..28)
            .map(|k| {
                let b = 1u64 << k;
                let rate = match b {
                    b if b <= 16 << 10 => 400.0,
                    b if b <= 256 << 10 => 200.0,
                    b if b <= 16 << 20 => 100.0,
                    _ => 50.0,
                };
                point(b, rate)
            })
            .collect();
        let p = plateaus(&pts, &levels, false);
        let names: Vec<&str> = p.iter().map(|p| p.level.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "L3", "DRAM"]);
        assert_eq!(
            p.iter().map(|p| p.median_bits_per_s).collect::<Vec<_>>(),
            [400.0, 200.0, 100.0, 50.0]
        );
        assert_eq!((p[0].min_bytes, p[0].max_bytes), (1 << 10, 16 << 10));
        assert_eq!((p[3].min_bytes, p[3].max_bytes), (32 << 20, 1 << 27));
        let nc = plateaus(&pts, &levels, true);
        assert_eq!(nc.len(), 1);
        assert_eq!(nc[0].level, "DRAM");
        assert!(plateaus(&pts, &[], false).is_empty());
    }

    #[test]
    fn instruction_caches_are_not_levels() {
        let cache = |level, kind: &str, size_bytes| crate::sys::Cache {
            level,
            kind: kind.into(),
            size_bytes,
            shared_by_cpus: None,
        };
        let l = cache_levels(&[
            cache(2, "Unified", 512 << 10),
            cache(1, "Instruction", 32 << 10),
            cache(1, "Data", 48 << 10),
        ]);
        assert_eq!(
            l,
            [
                CacheLevel {
                    level: 1,
                    bytes: 48 << 10
                },
                CacheLevel {
                    level: 2,
                    bytes: 512 << 10
                }
            ]
        );
    }

    #[test]
    fn copies_are_timed_and_checked() {
        let setup = BaselineSetup {
            mode: Mode::Stream,
            max_bytes: 1 << 16,
            nocache: false,
            offset_bytes: 3,
            llc_bytes: Some(1 << 20),
            caches: Vec::new(),
            helper_cpu: None,
            wait: Default::default(),
            timeout: std::time::Duration::from_secs(1),
        };
        let mut b = MemcpyBench::new(&setup).unwrap();
        b.integrity(1 << 16).unwrap();
        b.integrity(13).unwrap();
        let t = b.block(4096, 100).unwrap();
        assert!(t.elapsed_ns > 0);
        let bad = BaselineSetup {
            mode: Mode::Pingpong,
            ..setup
        };
        assert!(MemcpyBench::new(&bad).is_err());
    }
}
