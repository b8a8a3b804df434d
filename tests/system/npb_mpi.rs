//! NAS MG over the real MPI libraries, through the MPI launchers'
//! `wulf::launch::mpi::launch_group`: 1, 2 and 4 ranks under Open MPI and MPICH,
//! 2 ranks on their TCP-forced variants, and a clear error (not a hang)
//! for a rank count MG cannot use.
//!
//! A library that is not installed skips its tests, unless
//! WULF_REQUIRE_MPI=1 (set by .ci/run), where a missing library fails them.
//! Times are never asserted: on a shared 2-CPU machine they are bimodal.

use crate::common;
use common::{descends_from, have, libraries};
use wulf::launch::RunContext;

use std::sync::{MutexGuard, Once};
use std::time::{Duration, Instant};

use wulf::npb::NpbOutcome;
use wulf::npb::{Class, RankJob, RankTask};

// MPI ranks busy-poll: two jobs at once on two CPUs would starve each
// other, so the tests of this file run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    // The ranks run `wulf worker`: this test binary is not wulf, so point
    // the launcher at the real one.
    static EXE: Once = Once::new();
    EXE.call_once(|| std::env::set_var(wulf::transport::mpi::EXE_VAR, env!("CARGO_BIN_EXE_wulf")));
    common::serial()
}

fn job(class: Class) -> RankJob {
    RankJob {
        kernel: wulf::npb::Kernel::Mg,
        class,
        repetitions: 1,
        timeout_ms: 60_000,
    }
}

/// Run MG of `class` on `np` ranks of `transport`.
fn group(transport: &str, np: usize, class: Class) -> anyhow::Result<Vec<NpbOutcome>> {
    group_in(&RunContext::default(), transport, np, class)
}

/// [`group`] with the options of `ctx`.
fn group_in(
    ctx: &RunContext,
    transport: &str,
    np: usize,
    class: Class,
) -> anyhow::Result<Vec<NpbOutcome>> {
    let t = ctx
        .find(transport)
        .unwrap_or_else(|| panic!("{transport} is not listed: {:?}", ctx.names()));
    if let Err(why) = t.availability() {
        panic!("{transport} is installed but unavailable: {why}");
    }
    wulf::launch::mpi::launch_group(ctx, t.name(), np, &RankTask::Npb(job(class)))
        .unwrap_or_else(|| panic!("{transport} has no launch_group"))
        .and_then(|g| g.into_group_run())
        .map(|g| {
            // The library block comes with every MPI run, as in sweeps.
            let mpi = g.mpi.expect("an MPI run describes its library");
            assert!(!mpi.library_version.is_empty() && !mpi.launcher_command.is_empty());
            g.outcomes
        })
}

/// Run and check MG of class S on `np` ranks of `transport`.
fn check(transport: &str, np: usize) {
    let started = Instant::now();
    let outcomes = group(transport, np, Class::S)
        .unwrap_or_else(|e| panic!("{transport} on {np} ranks failed: {e:#}"));
    eprintln!(
        "{transport} np={np}: {:.2?} in all, {:?}",
        started.elapsed(),
        outcomes.iter().map(|o| o.time_s).collect::<Vec<_>>()
    );
    assert_eq!(outcomes.len(), 1, "one outcome per repetition");
    let o = &outcomes[0];
    assert!(o.verified, "{transport} np={np}: {o:?}");
    assert_eq!(o.class, Class::S);
    assert_eq!(o.nprocs, np);
    assert_eq!(o.proc_grid.iter().product::<usize>(), np);
    assert_eq!(o.backend, transport);
    assert!(
        o.relative_error <= 1e-8,
        "{transport} np={np}: relative error {}",
        o.relative_error
    );
    assert!(o.time_s > 0.0 && o.mop_s > 0.0, "{o:?}");
}

#[test]
fn mg_class_s_on_1_2_4_ranks_of_each_library() {
    let _s = serial();
    for lib in libraries() {
        for np in [1, 2, 4] {
            check(&format!("mpi:{lib}"), np);
        }
    }
}

#[test]
fn mg_class_s_on_2_ranks_over_tcp() {
    let _s = serial();
    for lib in libraries() {
        check(&format!("mpi:{lib}(tcp)"), 2);
    }
}

#[test]
fn a_rank_count_mg_cannot_use_is_a_clear_error() {
    let _s = serial();
    for lib in libraries() {
        let transport = format!("mpi:{lib}");
        for np in [0, 3] {
            let started = Instant::now();
            let e = group(&transport, np, Class::S).expect_err("MG needs 2^k ranks");
            let msg = format!("{e:#}");
            assert!(started.elapsed() < Duration::from_secs(10), "{msg}");
            assert!(msg.contains(&transport), "{msg}");
            if np == 3 {
                assert!(msg.contains("power-of-two"), "{msg}");
            }
            assert_eq!(wulf::error::exit_code_of(&e), 2, "a usage error: {msg}");
        }
    }
}

#[test]
fn a_missing_library_says_what_was_tried() {
    let _s = serial();
    let ctx = RunContext::with_transports(wulf::transport::ExtraOptions {
        mpi: vec![("ghost".into(), "/nonexistent/ghost/mpicc".into())],
        ..Default::default()
    });
    let t = ctx.find("mpi:ghost").expect("listed even when missing");
    let e = wulf::launch::mpi::launch_group(&ctx, t.name(), 2, &RankTask::Npb(job(Class::S)))
        .expect("MPI transports launch groups")
        .expect_err("nothing to run");
    // The options were this context's alone.
    assert!(RunContext::default().find("mpi:ghost").is_none());
    let msg = format!("{e:#}");
    assert!(msg.contains("/nonexistent/ghost/mpicc"), "{msg}");
}

/// Pid of rank `rank` of a running (ready) NPB MPI job, from /proc: a
/// process run as `wulf worker DIR/job.json` (the launcher's command line
/// has more arguments) whose environment holds its rank as the launcher
/// set it.
fn rank_pid(rank: usize) -> Option<i32> {
    let wanted = [
        format!("OMPI_COMM_WORLD_RANK={rank}"),
        format!("PMI_RANK={rank}"),
    ];
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.len() != 3 || args[1] != "worker" || !args[2].contains("wulf-npb-mpi-") {
            continue;
        }
        // Only this test's job: another run's ranks are not ours to stop.
        if !descends_from(pid, std::process::id()) {
            continue;
        }
        let ready = std::path::Path::new(&args[2])
            .parent()
            .is_some_and(|d| d.join("ready").exists());
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let has_rank = env
            .split(|&b| b == 0)
            .any(|v| wanted.iter().any(|w| v == w.as_bytes()));
        if ready && has_rank {
            return Some(pid);
        }
    }
    None
}

/// Run a long job of `kernel` on 2 ranks of `transport` with a 3 s
/// timeout, send `signal` to rank 1 once it runs; the error and how long
/// it took. No rank of the job may be left.
fn signal_rank_1(transport: &str, kernel: wulf::npb::Kernel, signal: i32) -> (String, Duration) {
    let long = RankJob {
        kernel,
        class: Class::W,
        repetitions: 1000,
        timeout_ms: 3000,
    };
    let t = RunContext::default().find(transport).unwrap();
    let signaller = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(pid) = rank_pid(1) {
                std::thread::sleep(Duration::from_millis(300));
                // SAFETY: kill only sends a signal, to a rank this test started.
                unsafe { libc::kill(pid, signal) };
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    });
    let t0 = Instant::now();
    let r =
        wulf::launch::mpi::launch_group(&RunContext::default(), t.name(), 2, &RankTask::Npb(long))
            .unwrap();
    let took = t0.elapsed();
    assert!(signaller.join().unwrap(), "rank 1 of {transport} never ran");
    let e = r.expect_err("a rank was stopped or killed");
    for rank in [0, 1] {
        assert_eq!(rank_pid(rank), None, "rank {rank} of {transport} survived");
    }
    (format!("{e:#}"), took)
}

/// Rank 1 of a `kernel` job over `transport` stopped, then killed: a clear
/// error each time, within the timeout and the launcher's grace.
fn check_rank_faults(transport: &str, kernel: wulf::npb::Kernel) {
    let (msg, took) = signal_rank_1(transport, kernel, libc::SIGSTOP);
    eprintln!("{transport} {kernel}, rank 1 stopped: {took:.2?}: {msg}");
    assert!(msg.contains("made no progress for 3s"), "{msg}");
    // The timeout, then at most the launcher's grace and kill delays.
    assert!(took < Duration::from_secs(20), "{took:?}: {msg}");
    let (msg, took) = signal_rank_1(transport, kernel, libc::SIGKILL);
    eprintln!("{transport} {kernel}, rank 1 killed: {took:.2?}: {msg}");
    assert!(msg.contains("the MPI job"), "{msg}");
    assert!(took < Duration::from_secs(20), "{took:?}: {msg}");
}

#[test]
fn a_rank_that_hangs_or_dies_is_a_clear_error_not_a_hang() {
    let _s = serial();
    for lib in libraries() {
        check_rank_faults(&format!("mpi:{lib}"), wulf::npb::Kernel::Mg);
    }
}

#[test]
fn ep_is_cg_ranks_that_hang_or_die_are_clear_errors_over_one_mpi() {
    let _s = serial();
    // One library is enough for the kernels' part: the fault path is the
    // launcher's and the watchdog's, which MG's test covers for each.
    let Some(lib) = libraries().first().copied() else {
        return;
    };
    for kernel in [
        wulf::npb::Kernel::Ep,
        wulf::npb::Kernel::Is,
        wulf::npb::Kernel::Cg,
    ] {
        check_rank_faults(&format!("mpi:{lib}"), kernel);
    }
}

/// Times of class S and W on 1, 2 and 4 ranks of each library (not a
/// check: run with `--ignored --nocapture` to see them).
#[test]
#[ignore]
fn timings() {
    let _s = serial();
    for lib in libraries() {
        for class in [Class::S, Class::W] {
            for np in [1, 2, 4] {
                let transport = format!("mpi:{lib}");
                let t = RunContext::default().find(&transport).unwrap();
                let job = RankJob {
                    kernel: wulf::npb::Kernel::Mg,
                    class,
                    repetitions: 5,
                    timeout_ms: 60_000,
                };
                let o = wulf::launch::mpi::launch_group(
                    &RunContext::default(),
                    t.name(),
                    np,
                    &RankTask::Npb(job),
                )
                .unwrap()
                .and_then(|g| g.into_group_run())
                .unwrap()
                .outcomes;
                assert!(o.iter().all(|o| o.verified));
                let mut times: Vec<f64> = o.iter().map(|o| o.time_s).collect();
                times.sort_by(f64::total_cmp);
                let best = o.iter().map(|o| o.mop_s).fold(0.0, f64::max);
                eprintln!(
                    "{transport} class {class} np={np}: median {:.4} s, min {:.4} s, best {best:.0} Mop/s",
                    times[times.len() / 2],
                    times[0],
                );
            }
        }
    }
}

fn launcher_args(args: &[&str]) -> RunContext {
    RunContext::with_transports(wulf::transport::ExtraOptions {
        mpi_launcher_args: args.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

#[test]
fn launcher_arguments_reach_the_launcher_and_a_wrong_size_is_caught() {
    let _s = serial();
    if !have("openmpi") {
        return;
    }
    // Open MPI takes the last -np (MPICH refuses a second one), so this
    // job really has 1 rank where 2 were asked for.
    let r = group_in(&launcher_args(&["-np", "1"]), "mpi:openmpi", 2, Class::S);
    let e = r.expect_err("the job has the wrong size");
    let msg = format!("{e:#}");
    assert!(msg.contains("has 1 ranks where 2 were asked for"), "{msg}");
    assert!(msg.contains("-np 2 --oversubscribe -np 1"), "{msg}");
    assert_eq!(wulf::error::exit_code_of(&e), 2, "{msg}");
}

/// Set in the ranks of [`mpi_comm_between_two_ranks`]: the adapter to load.
const RANKS_VAR: &str = "WULF_NPB_COMM_RANKS";

/// `MpiComm` itself, every method, between two real ranks: this test binary
/// runs itself as a 2-rank job of each library (as tests/system/mpi_ffi.rs does).
#[test]
fn mpi_comm_between_two_ranks() {
    if let Ok(adapter) = std::env::var(RANKS_VAR) {
        comm_ranks(std::path::Path::new(&adapter));
        return;
    }
    let _s = serial();
    use wulf::transport::mpi::discover::{builtin, Flavor};
    for (lib, flavor) in [("openmpi", Flavor::OpenMpi), ("mpich", Flavor::Mpich)] {
        if !have(lib) {
            continue;
        }
        let install = builtin(flavor).expect("an installed library is found");
        let adapter = wulf::transport::mpi::build::adapter_library(&install).unwrap();
        let mut cmd = std::process::Command::new(&install.launcher);
        cmd.args(["-np", "2"])
            .args(flavor.base_args())
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &common::test_name(module_path!(), "mpi_comm_between_two_ranks"),
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(RANKS_VAR, &adapter.library)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        let out =
            wulf::transport::mpi::discover::run_with_timeout(&mut cmd, Duration::from_secs(60))
                .unwrap();
        assert!(
            out.status.success(),
            "{lib} ranks failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The body each rank of [`mpi_comm_between_two_ranks`] runs.
fn comm_ranks(adapter: &std::path::Path) {
    use wulf::npb::comm::{Communicator, MpiComm};
    let mpi = wulf::transport::mpi::ffi::Mpi::init(adapter).expect("MPI initialises");
    let comm = MpiComm::new(mpi, "mpi:test");
    assert_eq!(comm.size(), 2);
    assert_eq!(comm.backend_name(), "mpi:test");
    let (me, other) = (comm.rank(), 1 - comm.rank());
    // Far beyond any eager limit: a blocking MPI_Send to oneself, or two
    // plain sends towards each other, would hang here.
    let big: Vec<f64> = (0..1 << 20).map(|i| (i + (me << 21)) as f64).collect();
    let mut got = vec![0.0; big.len()];
    comm.send(me, &big).unwrap();
    comm.send(me, &[1.0]).unwrap();
    comm.recv(me, &mut got).unwrap();
    assert_eq!(got, big, "messages to oneself come back in order");
    let mut one = [0.0];
    comm.recv(me, &mut one).unwrap();
    assert_eq!(one, [1.0]);
    comm.sendrecv(other, &big, other, &mut got).unwrap();
    assert_eq!(
        got[5],
        (5 + (other << 21)) as f64,
        "to == from: MPI_Sendrecv"
    );
    comm.sendrecv(me, &[2.0], me, &mut one).unwrap();
    assert_eq!(one, [2.0]);
    let mut v = [me as f64 + 1.0, -(me as f64)];
    comm.allreduce_sum_f64(&mut v).unwrap();
    assert_eq!(v, [3.0, -1.0]);
    let mut v = [me as f64 + 1.0, -(me as f64)];
    comm.allreduce_max_f64(&mut v).unwrap();
    assert_eq!(v, [2.0, 0.0]);
    let mut all = [0.0; 4];
    comm.allgather_f64(&[me as f64, 10.0], &mut all).unwrap();
    assert_eq!(all, [0.0, 10.0, 1.0, 10.0]);
    // MPI_Alltoallv of MPI_DOUBLE and of MPI_INT (IS's keys): rank r sends
    // r + 1 values to rank 0 and 2 to rank 1.
    let counts_out = [me + 1, 2];
    let counts_in = if me == 0 { [1, 2] } else { [2, 2] };
    let ints: Vec<i32> = (0..me as i32 + 3)
        .map(|i| i32::MAX - 10 * me as i32 - i)
        .collect();
    let mut ints_in = vec![0; counts_in.iter().sum()];
    comm.alltoallv_i32(&ints, &counts_out, &mut ints_in, &counts_in)
        .unwrap();
    let want: Vec<i32> = if me == 0 {
        vec![i32::MAX, i32::MAX - 10, i32::MAX - 11]
    } else {
        vec![i32::MAX - 1, i32::MAX - 2, i32::MAX - 12, i32::MAX - 13]
    };
    assert_eq!(ints_in, want);
    let doubles: Vec<f64> = ints.iter().map(|&k| f64::from(k) + 0.5).collect();
    let mut doubles_in = vec![0.0; ints_in.len()];
    comm.alltoallv_f64(&doubles, &counts_out, &mut doubles_in, &counts_in)
        .unwrap();
    let want: Vec<f64> = want.iter().map(|&k| f64::from(k) + 0.5).collect();
    assert_eq!(doubles_in, want);
    comm.barrier().unwrap();
    // Errors, never hangs: a wrong length, a receive from oneself with
    // nothing sent, a rank that does not exist.
    if me == 0 {
        comm.send(other, &[1.0, 2.0, 3.0]).unwrap();
    } else {
        let mut four = [0.0; 4];
        let e = comm.recv(other, &mut four).unwrap_err().to_string();
        assert!(
            e.contains("mpi:test") && e.contains("24 bytes where 32"),
            "{e}"
        );
    }
    let e = comm.recv(me, &mut one).unwrap_err().to_string();
    assert!(e.contains("sent itself nothing"), "{e}");
    assert!(comm.send(2, &[0.0]).is_err());
    comm.barrier().unwrap();
    comm.into_mpi().finalize().unwrap();
}
