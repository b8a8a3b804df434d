#!/usr/bin/env bash
# wulf's NAS kernels on one process against NPB 3.4's serial build, in
# interleaved pairs on this machine: the ratio wulf / NPB of the median
# Mop/s per kernel and class.
#
# Usage:
#   NPB_OMP=/path/to/NPB3.4.x/NPB3.4-OMP bench/npb_vs_fortran.sh [CLASS...]
#
#   NPB_OMP  NPB 3.4's OpenMP tree (the directory holding LU/, SP/, FT/,
#            common/, config/ and sys/). NPB 3.4 ships no serial version:
#            its Changes.log says to build the OpenMP one with OpenMP
#            disabled, which this does in a copy under target/npb-serial:
#            config/make.def from make.def.template with FFLAGS=-O3 and no
#            -fopenmp, and the template's RAND=randi8 (NPB's default
#            generator) with -fallow-invalid-boz: randi8 spells a
#            hexadecimal constant X'...', which gfortran 10 and later reject
#            without it (the flag changes no code). Until 2026-11-29 23:24
#            this script built RAND=randdp, the same numbers 5-10 times
#            slower: NPB's EP, which is little else, read 7-9 Mop/s.
#   CLASS    NPB classes (default: W A).
#   KERNELS  (default every kernel: "lu sp ft bt cg mg is ep"; IS is C in
#            NPB, built with CFLAGS -O3).
#   REPS     pairs per kernel and class (default 5): NPB, then wulf, in
#            turn, so that drift in the machine's load hits both alike.
#   WULF     the wulf binary (default: target/release/wulf, the profile
#            wulf ships with; build it with cargo build --release).
#   KEEP_BUILD  when 1, reuse binaries an earlier run built.
#   NPB_MPI  NPB 3.4's MPI tree (NPB3.4-MPI); when set, each kernel and
#            class also runs at the process counts of NPS against NPB-MPI
#            (built under target/npb-mpi with Open MPI's mpif90 and mpicc,
#            FFLAGS -O3, as bench/npb_kernels_vs_npb.sh builds it), wulf
#            over each transport of VIA, interleaved as above.
#   NPS      parallel process counts (default "2 4"; SP and BT, whose
#            multi-partition takes square counts, run only the squares).
#   VIA      wulf's transports against NPB-MPI (default "shm mpi:openmpi":
#            wulf's own shared memory, and Open MPI, NPB-MPI's library).
#
# Each side prints NPB's Mop/s total of its timed section (NPB's operation
# count over the wall time); only verified runs count (NPB's
# "Verification = SUCCESSFUL"; wulf exits non-zero otherwise). wulf runs
# `wulf npb KERNEL --class CLASS --np 1 --via shm --repetitions 1`.
# On a busy machine the wall time is mostly waiting for a CPU, so each
# pair also gives the ratio of CPU times (user + system of the whole
# process under /usr/bin/time, setup and verification included on both
# sides): NPB's over wulf's, above 1 when wulf computes faster. The
# parallel columns are wall-time ratios of Mop/s only: a waiting rank
# spins or yields on both sides (Open MPI's progress loop held 73-77% of
# either side's CPU samples at LU W np 2), so CPU time counts the waits.
set -euo pipefail

cd "$(dirname "$0")/.."
: "${NPB_OMP:?set NPB_OMP to the NPB3.4-OMP directory of NPB 3.4}"
REPS=${REPS:-5}
read -r -a KERNEL_LIST <<<"${KERNELS:-lu sp ft bt cg mg is ep}"
CLASSES=("$@")
[ ${#CLASSES[@]} -eq 0 ] && CLASSES=(W A)
WULF=${WULF:-${CARGO_TARGET_DIR:-$PWD/target}/release/wulf}
BUILD=$PWD/target/npb-serial
RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT
cpu_seconds() {
    awk '{print $1 + $2}' "$1"
}

for tool in gfortran gcc jq /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install gfortran jq)" >&2; exit 1; }
done
[ -x "$WULF" ] || { echo "build wulf first: cargo build --release" >&2; exit 1; }

if [ "${KEEP_BUILD:-0}" != 1 ] || [ ! -d "$BUILD/src/bin" ]; then
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    cp -r "$NPB_OMP" "$BUILD/src"
    boz=
    echo 'end' >"$BUILD/probe.f90"
    gfortran -fallow-invalid-boz -c "$BUILD/probe.f90" -o "$BUILD/probe.o" 2>/dev/null && boz=" -fallow-invalid-boz"
    sed -e "s/^FFLAGS.*/FFLAGS	= -O3$boz/" -e 's/^CFLAGS.*/CFLAGS	= -O3/' -e 's/^RAND.*/RAND   = randi8/' \
        "$BUILD/src/config/make.def.template" >"$BUILD/src/config/make.def"
    mkdir -p "$BUILD/src/bin"
    # Objects and binaries a build of the tree left are built again with
    # this make.def; NPB_TIMER_FLAG's file (timer.flag) turns on NPB's
    # per-routine timers, which cost it time inside the timed section: a
    # tree used for profiling may hold one.
    find "$BUILD/src" \( -name '*.o' -o -name '*.mod' -o -name '*.x' -o -name timer.flag \) -delete
fi

build_npb() {
    local kernel=$1 class=$2
    [ "${KEEP_BUILD:-0}" = 1 ] && [ -x "$BUILD/src/bin/$kernel.$class.x" ] && return
    # NPB's makefiles use bash substitutions in their recipes.
    (cd "$BUILD/src" && make -s "$kernel" CLASS="$class" SHELL=/bin/bash >"$BUILD/build-$kernel-$class.log" 2>&1) ||
        { cat "$BUILD/build-$kernel-$class.log" >&2; echo "building NPB $kernel class $class failed" >&2; exit 1; }
}

# Mop/s total of one verified run of NPB's KERNEL.CLASS.x; its CPU seconds
# in $RESULTS/npb.cpu.
run_npb() {
    (cd "$BUILD/src/bin" && /usr/bin/time -f "%U %S" -o "$RESULTS/npb.cpu" "./$1.$2.x") | awk -v what="NPB $1 class $2" '
        /Verification *= *SUCCESSFUL/ { ok = 1 }
        /Mop\/s total/ { mops = $NF }
        END { if (!ok) { print what " did not verify" >"/dev/stderr"; exit 1 } print mops }'
}

# Mop/s of one verified run of wulf's KERNEL of CLASS on one process; its
# CPU seconds in $RESULTS/wulf.cpu.
run_wulf() {
    local json="$RESULTS/r.json"
    /usr/bin/time -f "%U %S" -o "$RESULTS/wulf.cpu" "$WULF" npb "$1" --class "$2" --np 1 --via shm --repetitions 1 --json "$json" >"$RESULTS/out" 2>&1 ||
        { cat "$RESULTS/out" >&2; echo "wulf $1 class $2 failed" >&2; exit 1; }
    jq -r '.runs[0].outcomes[0] | select(.verified) | .mop_s' "$json"
}

median() {
    sort -g | awk '{v[NR]=$1} END {printf "%.2f", (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
echo "# NPB:  $NPB_OMP, serial (OpenMP off), $(gfortran --version | head -1), $(grep -E '^(FFLAGS|RAND)' "$BUILD/src/config/make.def" | tr -s ' \t' ' ' | paste -sd, -)"
echo "# wulf: $WULF, $("$WULF" --version 2>/dev/null), $(rustc --version)"
[ -n "${NPB_MPI:-}" ] && source bench/npb_vs_mpi.sh

summary=()
for kernel in "${KERNEL_LIST[@]}"; do
    for class in "${CLASSES[@]}"; do
        build_npb "$kernel" "$class"
        [ -n "${NPB_MPI:-}" ] && build_npb_mpi "$kernel" "$class"
        npb=() wulf=() ratios=() cpu_ratios=() loads=()
        for rep in $(seq 1 "$REPS"); do
            loads+=("$(cut -d' ' -f1 /proc/loadavg)")
            n=$(run_npb "$kernel" "$class")
            w=$(run_wulf "$kernel" "$class")
            npb+=("$n") wulf+=("$w")
            ratios+=("$(awk -v w="$w" -v n="$n" 'BEGIN {print w / n}')")
            nc=$(cpu_seconds "$RESULTS/npb.cpu") wc=$(cpu_seconds "$RESULTS/wulf.cpu")
            cpu_ratios+=("$(awk -v w="$wc" -v n="$nc" 'BEGIN {print n / w}')")
            printf '%s %s pair %d: NPB %9.2f Mop/s %6.2f s cpu  wulf %9.2f Mop/s %6.2f s cpu  ratio %5.2f  cpu ratio %5.2f  load %s\n' \
                "${kernel^^}" "$class" "$rep" "$n" "$nc" "$w" "$wc" "${ratios[-1]}" "${cpu_ratios[-1]}" "${loads[-1]}"
        done
        row=$(printf '%-3s %-2s %10s %10s %6.2f %6.2f %6.2f %6.2f %6s' "${kernel^^}" "$class" \
            "$(printf '%s\n' "${npb[@]}" | median)" "$(printf '%s\n' "${wulf[@]}" | median)" \
            "$(printf '%s\n' "${ratios[@]}" | sort -g | head -1)" "$(printf '%s\n' "${ratios[@]}" | median)" \
            "$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)" "$(printf '%s\n' "${cpu_ratios[@]}" | median)" \
            "$(printf '%s\n' "${loads[@]}" | median)")
        [ -n "${NPB_MPI:-}" ] && row+=$(parallel_columns "$kernel" "$class")
        summary+=("$row")
    done
done

echo
echo "# $REPS interleaved pairs (NPB serial, wulf np=1 over shm) of Mop/s total; NPB and wulf:"
echo "# medians; ratio = wulf / NPB of each pair: min, median, max; cpu = NPB's CPU time"
echo "# over wulf's, median; load = the one-minute load average before each pair, median"
echo "# (this machine has $(nproc) CPUs)"
[ -n "${NPB_MPI:-}" ] && parallel_legend
printf '%-3s %-2s %10s %10s %6s %6s %6s %6s %6s%s\n' "" "" "NPB Mop/s" "wulf Mop/s" "min" "median" "max" "cpu" "load" \
    "$([ -n "${NPB_MPI:-}" ] && parallel_header)"
printf '%s\n' "${summary[@]}"
