//! The safe MPI API (`wulf::transport::mpi::ffi`) that other modules (the
//! NAS kernels' communicator) build on: every operation, with real ranks.
//!
//! The test compiles the adapter for each installed library, then runs this
//! very test binary as a 2-rank job under that library's launcher; in the
//! ranks (WULF_FFI_RANKS set) the same test exercises the API. A library
//! that is not installed is skipped, unless WULF_REQUIRE_MPI=1.

use std::path::Path;
use std::process::Command;

use wulf::comm::{Communicator, Counted, MpiComm};
use wulf::transport::mpi::build::adapter_library;
use wulf::transport::mpi::discover::{builtin, Flavor};
use wulf::transport::mpi::ffi::{Mpi, ReduceOp, ThreadLevel};

const RANKS_VAR: &str = "WULF_FFI_RANKS";

#[test]
fn every_operation_between_two_ranks() {
    if let Ok(adapter) = std::env::var(RANKS_VAR) {
        ranks(Path::new(&adapter));
        return;
    }
    launch_each("every_operation_between_two_ranks");
}

#[test]
fn nonblocking_messages_of_the_communicator_between_two_ranks() {
    if let Ok(adapter) = std::env::var(RANKS_VAR) {
        nonblocking_ranks(Path::new(&adapter));
        return;
    }
    launch_each("nonblocking_messages_of_the_communicator_between_two_ranks");
}

/// Runs this test binary's test `test` as a 2-rank job under each
/// installed MPI (the ranks see RANKS_VAR).
fn launch_each(test: &str) {
    for flavor in [Flavor::OpenMpi, Flavor::Mpich] {
        let install = match builtin(flavor) {
            Ok(i) => i,
            Err(why) if std::env::var("WULF_REQUIRE_MPI").as_deref() == Ok("1") => {
                panic!("WULF_REQUIRE_MPI=1: {why}")
            }
            Err(why) => {
                eprintln!("skipped: {why}");
                continue;
            }
        };
        let adapter = adapter_library(&install).expect("the adapter builds");
        let mut cmd = Command::new(&install.launcher);
        cmd.args(["-np", "2"])
            .args(flavor.base_args())
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &crate::common::test_name(module_path!(), test),
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(RANKS_VAR, &adapter.library)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        let out = wulf::transport::mpi::discover::run_with_timeout(
            &mut cmd,
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        assert!(
            out.status.success(),
            "{} ranks failed:\n{}\n{}",
            flavor.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The non-blocking calls of the NAS communicator over MPI (MPI_Irecv,
/// MPI_Isend, MPI_Wait through the adapter): NPB's pattern of a posted
/// receive and send, work, then both completed, in rounds of growing
/// length (the last far above the eager limit), then counted.
fn nonblocking_ranks(adapter: &Path) {
    let comm = MpiComm::new(Mpi::init(adapter).expect("MPI initialises"), "mpi");
    let (me, peer) = (comm.rank(), 1 - comm.rank());
    for len in [1usize, 700, 300_000] {
        let out: Vec<f64> = (0..len).map(|i| (me * len + i) as f64).collect();
        let mut inp = vec![0.0; len];
        let send = comm.isend(peer, &out).unwrap();
        let recv = comm.irecv(peer, &mut inp).unwrap();
        assert!(!send.is_deferred() && !recv.is_deferred(), "MPI posts both");
        let busy: f64 = (0..20_000).map(|i| (i as f64).sqrt()).sum();
        assert!(busy > 0.0);
        comm.wait_pair(send, recv).unwrap();
        assert!(inp
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (peer * len + i) as f64));
    }
    // A receive of the wrong length is an error at the wait.
    let mut short = [0.0; 2];
    let send = comm.isend(peer, &[1.0, 2.0, 3.0]).unwrap();
    let recv = comm.irecv(peer, &mut short).unwrap();
    assert!(comm.wait_pair(send, recv).is_err());
    // Counted counts a posted send once.
    let counted = Counted::new(&comm);
    let mut got = [0.0; 4];
    let mine = [me as f64; 4];
    let send = counted.isend(peer, &mine).unwrap();
    let recv = counted.irecv(peer, &mut got).unwrap();
    counted.wait_pair(send, recv).unwrap();
    assert_eq!(got, [peer as f64; 4]);
    assert_eq!((counted.totals().bytes, counted.totals().messages), (32, 1));
    comm.into_mpi().finalize().unwrap();
}

/// The body each rank runs.
fn ranks(adapter: &Path) {
    let mpi = Mpi::init(adapter).expect("MPI initialises");
    assert!(
        Mpi::init(adapter).is_err(),
        "MPI initialises once per process"
    );
    assert_eq!(mpi.size(), 2);
    let (me, other) = (mpi.rank(), 1 - mpi.rank());
    assert!(mpi.on_init_thread());
    assert_eq!(
        mpi.thread_level(),
        ThreadLevel::Single,
        "what wulf asks for"
    );
    assert!(!mpi.library_version().is_empty());
    assert!(mpi.version().starts_with(['3', '4']), "{}", mpi.version());
    // Open MPI counts MPI_Wtime from initialisation: only its order matters.
    let t0 = mpi.wtime();
    assert!(mpi.wtime() >= t0);

    // Bytes, each way.
    let mut buf = [0u8; 5];
    if me == 0 {
        mpi.send(b"hello", other, 7).unwrap();
        mpi.recv(&mut buf, other, 7).unwrap();
        assert_eq!(&buf, b"olleh");
    } else {
        mpi.recv(&mut buf, other, 7).unwrap();
        buf.reverse();
        mpi.send(&buf, other, 7).unwrap();
    }
    // f64 slices, as a halo exchange sends them.
    let halo: Vec<f64> = (0..100).map(|i| (i + 1000 * me) as f64 * 0.5).collect();
    let mut got = vec![0.0f64; 100];
    if me == 0 {
        mpi.send_f64(&halo, other, 8).unwrap();
        mpi.recv_f64(&mut got, other, 8).unwrap();
    } else {
        mpi.recv_f64(&mut got, other, 8).unwrap();
        mpi.send_f64(&halo, other, 8).unwrap();
    }
    assert_eq!(got[3], (3 + 1000 * other) as f64 * 0.5);
    // Shifts (distinct peers in general; with two ranks both are the other).
    let mut shifted = [0.0f64; 2];
    mpi.sendrecv_f64(other, &[me as f64; 2], other, &mut shifted, 11)
        .unwrap();
    assert_eq!(shifted, [other as f64; 2]);
    // A message of the wrong length is an error, not silent garbage.
    if me == 0 {
        mpi.send_f64(&[1.0, 2.0, 3.0], other, 12).unwrap();
    } else {
        let mut four = [0.0f64; 4];
        let e = mpi.recv_f64(&mut four, other, 12).unwrap_err();
        assert!(e.to_string().contains("24 bytes where 32"), "{e}");
    }
    // Both directions at once.
    let out = [me as u8 + 1; 3];
    let mut inp = [0u8; 3];
    mpi.exchange(&out, &mut inp, other, 9).unwrap();
    assert_eq!(inp, [other as u8 + 1; 3]);
    // Windows of non-blocking sends.
    let mut last = [0u8; 4];
    if me == 0 {
        mpi.send_window(&[7, 7, 7, 7], 100, 16, other, 10).unwrap();
    } else {
        mpi.recv_window(&mut last, 100, 16, other, 10).unwrap();
        assert_eq!(last, [7, 7, 7, 7]);
    }
    // Reductions and a barrier.
    let mut v = [me as f64 + 1.0, -(me as f64)];
    mpi.allreduce_f64(&mut v, ReduceOp::Sum).unwrap();
    assert_eq!(v, [3.0, -1.0]);
    let mut v = [me as f64];
    mpi.allreduce_f64(&mut v, ReduceOp::Max).unwrap();
    assert_eq!(v, [1.0]);
    let mut v = [me as f64];
    mpi.allreduce_f64(&mut v, ReduceOp::Min).unwrap();
    assert_eq!(v, [0.0]);
    mpi.barrier().unwrap();
    // An error is an error, not a crash: rank 99 does not exist.
    assert!(mpi.send(b"x", 99, 1).is_err());
    mpi.finalize().unwrap();
}
