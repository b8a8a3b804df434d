//! CPU placement and per-thread CPU accounting.

use std::time::Duration;

/// Number of CPUs this process may run on (its affinity mask: an MPI rank
/// bound to one core counts 1 on a machine of many). For what the machine
/// has, see [`online_cpu_count`].
pub fn cpu_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Number of CPUs the machine has online, whatever this process is bound
/// to (sysconf `_SC_NPROCESSORS_ONLN`, which reads
/// /sys/devices/system/cpu/online): the fingerprint describes the machine,
/// and a rank that `mpirun` bound to one core once recorded a 2-CPU machine
/// as 1 CPU (issue 49). Falls back to [`cpu_count`] when unreadable.
pub fn online_cpu_count() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
        .ok()
        .flatten()
        .filter(|&n| n > 0)
        .map(|n| n as usize)
        .unwrap_or_else(cpu_count)
}

/// Pin the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(std::io::Error::from)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(std::io::Error::from)
}

/// User and system CPU time consumed by the calling thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel on behalf of the thread.
    pub system: Duration,
}

impl CpuTime {
    /// Time spent since `earlier` (saturating at zero).
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// CPU time of the calling thread: per thread, so a helper thread
/// (progress, signal handling) never pollutes the figure, and never a
/// system-wide counter, which is wrong when both ends share one host.
///
/// The total is CLOCK_THREAD_CPUTIME_ID, which includes the slice the
/// thread is running now; getrusage(RUSAGE_THREAD) alone does not (its
/// runtime is brought up to date only at scheduler events and ticks), so
/// a thread that spins through a block shorter than a tick, never
/// sleeping, read 0 ("CPU 0.000 ns/B" for shm and cma spin waits, issue
/// 28). getrusage gives only the split: its system time is kept and the
/// rest of the exact total is user time.
pub fn thread_cpu_time() -> CpuTime {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the pointer we pass.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    let (user, system) = if rc == 0 {
        // SAFETY: initialised by the successful call above.
        let usage = unsafe { usage.assume_init() };
        (tv(usage.ru_utime), tv(usage.ru_stime))
    } else {
        (Duration::ZERO, Duration::ZERO)
    };
    match thread_clock() {
        Some(total) => CpuTime {
            user: total.saturating_sub(system),
            system: system.min(total),
        },
        None => CpuTime { user, system },
    }
}

/// CLOCK_THREAD_CPUTIME_ID of the calling thread (exact to the
/// nanosecond, the running slice included), if the clock can be read.
fn thread_clock() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the pointer we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn spin(d: Duration) {
        let t = Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    /// utime + stime of this thread from /proc, in ns (tick resolution):
    /// the kernel's own account, read another way.
    fn proc_thread_ns() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields after the command's closing parenthesis; utime and stime
        // are fields 14 and 15, the 12th and 13th after it.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<u64> = rest
            .split(' ')
            .skip(11)
            .take(2)
            .map(|x| x.parse().unwrap())
            .collect();
        // SAFETY: sysconf has no preconditions.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        (f[0] + f[1]) * 1_000_000_000 / tck
    }

    fn total(c: CpuTime) -> Duration {
        c.user + c.system
    }

    /// A thread that spins through blocks far shorter than a scheduler tick
    /// is charged each block (getrusage alone read 0 for nearly all of
    /// them), never more than the wall time.
    #[test]
    fn a_spinning_thread_is_charged_its_short_blocks() {
        const BLOCKS: u32 = 50;
        // On a busy machine (parallel tests on 2 vCPUs, load 50 seen) a
        // spinning thread may get under a fifth of a CPU for a whole
        // attempt: the share is the machine's, the charges are the
        // clock's. So charges and the upper bound hold in every attempt,
        // and the share must reach a fifth in one attempt of five.
        let mut shares = Vec::new();
        for _ in 0..5 {
            let (mut cpu, mut wall, mut charged) = (Duration::ZERO, Duration::ZERO, 0);
            for _ in 0..BLOCKS {
                let c0 = thread_cpu_time();
                let t0 = Instant::now();
                spin(Duration::from_micros(20));
                let d = total(thread_cpu_time().since(c0));
                wall += t0.elapsed();
                cpu += d;
                charged += u32::from(d > Duration::ZERO);
            }
            assert_eq!(charged, BLOCKS, "blocks charged 0 CPU");
            // Preemption may take CPU away from a block, never add.
            assert!(
                cpu <= wall + Duration::from_micros(50),
                "{cpu:?} > {wall:?}"
            );
            if cpu * 5 >= wall {
                return;
            }
            shares.push(cpu.as_secs_f64() / wall.as_secs_f64());
        }
        panic!("a spinning thread was charged under a fifth of its wall time in every attempt: {shares:?}");
    }

    /// Over a long spin, the total agrees with the kernel's tick account in
    /// /proc/thread-self/stat.
    #[test]
    fn the_total_agrees_with_proc_stat() {
        let (c0, p0) = (thread_cpu_time(), proc_thread_ns());
        // Spin until the thread has had 300 ms of CPU (at most 20 s of
        // wall): on a busy machine 300 ms of wall may hold far less CPU,
        // and the comparison needs many ticks.
        let t0 = Instant::now();
        while total(thread_cpu_time().since(c0)) < Duration::from_millis(300)
            && t0.elapsed() < Duration::from_secs(20)
        {
            spin(Duration::from_millis(10));
        }
        let cpu = total(thread_cpu_time().since(c0)).as_nanos() as f64;
        let proc = (proc_thread_ns() - p0) as f64;
        // Ticks of 10 ms at USER_HZ 100: two of them either way, and 10%.
        assert!(
            (cpu - proc).abs() <= 20e6 + 0.1 * proc,
            "thread clock {cpu} ns, /proc {proc} ns"
        );
        assert!(cpu > 100e6, "{cpu}");
    }
}
