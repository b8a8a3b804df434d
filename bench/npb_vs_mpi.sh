# Sourced by bench/npb_vs_fortran.sh when NPB_MPI is set: wulf at 2 and 4
# processes against NPB 3.4's own MPI build, interleaved run by run.
#
# NPB_MPI's tree is copied to target/npb-mpi and built by NPB's makefiles
# with Open MPI's wrappers (mpif90.openmpi, mpicc.openmpi) and -O3
# (bench/npb_mpi_tree.sh, shared with bench/npb_kernels_vs_npb.sh, which
# builds in the same place: KEEP_BUILD reuses either's binaries). For each
# process count the script runs NPB-MPI under mpirun, then wulf once over
# each transport of VIA, REPS times, and prints the ratio wulf / NPB of the
# median Mop/s per transport.
# Uses BUILD_MPI, REPS, RESULTS, WULF and median() of the caller.

MPI_SUFFIX=${MPI:-openmpi}
read -r -a MPI_VIAS <<<"${VIA:-shm mpi:$MPI_SUFFIX}"
read -r -a MPI_NPS <<<"${NPS:-2 4}"
BUILD_MPI=$PWD/target/npb-mpi
# Open MPI refuses root unless told; MPI_NO_CHECKPOINT=1 keeps the
# checkpointing forks of NPB from writing checkpoints in the timed loop.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPI_NO_CHECKPOINT=1
for tool in "mpif90.$MPI_SUFFIX" "mpicc.$MPI_SUFFIX" "mpirun.$MPI_SUFFIX"; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
done
echo "# NPB-MPI: $NPB_MPI, $("mpif90.$MPI_SUFFIX" --version | head -1), $("mpirun.$MPI_SUFFIX" --version | head -1)"

# shellcheck source=bench/npb_mpi_tree.sh
source bench/npb_mpi_tree.sh
npb_mpi_tree "$NPB_MPI" "$BUILD_MPI" "$MPI_SUFFIX"

# The process counts KERNEL runs at: SP and BT only the square ones.
mpi_nps_of() {
    local np
    for np in "${MPI_NPS[@]}"; do
        if [ "$1" != sp ] && [ "$1" != bt ] || [ "$np" = 4 ] || [ "$np" = 9 ] || [ "$np" = 16 ]; then
            echo "$np"
        fi
    done
}

build_npb_mpi() {
    npb_mpi_build "$BUILD_MPI" "$MPI_SUFFIX" "$1" "$2"
}

# Mop/s total of one verified run of NPB-MPI's KERNEL.CLASS.x on NP ranks.
run_npb_mpi() {
    (cd "$BUILD_MPI/src/bin" && "mpirun.$MPI_SUFFIX" -np "$3" --oversubscribe "./$1.$2.x") |
        awk -v what="NPB-MPI $1 class $2 np=$3" '
        /Verification *= *SUCCESSFUL/ { ok = 1 }
        /Mop\/s total/ { mops = $NF }
        END { if (!ok) { print what " did not verify" >"/dev/stderr"; exit 1 } print mops }'
}

# Mop/s of one verified run of wulf's KERNEL of CLASS on NP ranks over VIA.
run_wulf_np() {
    local json="$RESULTS/p.json"
    "$WULF" npb "$1" --class "$2" --np "$3" --via "$4" --repetitions 1 --json "$json" >"$RESULTS/pout" 2>&1 ||
        { cat "$RESULTS/pout" >&2; echo "wulf $1 class $2 np=$3 over $4 failed" >&2; exit 1; }
    jq -r '.runs[0].outcomes[0] | select(.verified) | .mop_s' "$json"
}

# The lowest and highest per-round ratio wulf / NPB-MPI over VIA, as
# "MIN-MAX", from npb_rounds' ROUND_NPB and ROUND_WULF: on 2 CPUs shared
# with other work single rounds of one kernel spread 5x (LU W np 2 at load
# 5.5-8.3: 0.52-3.81), so a ratio of medians means little without it.
round_spread() {
    # shellcheck disable=SC2086 # the list of numbers, split
    paste <(printf '%s\n' "${ROUND_NPB[@]}") <(printf '%s\n' ${ROUND_WULF[$1]}) |
        awk '{ r = $2 / $1; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r }
             END { printf "%.2f-%.2f", lo, hi }'
}

# The parallel columns of KERNEL and CLASS: for each count of NPS and
# transport of VIA, the ratio wulf / NPB-MPI of the median Mop/s ("-"
# where the kernel does not run at that count). Each round's figures go to
# stderr as they come, then the rounds' spread and load.
parallel_columns() {
    local kernel=$1 class=$2 np via rep n w cols="" allowed spread
    allowed=" $(mpi_nps_of "$kernel" | tr '\n' ' ')"
    for np in "${MPI_NPS[@]}"; do
        if [[ "$allowed" != *" $np "* ]]; then
            for via in "${MPI_VIAS[@]}"; do cols+=$(printf ' %6s' -); done
            continue
        fi
        npb_rounds "$kernel" "$class" "$np" run_npb_mpi run_wulf_np "${MPI_VIAS[@]}" >&2
        n=$(printf '%s\n' "${ROUND_NPB[@]}" | median)
        spread=""
        for via in "${MPI_VIAS[@]}"; do
            spread+=" $via $(round_spread "$via"),"
            # shellcheck disable=SC2086 # the list of numbers, split
            w=$(printf '%s\n' ${ROUND_WULF[$via]} | median)
            cols+=$(printf ' %6.2f' "$(awk -v w="$w" -v n="$n" 'BEGIN {print w / n}')")
        done
        echo "${kernel^^} $class np=$np: NPB-MPI median $n Mop/s; wulf / NPB-MPI per round (min-max):${spread%,}; load median $(printf '%s\n' "${ROUND_LOADS[@]}" | median)" >&2
    done
    echo "$cols"
}

# The parallel columns' heading, e.g. " np2:shm np2:mpi np4:shm np4:mpi".
parallel_header() {
    local np via
    for np in "${MPI_NPS[@]}"; do
        for via in "${MPI_VIAS[@]}"; do printf ' %6s' "$np:${via:0:3}"; done
    done
}

parallel_legend() {
    echo "# N:via = wulf on N processes over each of ${MPI_VIAS[*]} against NPB-MPI on N"
    echo "# (mpirun.$MPI_SUFFIX): ratio of the median Mop/s of $REPS interleaved rounds; - where"
    echo "# the kernel does not run at N (SP and BT: square counts)"
}
