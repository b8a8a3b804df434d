//! Likely causes of drop-outs: the sizes where something in the stack
//! changes, as recorded with the result.
//!
//! A drop-out occupies the sizes `first..=last`; the good sizes bounding it
//! are `left` and `right`. Its onset lies between `left` and `first`, and
//! whatever threshold caused it lies in the sizes it spans. Candidates are
//! tried in this order, the first match is reported:
//!
//! 1. the library's eager limit E (MPI short/long protocol switch; LAM's dip
//!    at 128 KB in Farrell and Ong 2003): E within [`NEAR`] (10%) of `left..=last`;
//! 2. a socket buffer granted, send or receive, or half of one (Linux
//!    doubles the request and keeps part of the buffer for bookkeeping, so
//!    the window carrying data is nearer half of what `getsockopt` reports;
//!    the 32-64 KB drop of Farrell and Ong 2003 came from a 32 KB buffer): within 10% of
//!    `left..=last`. A message larger than the window waits for an
//!    acknowledgement (bandwidth-delay product, method.md);
//! 3. a multiple k * MSS (k >= 1) in `left..first`, the span being narrower
//!    than one MSS so that the multiple is pinned down: one more segment on
//!    the wire, the last one short (Farrell and Ong 2003's dip near 3 KB with a 1500 B
//!    MTU, i.e. past 2 x 1448 B). Without a recorded MSS, MTU - 52 (IPv4 and
//!    TCP headers plus the timestamp option) is assumed. Only up to k =
//!    [`MAX_PACKETS`] (20): one packet more among many costs too little;
//! 4. a multiple of the MTU, the same way, when no MSS is recorded;
//! 5. a threshold the transport itself stated (its settings' `thresholds`
//!    list, filled in `src/transport/`: wulf's shm inline, chunk and ring
//!    sizes, cma's split threshold, each MPI's protocol limits of the
//!    path its ranks used, the cache sizes a memcpy outgrows), within 10%
//!    of `left..=last` as for the limits above; a threshold stated with
//!    `"every": true` repeats at each multiple (Unix sockets' kernel
//!    buffers grow by pages; cma's process_vm_readv pins one more page per
//!    page spanned, about 240 ns on the development VM, measured alone by
//!    bench/cma_page_probe.sh: with it, aligned buffers' page boundaries
//!    do explain cma's steps) and
//!    matches a drop-out that starts just past a multiple: kB in
//!    `left..first` with `first` within 1% of kB (NetPIPE's +3 bytes), the
//!    good size before it at or below the multiple;
//! 6. a cache level of the machine (its L2, per core, and its last level,
//!    from the fingerprint's caches), only for transports that copy each
//!    message through the caches (their settings say
//!    [`crate::result::COPIES_KEY`]: tcp, c2c, shm): within 10% of
//!    `left..=last`. A message larger than the cache no longer stays in it
//!    between copies, so each copy streams from the next level (tcp, c2c
//!    and shm step at 1 MiB, the per-core L2, on the development VM);
//! 7. the page size P only when the buffers are misaligned (`--offset`
//!    o > 0): a buffer starting o bytes into a page spans one page more
//!    from kP - o + 1 bytes on, so kP - o in `left..last` (the span narrower
//!    than a page) matches. With aligned buffers every size of NetPIPE's
//!    schedule from 4 KiB on is within 3 bytes of a page multiple, so a
//!    page boundary would explain everything and therefore nothing.
//!
//! Nothing matching within the schedule's resolution gives no cause: the
//! report says "no known threshold" rather than guess.

use serde::{Deserialize, Serialize};

/// A threshold a transport stated in its settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stated {
    /// The size, bytes (for a repeating threshold: its period).
    pub bytes: u64,
    /// What changes there.
    pub what: String,
    /// Whether it repeats at every multiple of `bytes`.
    pub every: bool,
}

/// Relative tolerance when matching a buffer or protocol limit to a dip.
pub const NEAR: f64 = 0.10;

/// A cache level of the machine, as the fingerprint describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// Its level (2 for L2).
    pub level: u32,
    /// Capacity in bytes.
    pub bytes: u64,
    /// Logical CPUs sharing it, when the kernel says.
    pub shared_by_cpus: Option<usize>,
    /// Whether it is the last level.
    pub last: bool,
}

impl CacheLevel {
    /// The levels worth naming among `caches` (the fingerprint's, as seen
    /// from CPU 0): the data or unified ones from L2 up (L1 holds a few
    /// dozen KiB, where the per-message costs hide any copy effect), the
    /// largest marked as the last level.
    pub fn from_fingerprint(caches: &[crate::sys::Cache]) -> Vec<CacheLevel> {
        let mut out: Vec<CacheLevel> = caches
            .iter()
            .filter(|c| c.level >= 2 && c.kind != "Instruction" && c.size_bytes > 0)
            .map(|c| CacheLevel {
                level: c.level,
                bytes: c.size_bytes,
                shared_by_cpus: c.shared_by_cpus,
                last: false,
            })
            .collect();
        let top = out.iter().map(|c| c.level).max();
        for c in &mut out {
            c.last = Some(c.level) == top;
        }
        out
    }

    /// Its name with its size and who shares it, as a cause names it.
    fn describe(&self) -> String {
        let share = match self.shared_by_cpus {
            Some(1) => ", per core".to_string(),
            Some(n) => format!(", shared by {n} CPUs"),
            None => String::new(),
        };
        let last = if self.last { ", last level" } else { "" };
        format!(
            "L{} cache ({} B{last}{share}) outgrown: the message no longer fits, each copy streams it from the next level",
            self.level, self.bytes
        )
    }
}

/// Most packets k for which one more (k + 1) is named as a cause: one
/// packet more among k adds at most about 1/k to the time, and no event
/// shallower than [`crate::analysis::DROPOUT_MIN_DEPTH`] (5%, 1/20) is
/// reported. A step at 1 MiB on loopback (32 segments of 32 KiB) is no
/// packet's doing.
pub const MAX_PACKETS: u64 = 20;

/// Page size assumed when the result does not record one.
pub const DEFAULT_PAGE_BYTES: u64 = 4096;

/// Sizes at which the stack changes behaviour, used to name the likely cause
/// of a drop-out. Absent values are simply not tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseHints {
    /// Send socket buffer the kernel granted (SO_SNDBUF read back).
    pub sndbuf_granted_bytes: Option<u64>,
    /// Receive socket buffer the kernel granted (SO_RCVBUF read back).
    pub rcvbuf_granted_bytes: Option<u64>,
    /// TCP maximum segment size (TCP_MAXSEG).
    pub mss_bytes: Option<u64>,
    /// Interface MTU.
    pub mtu_bytes: Option<u64>,
    /// Memory page size.
    pub page_bytes: Option<u64>,
    /// Message-passing library's eager (short-message) limit.
    pub eager_limit_bytes: Option<u64>,
    /// Sizes where the transport itself changes behaviour, with what
    /// changes there (the settings' `thresholds` list).
    pub thresholds: Vec<Stated>,
    /// Misalignment of the buffers (`--offset`); 0 when aligned.
    pub offset_bytes: u64,
    /// Whether the transport copies each message through the caches (its
    /// settings' [`crate::result::COPIES_KEY`]): only then are cache
    /// levels causes.
    pub copies_through_caches: bool,
    /// The machine's cache levels (see [`CauseHints::with_caches`]); empty
    /// unless `copies_through_caches`.
    pub caches: Vec<CacheLevel>,
}

impl Default for CauseHints {
    /// Nothing recorded except the usual 4 KiB page.
    fn default() -> Self {
        CauseHints {
            sndbuf_granted_bytes: None,
            rcvbuf_granted_bytes: None,
            mss_bytes: None,
            mtu_bytes: None,
            page_bytes: Some(DEFAULT_PAGE_BYTES),
            eager_limit_bytes: None,
            thresholds: Vec::new(),
            offset_bytes: 0,
            copies_through_caches: false,
            caches: Vec::new(),
        }
    }
}

impl CauseHints {
    /// Read the hints from a result's `options.transport` map: keys
    /// `sndbuf_granted_bytes`, `rcvbuf_granted_bytes`, `mss_bytes`,
    /// `mtu_bytes`, `page_bytes` (default 4096) and `eager_limit_bytes`,
    /// each a positive integer, the `thresholds` list and the flag
    /// [`crate::result::COPIES_KEY`]; anything else is ignored.
    pub fn from_transport(map: &serde_json::Map<String, serde_json::Value>) -> CauseHints {
        let get = |key: &str| {
            map.get(key)
                .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64)))
                .filter(|&v| v > 0)
        };
        CauseHints {
            sndbuf_granted_bytes: get("sndbuf_granted_bytes"),
            rcvbuf_granted_bytes: get("rcvbuf_granted_bytes"),
            mss_bytes: get("mss_bytes"),
            mtu_bytes: get("mtu_bytes"),
            page_bytes: get("page_bytes").or(Some(DEFAULT_PAGE_BYTES)),
            eager_limit_bytes: get("eager_limit_bytes"),
            thresholds: map
                .get(crate::result::THRESHOLDS_KEY)
                .and_then(|v| v.as_array())
                .map(|list| {
                    list.iter()
                        .filter_map(|t| {
                            Some(Stated {
                                bytes: t.get("bytes")?.as_u64().filter(|&b| b > 0)?,
                                what: t.get("what")?.as_str()?.to_string(),
                                every: t.get("every").and_then(|e| e.as_bool()).unwrap_or(false),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            offset_bytes: 0,
            copies_through_caches: map
                .get(crate::result::COPIES_KEY)
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            caches: Vec::new(),
        }
    }

    /// The same hints with the machine's cache levels (the fingerprint's
    /// `caches`), kept only when the transport copies through the caches:
    /// a kernel bypass or a NIC's DMA has no reason to step at the L2.
    pub fn with_caches(self, caches: Option<&[crate::sys::Cache]>) -> CauseHints {
        let caches = match (self.copies_through_caches, caches) {
            (true, Some(c)) => CacheLevel::from_fingerprint(c),
            _ => Vec::new(),
        };
        CauseHints { caches, ..self }
    }

    /// The same hints for buffers misaligned by `offset_bytes`.
    pub fn with_offset(self, offset_bytes: u64) -> CauseHints {
        CauseHints {
            offset_bytes,
            ..self
        }
    }

    /// The likely cause of a drop-out over sizes `first..=last` bounded by
    /// the good sizes `left` and `right`, as a sentence; `None` when no
    /// recorded threshold matches. See the module notes for the rules.
    pub fn likely_cause(&self, left: u64, first: u64, last: u64, _right: u64) -> Option<String> {
        let near = |limit: u64| {
            let l = limit as f64;
            l >= left as f64 / (1.0 + NEAR) && l <= last as f64 * (1.0 + NEAR)
        };
        if let Some(e) = self.eager_limit_bytes.filter(|&e| near(e)) {
            return Some(format!(
                "eager limit {e} B: larger messages use the rendezvous protocol and its handshake"
            ));
        }
        let buffers = [
            ("send", self.sndbuf_granted_bytes),
            ("receive", self.rcvbuf_granted_bytes),
        ];
        for (which, granted) in buffers {
            let Some(g) = granted else { continue };
            if near(g) {
                return Some(format!(
                    "{which} socket buffer granted ({g} B): a larger message waits for acknowledgements"
                ));
            }
            if near(g / 2) {
                return Some(format!(
                    "half the {which} socket buffer granted ({g} B), the part Linux leaves for data: \
                     a larger message waits for acknowledgements"
                ));
            }
        }
        let mss = self.mss_bytes.map(|m| (m, "MSS")).or_else(|| {
            self.mtu_bytes
                .filter(|&m| m > 52)
                .map(|m| (m - 52, "MSS (MTU - 52, assumed)"))
        });
        // With a recorded MSS, TCP cuts the stream at the MSS, not at the
        // MTU (loopback: MTU 65536, MSS 32768).
        let mtu = self.mtu_bytes.filter(|_| self.mss_bytes.is_none());
        let frames = [mss, mtu.map(|m| (m, "MTU"))];
        for (unit, name) in frames.into_iter().flatten() {
            if last - left >= unit {
                continue;
            }
            // The good size `left` fits in k packets and `first` needs one
            // more: k * unit in left..first. A multiple at `first` itself
            // changes nothing there (1 MiB is exactly 32 loopback MSS of
            // 32 KiB, and was once named for tcp's step at the L2 size).
            let k = (first - 1) / unit;
            if (1..=MAX_PACKETS).contains(&k) && k * unit >= left {
                return Some(format!(
                    "{k} x {name} = {} B: one more packet, the last one short",
                    k * unit
                ));
            }
        }
        if let Some(t) = self.thresholds.iter().find(|t| !t.every && near(t.bytes)) {
            return Some(format!("{} (at {} B)", t.what, t.bytes));
        }
        for t in self.thresholds.iter().filter(|t| t.every) {
            let p = t.bytes;
            if let Some(k) = just_past_multiple(p, left, first) {
                return Some(format!("{} (past {k} x {p} = {} B)", t.what, k * p));
            }
        }
        if let Some(c) = self.caches.iter().find(|c| near(c.bytes)) {
            return Some(c.describe());
        }
        let o = self.offset_bytes;
        if let Some(p) = self.page_bytes.filter(|&p| p > o && o > 0) {
            if last - left < p {
                let k = (left + o) / p + 1;
                let edge = k * p - o;
                if edge >= left && edge < last {
                    return Some(format!(
                        "{k} x page size - offset = {edge} B: buffers {o} B into a page span one page more from here"
                    ));
                }
            }
        }
        None
    }
}

impl CauseHints {
    /// The period of a staircase the transport stated (a threshold with
    /// `"every": true`: each page spanned adds a fixed cost) whose step
    /// lies between the good size `left` and the first size `first` of an
    /// event, by rule 5 of the module notes; None when no stated staircase
    /// steps there. Such an event is a known step: the confirmation judges
    /// it by its rising edge ([`crate::analysis::confirm::judge_known`]).
    pub fn staircase_step(&self, left: u64, first: u64) -> Option<u64> {
        self.thresholds
            .iter()
            .filter(|t| t.every)
            .map(|t| t.bytes)
            .find(|&p| just_past_multiple(p, left, first).is_some())
    }
}

/// The multiple k (>= 1) of `period` that `first` lies just past (within
/// 1%, NetPIPE's +3 bytes) with `left` at or below it, if any.
fn just_past_multiple(period: u64, left: u64, first: u64) -> Option<u64> {
    let k = left.div_ceil(period).max(1);
    let edge = k * period;
    (edge >= left && edge < first && (first - edge) as f64 <= 0.01 * edge as f64).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints() -> CauseHints {
        CauseHints {
            sndbuf_granted_bytes: Some(32768),
            rcvbuf_granted_bytes: Some(87380),
            mss_bytes: Some(1448),
            mtu_bytes: Some(1500),
            page_bytes: Some(4096),
            eager_limit_bytes: None,
            thresholds: Vec::new(),
            offset_bytes: 0,
            copies_through_caches: false,
            caches: Vec::new(),
        }
    }

    #[test]
    fn socket_buffer_dip() {
        let c = hints().likely_cause(32765, 32768, 65533, 65536).unwrap();
        assert!(c.starts_with("send socket buffer granted (32768 B)"), "{c}");
        // Linux reports 65536 for a 32 KiB request: half of it matches.
        let doubled = CauseHints {
            sndbuf_granted_bytes: Some(65536),
            ..hints()
        };
        let c = doubled.likely_cause(32765, 32768, 49155, 65533).unwrap();
        assert!(c.starts_with("half the send socket buffer"), "{c}");
    }

    #[test]
    fn mss_multiple_dip() {
        // Good at 2051 B, dropped at 3069-3075 B: 2 x 1448 = 2896 lies between.
        let c = hints().likely_cause(2051, 3069, 3075, 4093).unwrap();
        assert!(c.starts_with("2 x MSS = 2896 B"), "{c}");
        let mtu_only = CauseHints {
            mss_bytes: None,
            ..hints()
        };
        let c = mtu_only.likely_cause(2051, 3069, 3075, 4093).unwrap();
        assert!(c.starts_with("2 x MSS (MTU - 52, assumed) = 2896 B"), "{c}");
    }

    #[test]
    fn eager_limit_wins_and_page_needs_a_tight_dip() {
        let mpi = CauseHints {
            eager_limit_bytes: Some(131072),
            ..hints()
        };
        let c = mpi.likely_cause(131069, 131072, 131075, 196605).unwrap();
        assert!(c.starts_with("eager limit 131072 B"), "{c}");
        // Aligned buffers: a page boundary explains nothing.
        let aligned = CauseHints::default();
        assert_eq!(aligned.likely_cause(8192, 8195, 8195, 12285), None);
        // Buffers 100 B into a page span a third page from 8093 B on.
        let page = CauseHints::default().with_offset(100);
        let c = page.likely_cause(6147, 8189, 8189, 8192).unwrap();
        assert!(c.starts_with("2 x page size - offset = 8092 B"), "{c}");
        assert_eq!(page.likely_cause(8189, 8192, 8195, 12285), None);
        // A dip spanning several pages is not pinned on one boundary.
        assert_eq!(page.likely_cause(12291, 16381, 24579, 24582), None);
    }

    #[test]
    fn thresholds_the_transport_stated() {
        let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            r#"{"thresholds": [{"bytes": 56, "what": "shm inline size (56 B)"},
                               {"bytes": 32768, "what": "shm chunk size (32768 B)"},
                               {"bytes": 65536, "what": "cma split threshold (65536 B)"},
                               {"bytes": 0, "what": "ignored"}, {"what": "no size"}]}"#,
        )
        .unwrap();
        let h = CauseHints::from_transport(&map);
        assert_eq!(h.thresholds.len(), 3);
        // shm: the step past the inline size (48 B good, 64 B slower).
        let c = h.likely_cause(48, 61, 61, u64::MAX).unwrap();
        assert!(c.starts_with("shm inline size"), "{c}");
        // shm: one chunk more from 32 KiB + 3 B.
        let c = h.likely_cause(32768, 32771, 32771, 49149).unwrap();
        assert!(c.starts_with("shm chunk size"), "{c}");
        // cma: the split from 64 KiB on.
        let c = h.likely_cause(49155, 65533, 65536, 65539).unwrap();
        assert!(c.starts_with("cma split threshold"), "{c}");
        // memcpy: a cache level (stated as half its size) and nothing else.
        let l2 = CauseHints {
            thresholds: vec![Stated {
                bytes: 1 << 20,
                what: "L2 cache (2097152 B) full".into(),
                every: false,
            }],
            ..CauseHints::default()
        };
        let c = l2
            .likely_cause(786_435, 1_048_573, 1_048_573, 1_572_861)
            .unwrap();
        assert!(c.starts_with("L2 cache"), "{c}");
        assert_eq!(l2.likely_cause(196_611, 262_141, 262_141, 393_213), None);
        // unix: a message just past k pages needs one more page.
        let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            r#"{"thresholds": [{"bytes": 4096, "every": true, "what": "unix pages"}]}"#,
        )
        .unwrap();
        let unix = CauseHints::from_transport(&map);
        let c = unix.likely_cause(32768, 32771, 32771, 49149).unwrap();
        assert_eq!(c, "unix pages (past 8 x 4096 = 32768 B)");
        let c = unix.likely_cause(4096, 4099, 6147, 8189).unwrap();
        assert!(c.contains("past 1 x 4096"), "{c}");
        // A run over several pages that starts just past one.
        let c = unix.likely_cause(8192, 8195, 12291, 16381).unwrap();
        assert!(c.contains("past 2 x 4096"), "{c}");
        // Not pinned: the dropped sizes do not start just past a multiple.
        assert_eq!(unix.likely_cause(2051, 6141, 6147, 8189), None);
        assert_eq!(unix.likely_cause(32771, 49149, 49149, 49152), None);
    }

    #[test]
    fn a_multiple_at_the_first_size_is_no_packet_more() {
        // tcp loopback, 32 KiB MSS: 1 MiB is 32 segments, as is 1048573 B;
        // a step from 1 MiB on is not one packet more.
        let lo = CauseHints {
            mss_bytes: Some(32768),
            mtu_bytes: Some(65536),
            sndbuf_granted_bytes: None,
            rcvbuf_granted_bytes: None,
            ..hints()
        };
        assert_eq!(
            lo.likely_cause(1_048_573, 1_048_576, 1_048_576, u64::MAX),
            None
        );
        let c = lo.likely_cause(65_536, 65_539, 65_539, u64::MAX);
        assert!(c.unwrap().starts_with("2 x MSS = 65536 B"));
        // Nor is 1048579 B, though 33 segments: one among 33 costs too
        // little for a step (the L2 cache at 1 MiB is the likelier cause).
        let none = lo.likely_cause(1_048_576, 1_048_579, 1_048_579, u64::MAX);
        assert_eq!(none, None);
    }

    #[test]
    fn unrelated_dip_has_no_cause() {
        assert_eq!(
            hints().likely_cause(200_000, 262_141, 300_000, 400_000),
            None
        );
    }

    #[test]
    fn read_from_transport_options() {
        let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            r#"{"sndbuf_granted_bytes": 65536, "mtu_bytes": 9000.0, "nodelay": true, "mss_bytes": 0}"#,
        )
        .unwrap();
        let h = CauseHints::from_transport(&map);
        assert_eq!(h.sndbuf_granted_bytes, Some(65536));
        assert_eq!(h.mtu_bytes, Some(9000));
        assert_eq!(h.mss_bytes, None);
        assert_eq!(h.page_bytes, Some(4096));
        assert_eq!(h.eager_limit_bytes, None);
    }
}
