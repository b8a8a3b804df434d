//! `--load cpu[:N]`: busy threads at normal priority, pinned round-robin
//! over the CPUs (those of the measured ends last), counting loop iterations (the same kind of loop as the
//! soaker, so its rate says how much CPU the load actually got).

use std::sync::atomic::Ordering;

use super::{record, LoadRecord, Placement, Workers};

/// Iterations between two publications of a thread's count.
const CHUNK_ITERATIONS: u64 = 1 << 16;

/// Start `threads` busy threads, thread i pinned to `placement`'s CPU i.
pub(super) fn start(
    threads: usize,
    placement: &Placement,
) -> anyhow::Result<(Workers, LoadRecord)> {
    let mut w = Workers::new();
    let mut cpus = Vec::with_capacity(threads);
    for i in 0..threads {
        let cpu = placement.cpu_of(i);
        cpus.push(Some(cpu));
        w.spawn(format!("wulf-load-cpu{i}"), move |stop, count| {
            // Unpinned if pinning fails: the load still loads the machine.
            let _ = crate::sys::pin_current_thread(cpu);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..CHUNK_ITERATIONS {
                    n = std::hint::black_box(n).wrapping_add(1);
                }
                count.fetch_add(CHUNK_ITERATIONS, Ordering::Relaxed);
            }
        })?;
    }
    Ok((w, record("cpu", cpus)))
}
