//! The limits table carried from one wulf process to another: an MPI
//! sweep runs in the ranks of a job its MPI's launcher starts
//! ([`crate::launch::mpi`]), each a fresh process whose table of limits
//! ([`super::limits`]) is empty, so rank 0 measured every limit again
//! before its first point, within the limits' deadline (a quarter of its
//! budget), while the launching `wulf run` had measured them all with
//! its baselines: on a quiet VM every MPI row of `wulf run --quick` ran
//! out of that deadline at every size (issue 44). The launching process
//! writes what it knows into the job file ([`known`]) and rank 0 takes it
//! in ([`adopt`]) before its sweep: a limit keyed by the same buffers and
//! CPUs is then not measured again. The CPUs are this machine's numbers,
//! valid in the ranks because they run on it (a rank on another host
//! pins other CPUs of another machine, and its limits are not used:
//! memory limits mean nothing across a network).

use serde::{Deserialize, Serialize};

use super::limits::{table, C2cKey, CopyKey};
use crate::transport::baseline::LimitKind;

/// A size-keyed limit: (`--nocache`, `--offset`, first CPU, second CPU
/// (None for memcpy, which runs on one), bytes, bits/s).
type Entry = (bool, u64, Option<usize>, Option<usize>, u64, f64);

/// What one process's table of limits holds, as a job file carries it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Known {
    /// memcpy bandwidth.
    pub memcpy: Vec<Entry>,
    /// The cache-line floor: (first CPU, second CPU, ns).
    pub floor: Vec<(Option<usize>, Option<usize>, f64)>,
    /// The single-copy core-to-core limit.
    pub c2c: Vec<Entry>,
    /// The serial two-copy hand-off.
    pub c2c_two_copy: Vec<Entry>,
    /// Sizes tried and left without a value (their budget ran out): as
    /// `memcpy` and the core-to-core lists, with 0 bits/s; the
    /// core-to-core ones by whether they are the two-copy hand-off's.
    pub tried_memcpy: Vec<Entry>,
    /// See `tried_memcpy`.
    pub tried_c2c: Vec<(bool, Entry)>,
}

fn copy_entry(k: &CopyKey, bytes: u64, v: f64) -> Entry {
    (k.nocache, k.offset_bytes, k.cpu, None, bytes, v)
}

fn c2c_entry(k: &C2cKey, bytes: u64, v: f64) -> Entry {
    (k.0, k.1, k.2 .0, k.2 .1, bytes, v)
}

fn copy_key(e: &Entry) -> (CopyKey, u64) {
    let key = CopyKey {
        nocache: e.0,
        offset_bytes: e.1,
        cpu: e.2,
    };
    (key, e.4)
}

fn c2c_key(e: &Entry) -> (C2cKey, u64) {
    ((e.0, e.1, (e.2, e.3)), e.4)
}

/// Everything this process's table holds.
pub fn known() -> Known {
    let t = table().lock().unwrap_or_else(|e| e.into_inner());
    let c2c = |m: &std::collections::HashMap<(C2cKey, u64), f64>| -> Vec<Entry> {
        m.iter().map(|((k, b), v)| c2c_entry(k, *b, *v)).collect()
    };
    Known {
        memcpy: t
            .memcpy
            .iter()
            .map(|((k, b), v)| copy_entry(k, *b, *v))
            .collect(),
        floor: t.floor.iter().map(|(k, v)| (k.0, k.1, *v)).collect(),
        c2c: c2c(&t.c2c),
        c2c_two_copy: c2c(&t.c2c_two_copy),
        tried_memcpy: t
            .tried_memcpy
            .iter()
            .map(|(k, b)| copy_entry(k, *b, 0.0))
            .collect(),
        tried_c2c: t
            .tried_c2c
            .iter()
            .map(|(kind, k, b)| (*kind == LimitKind::C2cTwoCopy, c2c_entry(k, *b, 0.0)))
            .collect(),
    }
}

/// Take `k` into this process's table: its values where the table has
/// none (a floor: the lower of the two, as the table keeps it), and its
/// tried sizes, which are then not tried again.
pub fn adopt(k: &Known) {
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    for e in &k.memcpy {
        t.memcpy.entry(copy_key(e)).or_insert(e.5);
    }
    for &(a, b, ns) in &k.floor {
        let kept = t.floor.entry((a, b)).or_insert(ns);
        *kept = kept.min(ns);
    }
    for e in &k.c2c {
        t.c2c.entry(c2c_key(e)).or_insert(e.5);
    }
    for e in &k.c2c_two_copy {
        t.c2c_two_copy.entry(c2c_key(e)).or_insert(e.5);
    }
    t.tried_memcpy.extend(k.tried_memcpy.iter().map(copy_key));
    t.tried_c2c.extend(k.tried_c2c.iter().map(|(two, e)| {
        let kind = if *two {
            LimitKind::C2cTwoCopy
        } else {
            LimitKind::C2cSingleCopy
        };
        let (key, bytes) = c2c_key(e);
        (kind, key, bytes)
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one process knows comes back whole in another's table, and a
    /// sweep there finds it: no limit is measured again.
    #[test]
    fn known_limits_survive_the_trip() {
        // CPUs no machine has, so no other test's entries collide.
        let cpus = (Some(7_001), Some(7_002));
        let c2c = (true, 3, cpus);
        let copy = CopyKey {
            nocache: true,
            offset_bytes: 3,
            cpu: cpus.0,
        };
        {
            let mut t = table().lock().unwrap();
            t.memcpy.insert((copy, 4096), 8e10);
            t.floor.insert(cpus, 55.0);
            t.c2c.insert((c2c, 4096), 4e10);
            t.c2c_two_copy.insert((c2c, 4096), 2e10);
            t.tried_memcpy.insert((copy, 8192));
            t.tried_c2c.insert((LimitKind::C2cTwoCopy, c2c, 8192));
        }
        let json = serde_json::to_string(&known()).unwrap();
        let k: Known = serde_json::from_str(&json).unwrap();
        assert!(k.memcpy.contains(&(true, 3, Some(7_001), None, 4096, 8e10)));
        assert!(k.floor.contains(&(Some(7_001), Some(7_002), 55.0)));
        assert!(k
            .c2c_two_copy
            .contains(&(true, 3, Some(7_001), Some(7_002), 4096, 2e10)));
        assert!(k
            .tried_c2c
            .contains(&(true, (true, 3, Some(7_001), Some(7_002), 8192, 0.0))));
        // A fresh table (as a rank's) takes it in; a lower floor wins.
        {
            let mut t = table().lock().unwrap();
            t.memcpy.remove(&(copy, 4096));
            t.c2c_two_copy.remove(&(c2c, 4096));
            t.floor.insert(cpus, 60.0);
            t.tried_c2c.remove(&(LimitKind::C2cTwoCopy, c2c, 8192));
        }
        adopt(&k);
        let t = table().lock().unwrap();
        assert_eq!(t.memcpy.get(&(copy, 4096)), Some(&8e10));
        assert_eq!(t.c2c_two_copy.get(&(c2c, 4096)), Some(&2e10));
        assert_eq!(t.floor.get(&cpus), Some(&55.0));
        assert!(t.tried_c2c.contains(&(LimitKind::C2cTwoCopy, c2c, 8192)));
    }
}
