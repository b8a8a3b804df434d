//! `--load memory[:N]`: threads streaming through buffers larger than the
//! last-level cache, so every pass comes from memory and competes with the
//! measurement for memory bandwidth (and evicts its caches).

use std::sync::atomic::Ordering;

use super::{record, LoadRecord, Placement, Workers};

/// Bytes touched between two checks of the stop flag.
const SLICE_BYTES: usize = 1 << 20;
/// Buffer size when the last-level cache is unknown.
const DEFAULT_BUFFER_BYTES: u64 = 64 << 20;
/// Largest buffer per thread.
const MAX_BUFFER_BYTES: u64 = 256 << 20;

/// Start `threads` streaming threads, thread i pinned to `placement`'s CPU i,
/// each with its own buffer of twice the last-level cache.
pub(super) fn start(
    threads: usize,
    placement: &Placement,
) -> anyhow::Result<(Workers, LoadRecord)> {
    let buffer_bytes = crate::sys::last_level_cache_bytes()
        .map(|llc| (2 * llc).clamp(8 << 20, MAX_BUFFER_BYTES))
        .unwrap_or(DEFAULT_BUFFER_BYTES);
    let mut w = Workers::new();
    let mut cpus = Vec::with_capacity(threads);
    for i in 0..threads {
        let cpu = placement.cpu_of(i);
        cpus.push(Some(cpu));
        w.spawn(format!("wulf-load-mem{i}"), move |stop, count| {
            let _ = crate::sys::pin_current_thread(cpu);
            let words = buffer_bytes as usize / 8;
            let mut buf = vec![1u64; words];
            let slice_words = SLICE_BYTES / 8;
            let mut at = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let end = (at + slice_words).min(words);
                // Read and write every word: the stream a copy makes.
                for x in &mut buf[at..end] {
                    *x = x.wrapping_add(1);
                }
                std::hint::black_box(&buf[at]);
                count.fetch_add(2 * 8 * (end - at) as u64, Ordering::Relaxed);
                at = if end == words { 0 } else { end };
            }
        })?;
    }
    let mut r = record("memory", cpus);
    r.buffer_bytes = Some(buffer_bytes);
    Ok((w, r))
}
