#!/usr/bin/env bash
# What NPB-MPI sends in its timed section, counted by a PMPI interposer
# (bench/npb_pmpi_count.c, LD_PRELOAD), beside what wulf's run of the same
# kernel, class and process count records (sent_bytes and sent_messages of
# its result, summed over ranks).
#
# Usage:
#   NPB_MPI=/path/to/NPB3.4.x/NPB3.4-MPI bench/npb_traffic.sh [CLASS...]
#
#   NPB_MPI  NPB 3.4's MPI tree; built under target/npb-traffic with
#            Open MPI's wrappers (mpif90, mpicc), -O3, and
#            -fallow-argument-mismatch where gfortran knows it, RAND=randdp
#            (the template's randi8 spells a hexadecimal constant X'...',
#            which gfortran 10 and later reject).
#   CLASS    NPB classes (default: S W).
#   KERNELS  (default "cg lu sp bt ft mg is ep").
#   NPS      process counts (default "2 4"); SP and BT run on squares only.
#   WULF     the wulf binary (default: target/release/wulf).
#   VIA      wulf's transport (default shm; the counts do not depend on it).
#
# The interposer snapshots its counters at every MPI_Wtime call; NPB's
# timers read MPI_Wtime at the start and the stop of the timed section, so
# on each rank two consecutive snapshots bracket it (NPB reads no other
# clock between its timer's start and stop while its per-routine timers
# are off): the last pair whose interval is within 0.01 s and 5% of NPB's
# printed "Time in seconds", and the counts between them are
# the timed section's. Per row: NPB's point-to-point messages and bytes to
# other ranks, its collectives by kind (calls per rank, summed over ranks),
# its totals as wulf counts them (a message per rank and reduction, per
# other rank of an all-to-all with data, per broadcast at its root), and
# wulf's own; "equal" when messages and bytes agree, else "differ" and why
# where the difference is deliberate (`why` below; BT, MG, EP).
set -euo pipefail

cd "$(dirname "$0")/.."
: "${NPB_MPI:?set NPB_MPI to the NPB3.4-MPI directory of NPB 3.4}"
read -r -a KERNEL_LIST <<<"${KERNELS:-cg lu sp bt ft mg is ep}"
read -r -a NP_LIST <<<"${NPS:-2 4}"
CLASSES=("$@")
[ ${#CLASSES[@]} -eq 0 ] && CLASSES=(S W)
WULF=${WULF:-${CARGO_TARGET_DIR:-$PWD/target}/release/wulf}
VIA=${VIA:-shm}
BUILD=$PWD/target/npb-traffic
RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT

for tool in mpif90 mpicc mpirun jq; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install libopenmpi-dev openmpi-bin jq)" >&2; exit 1; }
done
# Open MPI refuses root unless told (CI runs as root).
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$WULF" ] || { echo "build wulf first: cargo build --release" >&2; exit 1; }

rm -rf "$BUILD"
mkdir -p "$BUILD"
cp -r "$NPB_MPI" "$BUILD/src"
[ -f "$BUILD/src/config/make.def" ] || cp "$BUILD/src/config/make.def.template" "$BUILD/src/config/make.def"
find "$BUILD/src" \( -name '*.o' -o -name '*.mod' -o -name '*.x' -o -name timer.flag \) -delete
mkdir -p "$BUILD/src/bin"
FFLAGS_NPB=-O3
if echo 'end' >"$BUILD/probe.f90" && mpif90 -fallow-argument-mismatch -c "$BUILD/probe.f90" -o "$BUILD/probe.o" 2>/dev/null; then
    FFLAGS_NPB="$FFLAGS_NPB -fallow-argument-mismatch"
fi
PRELOAD=$BUILD/npb_pmpi_count.so
mpicc -O2 -Wall -shared -fPIC -o "$PRELOAD" bench/npb_pmpi_count.c

build_npb() {
    local kernel=$1 class=$2
    [ -x "$BUILD/src/bin/$kernel.$class.x" ] && return
    (cd "$BUILD/src" && make -s "$kernel" CLASS="$class" MPIFC=mpif90 MPICC=mpicc FFLAGS="$FFLAGS_NPB" RAND=randdp SHELL=/bin/bash \
        >"$BUILD/build-$kernel-$class.log" 2>&1) ||
        { cat "$BUILD/build-$kernel-$class.log" >&2; echo "building NPB-MPI $kernel class $class failed" >&2; exit 1; }
}

# Whether KERNEL runs on NP processes: SP and BT on squares.
allowed() {
    case $1 in
    sp | bt) local r; r=$(awk -v n="$2" 'BEGIN {r = int(sqrt(n) + 0.5); print (r * r == n)}'); [ "$r" = 1 ] ;;
    *) true ;;
    esac
}

# The interposer's counts of NPB's timed section, summed over ranks:
# "p2p_msgs p2p_bytes allreduce reduce bcast alltoall alltoallv allgather
# barrier wulf_msgs wulf_bytes" (collectives as calls).
run_npb() {
    local kernel=$1 class=$2 np=$3 out secs
    rm -f "$RESULTS"/pmpi.*
    out=$(cd "$BUILD/src/bin" && mpirun -np "$np" --oversubscribe -x LD_PRELOAD="$PRELOAD" \
        -x NPB_PMPI_OUT="$RESULTS/pmpi" "./$kernel.$class.x")
    grep -q "Verification *= *SUCCESSFUL" <<<"$out" || { echo "$out" >&2; echo "NPB $kernel class $class np=$np did not verify" >&2; exit 1; }
    secs=$(awk '/Time in seconds/ {print $NF}' <<<"$out")
    for f in "$RESULTS"/pmpi.*; do
        # Columns after "wtime SECONDS": p2p_msgs p2p_bytes, then calls
        # and bytes of allreduce reduce bcast alltoall alltoallv allgather,
        # barrier calls, wulf_msgs wulf_bytes (npb_pmpi_count.c's KINDS).
        awk -v T="$secs" '
            /^wtime/ { n++; t[n] = $2; for (k = 3; k <= NF; k++) c[n, k] = $k; nf = NF }
            END {
                if (n < 2) { print "fewer than two MPI_Wtime calls" >"/dev/stderr"; exit 1 }
                # The timed section lies between two consecutive
                # MPI_Wtime calls, its timer start and stop (NPB reads no
                # other clock between them while its per-routine timers
                # are off): the last consecutive pair whose interval is
                # within 0.01 s and 5% of the time NPB printed (the
                # slowest rank; an initialisation timed before it can
                # last as long), else the closest.
                best = -1; late = 0
                for (i = 1; i < n; i++) {
                    d = t[i + 1] - t[i] - T; if (d < 0) d = -d
                    if (best < 0 || d < best) { best = d; a = i; b = i + 1 }
                    if (d <= 0.01 + 0.05 * T) late = i
                }
                if (late) { a = late; b = late + 1 }
                else printf "warning: no MPI_Wtime interval near NPB printed %s s\n", T >"/dev/stderr"
                printf "%d %d", c[b, 3] - c[a, 3], c[b, 4] - c[a, 4]
                for (k = 5; k <= 15; k += 2) printf " %d", c[b, k] - c[a, k]
                printf " %d %d %d\n", c[b, 17] - c[a, 17], c[b, 18] - c[a, 18], c[b, 19] - c[a, 19]
            }' "$f"
    done | awk '{for (k = 1; k <= NF; k++) s[k] += $k} END {for (k = 1; k <= NF; k++) printf "%d%s", s[k], (k < NF ? " " : "\n")}'
}

# Why KERNEL's counts differ from NPB-MPI's where wulf differs on purpose,
# printed beside "differ" (nothing for a kernel meant to be equal, so an
# unexplained difference shows bare). Arguments: KERNEL CLASS NP and
# wulf's and NPB's bytes.
why() {
    case $1 in
    bt)
        # NPB's BT sends each solve stage's buffer sized for its largest
        # cell, MAX_CELL_DIM^2 lines (MAX_CELL_DIM = n / sqrt(np) + 1 in
        # every direction of every cell: (sqrt(np) MAX_CELL_DIM)^2 lines
        # a plane), where wulf sends the (n - 2)^2 interior lines; each
        # line is 30 values forward and 5 back, 840 B over the three axes.
        local n steps q cell padded
        case $2 in S) n=12 steps=60 ;; W) n=24 steps=200 ;; A) n=64 steps=200 ;; B) n=102 steps=200 ;; *) n=0 ;; esac
        q=$(awk -v p="$3" 'BEGIN {print int(sqrt(p) + 0.5)}')
        cell=$((n / q + 1))
        padded=$(($4 + 840 * ((q * cell) ** 2 - (n - 2) ** 2) * (q - 1) * steps))
        local verdict=differ
        [ "$padded" = "$5" ] && verdict=equal
        echo "NPB pads each solve's buffers to its largest cell (MAX_CELL_DIM^2 lines of 35 values); wulf's bytes with that padding: $padded, $verdict" ;;
    mg) echo "on levels too coarse for 2 points a rank and axis wulf replicates the grid (one allgather a V-cycle); NPB idles ranks there and sends single points (comm3, comm3_ex)" ;;
    ep) echo "wulf sends each sum with its sum of absolute values (NPB 3.4.2's verification values; 3.4's are the signed sums): 16 B where NPB sends 8" ;;
    esac
}

# wulf's "messages bytes" of the timed section, summed over ranks.
run_wulf() {
    local kernel=$1 class=$2 np=$3 json="$RESULTS/r.json"
    "$WULF" npb "$kernel" --class "$class" --np "$np" --via "$VIA" --repetitions 1 --json "$json" >"$RESULTS/out" 2>&1 ||
        { cat "$RESULTS/out" >&2; echo "wulf $kernel class $class np=$np failed" >&2; exit 1; }
    jq -r '.runs[0].outcomes[0] | "\(.sent_messages // "-") \(.sent_bytes // "-")"' "$json"
}

echo "# NPB-MPI: $NPB_MPI, $(mpif90 --version | head -1), $(mpirun --version | head -1), FFLAGS $FFLAGS_NPB"
echo "# wulf: $WULF, $("$WULF" --version 2>/dev/null), --via $VIA"
echo "# NPB's timed section by the interposer; collectives as calls summed over ranks"
printf '%-3s %-2s %2s | %9s %12s | %5s %5s %5s %5s %5s %5s %5s | %9s %12s | %9s %12s | %s\n' \
    "" "" "np" "p2p msgs" "p2p bytes" "allrd" "red" "bcast" "a2a" "a2av" "allg" "barr" "NPB msgs" "NPB bytes" "wulf msgs" "wulf bytes" ""
for kernel in "${KERNEL_LIST[@]}"; do
    for class in "${CLASSES[@]}"; do
        build_npb "$kernel" "$class"
        for np in "${NP_LIST[@]}"; do
            allowed "$kernel" "$np" || continue
            npb=$(run_npb "$kernel" "$class" "$np")
            wulf=$(run_wulf "$kernel" "$class" "$np")
            read -r pm pb ar re bc aa av ag ba nm nb <<<"$npb"
            read -r wm wb <<<"$wulf"
            verdict="differ: $(why "$kernel" "$class" "$np" "$wb" "$nb")"
            [ "$nm" = "$wm" ] && [ "$nb" = "$wb" ] && verdict=equal
            printf '%-3s %-2s %2s | %9s %12s | %5s %5s %5s %5s %5s %5s %5s | %9s %12s | %9s %12s | %s\n' \
                "${kernel^^}" "$class" "$np" "$pm" "$pb" "$ar" "$re" "$bc" "$aa" "$av" "$ag" "$ba" "$nm" "$nb" "$wm" "$wb" "$verdict"
        done
    done
done
