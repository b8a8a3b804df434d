#!/usr/bin/env bash
# CPU time of NPB 3.4's serial run against wulf's, on one process: the
# steadier figure on a shared machine, where the wall time of a timed
# section is mostly waiting for a CPU.
#
# Usage:
#   NPB_BIN=target/npb-mpi/src/bin bench/npb_cpu_vs_npb.sh KERNEL CLASS REPS NAME=WULF...
#
#   NPB_BIN  the directory holding NPB's KERNEL.CLASS.x, as
#            bench/npb_kernels_vs_npb.sh builds it (mpif90.openmpi -O3);
#            it runs as an MPI singleton (one process, no mpirun).
#   NAME=WULF  wulf binaries to compare (e.g. main=/tmp/wulf-main
#            branch=target/release/wulf), each run as
#            `wulf npb KERNEL --class CLASS --np 1 --via shm --repetitions 1`.
#
# Per repetition: the one-minute load, then NPB and each wulf in turn
# under /usr/bin/time (user and system CPU seconds of the whole process:
# setup, warm-up step, timed steps, verification). A run that does not
# verify is reported as FAILED.
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
kernel=$1 class=$2 reps=$3
shift 3
: "${NPB_BIN:?set NPB_BIN to the directory holding the NPB binary $kernel.$class.x}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPI_NO_CHECKPOINT=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$reps"); do
    echo "load $(cut -d' ' -f1 /proc/loadavg)"
    (cd "$NPB_BIN" && timeout 600 /usr/bin/time -f "NPB $kernel.$class rep$r cpu_s %U %S" \
        "./$kernel.$class.x" >"$out/npb" 2>"$out/npb.err") || true
    tail -1 "$out/npb.err"
    grep -q "SUCCESSFUL" "$out/npb" || echo "NPB $kernel.$class rep$r FAILED"
    for spec in "$@"; do
        name=${spec%%=*} bin=${spec#*=}
        timeout 600 /usr/bin/time -f "$name $kernel.$class rep$r cpu_s %U %S" \
            "$bin" npb "$kernel" --class "$class" --np 1 --via shm --repetitions 1 \
            >"$out/w" 2>"$out/w.err" || echo "$name $kernel.$class rep$r FAILED"
        tail -1 "$out/w.err"
    done
done
