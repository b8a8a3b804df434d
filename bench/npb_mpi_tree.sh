# Sourced by bench/npb_kernels_vs_npb.sh and bench/npb_vs_mpi.sh: NPB 3.4's
# MPI tree copied and built by its own makefiles with Open MPI's wrappers.
#
# npb_mpi_tree SRC BUILD MPI: unless KEEP_BUILD=1 finds a build there,
# copies SRC to BUILD/src, with NPB's make.def.template as the
# configuration when the tree has none (its flags: -O3 for both languages);
# then sets NPB_MPI_FFLAGS (NPB_FFLAGS, default -O3) with the flags
# mpif90.MPI needs for NPB 3.4 and knows: gfortran 10 and later reject
# NPB's type-generic MPI calls (EP's mpi_allreduce of a scalar and of an
# array) unless told -fallow-argument-mismatch, and the template's random
# generator randi8 (a constant spelt X'...') unless told
# -fallow-invalid-boz; neither changes the generated code. The flags go on
# make's command line, so that a tree with its own make.def builds too.
#
# npb_mpi_build BUILD MPI KERNEL CLASS: NPB's KERNEL of CLASS built in
# BUILD/src (skipped when KEEP_BUILD=1 finds its binary); its log in BUILD.
npb_mpi_tree() {
    local src=$1 build=$2 mpi=$3 flag
    if [ "${KEEP_BUILD:-0}" != 1 ] || [ ! -d "$build/src/bin" ]; then
        rm -rf "$build"
        mkdir -p "$build"
        cp -r "$src" "$build/src"
        [ -f "$build/src/config/make.def" ] ||
            cp "$build/src/config/make.def.template" "$build/src/config/make.def"
        mkdir -p "$build/src/bin"
    fi
    NPB_MPI_FFLAGS=${NPB_FFLAGS:--O3}
    echo 'end' >"$build/probe.f90"
    for flag in -fallow-argument-mismatch -fallow-invalid-boz; do
        if "mpif90.$mpi" "$flag" -c "$build/probe.f90" -o "$build/probe.o" 2>/dev/null; then
            NPB_MPI_FFLAGS="$NPB_MPI_FFLAGS $flag"
        fi
    done
}

npb_mpi_build() {
    local build=$1 mpi=$2 kernel=$3 class=$4
    [ "${KEEP_BUILD:-0}" = 1 ] && [ -x "$build/src/bin/$kernel.$class.x" ] && return
    (
        cd "$build/src/${kernel^^}"
        make -s clean >/dev/null 2>&1 || true
        cd ..
        # NPB's makefiles use bash substitutions in their recipes.
        make -s "$kernel" CLASS="$class" MPIFC="mpif90.$mpi" MPICC="mpicc.$mpi" FFLAGS="$NPB_MPI_FFLAGS" \
            SHELL=/bin/bash >"$build/build-$kernel-$class.log" 2>&1
    ) || { cat "$build/build-$kernel-$class.log" >&2; echo "building NPB $kernel class $class failed" >&2; exit 1; }
}

# npb_rounds KERNEL CLASS NP RUN_NPB RUN_WULF VIA...: REPS interleaved
# rounds on NP ranks, each NPB's run (RUN_NPB KERNEL CLASS NP prints its
# Mop/s) then wulf's over each VIA (RUN_WULF KERNEL CLASS NP VIA), so that
# drift in the machine's load hits both alike; a line per round on stdout.
# Leaves NPB's figures in ROUND_NPB, wulf's per transport (space-separated)
# in ROUND_WULF and the one-minute load before each round in ROUND_LOADS.
npb_rounds() {
    local kernel=$1 class=$2 np=$3 run_npb=$4 run_wulf=$5 rep via n w line
    shift 5
    ROUND_NPB=() ROUND_LOADS=()
    declare -gA ROUND_WULF=()
    ROUND_WULF=()
    for rep in $(seq 1 "$REPS"); do
        ROUND_LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
        n=$("$run_npb" "$kernel" "$class" "$np")
        ROUND_NPB+=("$n")
        line=$(printf '%s %s np=%s rep %d: NPB %9.2f' "${kernel^^}" "$class" "$np" "$rep" "$n")
        for via in "$@"; do
            w=$("$run_wulf" "$kernel" "$class" "$np" "$via")
            ROUND_WULF[$via]="${ROUND_WULF[$via]:-} $w"
            line+=$(printf '   wulf %s %9.2f' "$via" "$w")
        done
        echo "$line   load ${ROUND_LOADS[-1]}"
    done
}
