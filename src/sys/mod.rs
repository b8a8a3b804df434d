//! What the machine is: the fingerprint stored with every result, and the
//! small operating-system services the measurement needs (CPU pinning,
//! per-thread CPU accounting, cache sizes).
//!
//! Everything here reads /proc and /sys or asks the kernel directly. What
//! cannot be read is reported as unknown (`None`), never as an error: a
//! container without /sys must still be able to measure.

mod cpu;
mod host;

pub use cpu::{cpu_count, pin_current_thread, thread_cpu_time, CpuTime};
pub use host::{last_level_cache_bytes, load_average, Host};
