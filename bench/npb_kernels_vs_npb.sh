#!/usr/bin/env bash
# wulf's NAS kernels (CG EP IS MG LU SP FT) against NPB 3.4's own MPI
# codes, serial (np 1) and parallel, on this machine: one table of ratios.
#
# Usage:
#   NPB_DIR=/path/to/NPB3.4.x/NPB3.4-MPI bench/npb_kernels_vs_npb.sh [CLASS...]
#
#   NPB_DIR  an NPB 3.4 MPI tree (the directory holding CG/, EP/, IS/,
#            common/, config/ and sys/). wulf does not ship NPB's source:
#            get the NPB 3.4 release from NASA and unpack it. The tree is
#            copied and built unmodified with NPB's own makefiles (MG has
#            its own script, bench/npb_mg_vs_fortran.sh).
#   CLASS    NPB classes to run (default: S A).
#   NPS      process counts (default: each kernel's own, "1 2", or "1 4"
#            for SP, whose multi-partition takes square counts).
#   KERNELS  kernels (default "cg ep is mg lu sp ft", every kernel wulf
#            has; BT is added when wulf runs it).
#   KEEP_BUILD  when 1, reuse the NPB binaries an earlier run built under
#            target/npb-mpi (the same NPB_DIR and flags) instead of
#            copying and building the tree again.
#   REPS     runs of each side per kernel, class and count, interleaved
#            (default 3).
#   VIA      wulf transports to compare, each against the same NPB run
#            (default "mpi:openmpi shm": the first links wulf's ranks by
#            the same library as NPB's, so the ratio is that of the kernels'
#            code; the second is wulf's own shared memory).
#   MPI      Open MPI's compiler wrappers and launcher by suffix (default
#            "openmpi": mpif90.openmpi, mpicc.openmpi, mpirun.openmpi).
#   WULF     the wulf binary (default: the release build of this tree;
#            build it first with cargo build --release).
#
# Each NPB binary is built once per kernel and class (NPB 3.4 takes the
# process count at run time), then for every count the script alternates
# an NPB run with one wulf run per transport, so that drift in the
# machine's load hits both alike. Each side prints NPB's Mop/s total of
# its timed section (wall time); only verified runs count (NPB's
# "Verification = SUCCESSFUL", wulf's verified result: wulf exits non-zero
# otherwise). Prints the median of each side and the ratio of medians
# wulf/NPB, then a summary table.
set -euo pipefail

cd "$(dirname "$0")/.."
: "${NPB_DIR:?set NPB_DIR to an NPB 3.4 MPI tree (the directory holding CG/, EP/, IS/ and common/)}"
MPI=${MPI:-openmpi}
REPS=${REPS:-3}
read -r -a KERNEL_LIST <<<"${KERNELS:-cg ep is mg lu sp ft}"
read -r -a VIA_LIST <<<"${VIA:-mpi:$MPI shm}"
CLASSES=("$@")
[ ${#CLASSES[@]} -eq 0 ] && CLASSES=(S A)

for d in common sys "${KERNEL_LIST[@]^^}"; do
    [ -d "$NPB_DIR/$d" ] || { echo "missing $NPB_DIR/$d" >&2; exit 1; }
done
for tool in "mpif90.$MPI" "mpicc.$MPI" "mpirun.$MPI" jq; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install openmpi-bin libopenmpi-dev gfortran jq)" >&2; exit 1; }
done

BUILD=$PWD/target/npb-mpi
WULF=${WULF:-${CARGO_TARGET_DIR:-$PWD/target}/release/wulf}
RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT
# Open MPI refuses root unless told; the tests of this project run as root.
# MPI_NO_CHECKPOINT=1 keeps the checkpointing forks of NPB (github
# igankevich/npb-checkpoints) from writing checkpoints in the timed loop;
# an unmodified NPB ignores it.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPI_NO_CHECKPOINT=1

# The process counts of a kernel: NPS, else its own rule.
nps_of() {
    if [ -n "${NPS:-}" ]; then
        echo "$NPS"
    elif [ "$1" = sp ] || [ "$1" = bt ]; then
        echo "1 4"
    else
        echo "1 2"
    fi
}

# A fresh copy of NPB's tree, built by its own makefiles with Open MPI's
# wrappers (bench/npb_mpi_tree.sh).
# shellcheck source=bench/npb_mpi_tree.sh
source bench/npb_mpi_tree.sh
prepare_tree() {
    npb_mpi_tree "$NPB_DIR" "$BUILD" "$MPI"
}

build_npb() {
    npb_mpi_build "$BUILD" "$MPI" "$1" "$2"
}

# Mop/s total of one run of NPB's KERNEL.CLASS.x on NP ranks.
run_npb() {
    local kernel=$1 class=$2 np=$3 out
    out=$(cd "$BUILD/src/bin" && "mpirun.$MPI" -np "$np" --oversubscribe "./$kernel.$class.x")
    grep -q "Verification *= *SUCCESSFUL" <<<"$out" || { echo "$out" >&2; echo "NPB $kernel class $class np=$np did not verify" >&2; exit 1; }
    awk '/Mop\/s total/ {print $NF}' <<<"$out"
}

# Mop/s of one verified run of wulf's KERNEL of CLASS on NP ranks over VIA.
run_wulf() {
    local kernel=$1 class=$2 np=$3 via=$4 json="$RESULTS/r.json"
    "$WULF" npb "$kernel" --class "$class" --np "$np" --via "$via" --repetitions 1 \
        --json "$json" >"$RESULTS/out" 2>&1 || { cat "$RESULTS/out" >&2; echo "wulf $kernel class $class np=$np over $via failed" >&2; exit 1; }
    jq -r '.runs[0].outcomes[0] | select(.verified) | .mop_s' "$json"
}

median() {
    sort -g | awk '{v[NR]=$1} END {printf "%.2f", (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
echo "# NPB:  $NPB_DIR, $("mpif90.$MPI" --version | head -1), $("mpirun.$MPI" --version | head -1)"
echo "# wulf: $("$WULF" --version 2>/dev/null || echo "$WULF"), $(rustc --version)"
[ -x "$WULF" ] || { echo "build wulf first: cargo build --release" >&2; exit 1; }
prepare_tree

summary=()
for kernel in "${KERNEL_LIST[@]}"; do
    for class in "${CLASSES[@]}"; do
        build_npb "$kernel" "$class"
        read -r -a NP_LIST <<<"$(nps_of "$kernel")"
        for np in "${NP_LIST[@]}"; do
            npb_rounds "$kernel" "$class" "$np" run_npb run_wulf "${VIA_LIST[@]}"
            n_med=$(printf '%s\n' "${ROUND_NPB[@]}" | median)
            row=$(printf '%-3s %-2s %3s %10s' "${kernel^^}" "$class" "$np" "$n_med")
            for via in "${VIA_LIST[@]}"; do
                # shellcheck disable=SC2086 # the list of numbers, split
                w_med=$(printf '%s\n' ${ROUND_WULF[$via]} | median)
                row+=$(printf ' %10s %6.2f' "$w_med" "$(awk -v w="$w_med" -v n="$n_med" 'BEGIN {print w / n}')")
            done
            row+=$(printf ' %6s' "$(printf '%s\n' "${ROUND_LOADS[@]}" | median)")
            summary+=("$row")
        done
    done
done

echo
header=$(printf '%-3s %-2s %3s %10s' "" "" "np" "NPB Mop/s")
for via in "${VIA_LIST[@]}"; do
    header+=$(printf ' %10s %6s' "${via:0:10}" "ratio")
done
header+=$(printf ' %6s' "load")
echo "# medians of $REPS interleaved runs of Mop/s total (NPB's operation count over the wall time"
echo "# of the timed section); ratio = wulf / NPB; load = the one-minute load average before each"
echo "# pair, median (this machine has $(nproc) CPUs)"
echo "$header"
printf '%s\n' "${summary[@]}"
