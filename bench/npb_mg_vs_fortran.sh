#!/usr/bin/env bash
# wulf's NAS MG against NPB's own Fortran MG, serial, on this machine.
#
# Usage:
#   NPB_DIR=/path/to/NPB3.4.x/NPB3.4-SER bench/npb_mg_vs_fortran.sh [CLASS...] 
#
#   NPB_DIR  an NPB 3.4 tree for one version (NPB3.4-SER, or NPB3.4-OMP,
#            which builds serial without -fopenmp): it must hold
#            MG/mg.f90, MG/mg_data.f90 and common/{randdpvec,timers,
#            print_results}.f90. wulf does not ship NPB's source: get the
#            NPB 3.4 release from NASA and unpack it.
#   CLASS    NPB classes to run (default: W A).
#   REPS     runs of each side per class, interleaved (default 5).
#   FC       Fortran compiler (default gfortran); FFLAGS (default -O3, as
#            NPB's make.def for gfortran).
#
# Builds NPB MG per class with its own npbparams.h (what NPB's setparams
# would write for a serial build), builds wulf's MG in release mode, then
# alternates Fortran and Rust runs so that drift in the machine's load
# hits both alike. Each side prints NPB's Mop/s of the timed section
# (58 * nit * n^3 / t, wall time); only verified runs count. Prints best
# and median.
#
# On a shared machine wall time measures the load as much as the code, so
# each side also reports "cpu" Mop/s: the same operation count over the
# CPU time of the timed section (for Fortran, a second build of NPB MG
# whose timer reads the process CPU clock instead of the wall clock).
set -euo pipefail

cd "$(dirname "$0")/.."
: "${NPB_DIR:?set NPB_DIR to an NPB 3.4 tree (the directory holding MG/ and common/)}"
FC=${FC:-gfortran}
FFLAGS=${FFLAGS:--O3}
REPS=${REPS:-5}
CLASSES=("$@")
[ ${#CLASSES[@]} -eq 0 ] && CLASSES=(W A)

for f in MG/mg.f90 MG/mg_data.f90 common/randdpvec.f90 common/timers.f90 common/print_results.f90; do
    [ -f "$NPB_DIR/$f" ] || { echo "missing $NPB_DIR/$f" >&2; exit 1; }
done
command -v "$FC" >/dev/null || { echo "$FC not found (apt-get install gfortran)" >&2; exit 1; }

BUILD=target/npb-fortran
mkdir -p "$BUILD"

# Grid levels (log2 n) and iterations of each class (NPB 3.4).
class_params() {
    case "$1" in
        S) echo "5 4" ;; W) echo "7 4" ;; A) echo "8 4" ;; B) echo "8 20" ;; C) echo "9 20" ;;
        *) echo "unknown class $1" >&2; exit 1 ;;
    esac
}

build_fortran() {
    local class=$1 dir="$BUILD/$1"
    read -r lt nit <<<"$(class_params "$class")"
    local n=$((1 << lt))
    mkdir -p "$dir"
    cat >"$dir/npbparams.h" <<EOF
! CLASS = $class, serial: written by wulf's bench/npb_mg_vs_fortran.sh
      integer nx_default, ny_default, nz_default
      parameter (nx_default=$n, ny_default=$n, nz_default=$n)
      integer nit_default, lm, lt_default
      parameter (nit_default=$nit, lm = $lt, lt_default=$lt)
      integer debug_default
      parameter (debug_default=0)
      integer ndim1, ndim2, ndim3
      parameter (ndim1 = $lt, ndim2 = $lt, ndim3 = $lt)
      integer kind2
      parameter (kind2 = 4)
      logical  convertdouble
      parameter (convertdouble = .false.)
      character compiletime*11
      parameter (compiletime='$(date +%d\ %b\ %Y)')
      character npbversion*5
      parameter (npbversion='3.4')
      character cs1*8, cs2*8, cs3*6, cs4*6, cs5*16, cs6*16, cs7*6
      parameter (cs1='$FC', cs2='$FC', cs3='(none)', cs4='(none)')
      parameter (cs5='$FFLAGS', cs6='$FFLAGS', cs7='randdp')
EOF
    # Empty region hooks, which some redistributed copies of NPB call.
    for hook in annotate_init annotate_term roi_begin roi_end; do
        if grep -qi "call $hook" "$NPB_DIR/MG/mg.f90"; then
            printf 'subroutine %s\nend\n' "$hook"
        fi
    done >"$dir/wulf_hooks.f90"
    # NPB's wtime.c reads the wall clock; ours are in Fortran: the wall
    # clock for NPB's figure, the process CPU clock for the "cpu" figure.
    printf '%s\n' "subroutine wtime(t)" "  double precision t" "  integer(8) count, rate" \
        "  call system_clock(count, rate)" "  t = dble(count) / dble(rate)" "end" >"$dir/wtime_wall.f90"
    printf '%s\n' "subroutine wtime(t)" "  double precision t" "  call cpu_time(t)" "end" >"$dir/wtime_cpu.f90"
    (
        cd "$dir"
        # shellcheck disable=SC2086 # FFLAGS holds several flags
        "$FC" $FFLAGS -I. -c "$NPB_DIR/MG/mg_data.f90" -o mg_data.o
        for src in "$NPB_DIR/MG/mg.f90" "$NPB_DIR/common/randdpvec.f90" \
            "$NPB_DIR/common/timers.f90" "$NPB_DIR/common/print_results.f90" \
            wulf_hooks.f90 wtime_wall.f90 wtime_cpu.f90; do
            # shellcheck disable=SC2086
            "$FC" $FFLAGS -I. -c "$src" -o "$(basename "${src%.f90}").o"
        done
        local objs="mg_data.o mg.o randdpvec.o timers.o print_results.o wulf_hooks.o"
        # shellcheck disable=SC2086
        "$FC" $FFLAGS -o "mg.$class.x" $objs wtime_wall.o
        # shellcheck disable=SC2086
        "$FC" $FFLAGS -o "mg.$class.cpu.x" $objs wtime_cpu.o
    )
}

# Mop/s of one run of the Fortran binary $2 (mg.CLASS.x or mg.CLASS.cpu.x).
run_fortran() {
    local out
    out=$(cd "$BUILD/$1" && "./$2")
    grep -q "Verification    =   *SUCCESSFUL" <<<"$out" || { echo "$out" >&2; echo "Fortran MG class $1 did not verify" >&2; exit 1; }
    awk '/Mop\/s total/ {print $NF}' <<<"$out"
}

# "wall-Mop/s cpu-Mop/s" of one run of wulf's MG.
run_rust() {
    local out
    out=$(NPB_CLASS=$1 NPB_NP=1 cargo test -q --release --test fast npb_bench:: -- --ignored --nocapture 2>&1)
    grep -q "^wulf-mg .*verified=true" <<<"$out" || { echo "$out" >&2; echo "wulf MG class $1 did not verify" >&2; exit 1; }
    sed -n 's/^wulf-mg .* mop_s=\([0-9.]*\) .* cpu_mop_s=\([0-9.]*\) .*/\1 \2/p' <<<"$out"
}

# Best and median of a list of numbers on stdin.
summary() {
    sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "best %9.1f  median %9.1f", v[NR], m}'
}

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
echo "# fortran: $("$FC" --version | head -1), FFLAGS=$FFLAGS, NPB from $NPB_DIR"
echo "# rust:    $(rustc --version), cargo test --release (profile.release of Cargo.toml)"
cargo test -q --release --test fast npb_bench:: --no-run 2>/dev/null
for class in "${CLASSES[@]}"; do
    build_fortran "$class"
    fortran=() fortran_cpu=() rust=() rust_cpu=()
    for rep in $(seq 1 "$REPS"); do
        f=$(run_fortran "$class" "mg.$class.x")
        read -r r rc <<<"$(run_rust "$class")"
        fc=$(run_fortran "$class" "mg.$class.cpu.x")
        fortran+=("$f") fortran_cpu+=("$fc") rust+=("$r") rust_cpu+=("$rc")
        printf 'class %s rep %2d: fortran %8.1f Mop/s (cpu %8.1f)   wulf %8.1f Mop/s (cpu %8.1f)\n' \
            "$class" "$rep" "$f" "$fc" "$r" "$rc"
    done
    printf 'class %s fortran:     %s\n' "$class" "$(printf '%s\n' "${fortran[@]}" | summary)"
    printf 'class %s wulf:        %s\n' "$class" "$(printf '%s\n' "${rust[@]}" | summary)"
    printf 'class %s fortran cpu: %s\n' "$class" "$(printf '%s\n' "${fortran_cpu[@]}" | summary)"
    printf 'class %s wulf cpu:    %s\n' "$class" "$(printf '%s\n' "${rust_cpu[@]}" | summary)"
done
