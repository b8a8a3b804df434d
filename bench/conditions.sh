#!/bin/sh
# Issue 13's benchmark (not a test): what communication costs the whole
# machine, and what a background load costs communication.
#
#  1. On loopback and between two nodes of a lab (ge link), for tcp, unix,
#     shm and each MPI found: the whole CPU cost per byte (cyclesoak's
#     method, `--cost whole`) against getrusage's, at 64 B, 64 KiB, 4 MiB.
#     In the lab, transports that only work within one machine (unix, shm,
#     MPI over shared memory) are reported as not applicable; MPI runs
#     forced onto TCP ('mpi:NAME(tcp)') cross the emulated link.
#  2. NAS MG and EP, class W, on 2 processes, unloaded and under
#     `--load cpu` (one busy thread per CPU), interleaved, best of 5.
#
# Usage: bench/conditions.sh [OUT_DIR]   (root for the lab; about 15 min)
# Environment: WULF (binary, default target/release/wulf), BUDGET (per
# sweep, default 8s), REPS (NAS repetitions, default 5).
#
# The machine's load average is printed before and after: on a shared
# machine the whole cost includes other programs' work (the soaker's
# calibration then warns, and the figures are rough).
set -u
WULF=${WULF:-target/release/wulf}
OUT=${1:-bench-results/conditions-$(date -u +%Y%m%dT%H%M%S)}
BUDGET=${BUDGET:-8s}
REPS=${REPS:-5}
SIZES=64,64Ki,4Mi
mkdir -p "$OUT"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The transports here: tcp, unix, shm and every MPI wulf finds.
MPIS=$(for m in openmpi mpich; do
    "$WULF" sweep "mpi:$m" --sizes 1 --budget 200ms --quiet >/dev/null 2>&1 && echo "mpi:$m"; done)

sweep() { # WHERE TRANSPORT [extra args]: one whole-cost sweep, JSON in $OUT
    where=$1; t=$2; shift 2
    f="$OUT/$where-$(echo "$t" | tr ':()' '-__').json"
    if nice -n 5 "$WULF" sweep "$t" --sizes "$SIZES" --budget "$BUDGET" --cost whole \
        --quiet --json "$f" "$@" >"$f.log" 2>&1; then
        echo "$where $t $f"
    else
        echo "$where $t FAILED: $(tail -n 1 "$f.log")" >&2
        echo "$where $t -"
    fi
}

{
    for t in tcp unix shm $MPIS; do sweep loopback "$t"; done
    sweep lab-ge tcp --lab ge
    for m in $MPIS; do sweep lab-ge "$m(tcp)" --lab ge; done
} >"$OUT/sweeps.txt"

# Table 1: whole against getrusage per size.
python3 - "$OUT/sweeps.txt" <<'EOF'
import json, sys
print("\nwhole CPU cost per byte against getrusage's (ns/B; ratio = whole / getrusage)")
print(f"{'where':<9} {'transport':<18} {'size':>7} {'whole':>10} {'getrusage':>10} {'ratio':>6} {'median':>10}")
names = {64: "64 B", 65536: "64 KiB", 4194304: "4 MiB"}
for line in open(sys.argv[1]):
    where, t, f = line.split()
    if f == "-":
        print(f"{where:<9} {t:<18} {'failed or not applicable':>46}")
        continue
    r = json.load(open(f))
    trusted = ((r.get("conditions") or {}).get("soaker") or {}).get("trusted")
    for p in r["points"]:
        w = p.get("cpu_whole") or {}
        ratio = w.get("whole_over_getrusage")
        print(f"{where:<9} {t:<18} {names.get(p['bytes'], p['bytes']):>7} "
              f"{w.get('ns_per_byte', float('nan')):>10.3f} "
              f"{w.get('getrusage_ns_per_byte', float('nan')):>10.3f} "
              f"{(ratio if ratio is not None else float('nan')):>6.2f} "
              f"{p['median_ns'] / 1e3:>8.2f}us")
    if trusted is False:
        print(f"{'':<9} {t:<18} (soaker calibration untrusted: the machine was not idle)")
EOF

# Table 2: NAS MG and EP, class W, 2 processes, unloaded and loaded.
VIA=tcp,unix,shm
for m in $MPIS; do VIA="$VIA,$m"; done
for k in mg ep; do
    nice -n 5 "$WULF" npb "$k" --class W --np 2 --via "$VIA" --repetitions "$REPS" \
        --load cpu --loaded-vs-unloaded --json "$OUT/npb.json" >"$OUT/npb-$k.txt" 2>&1 \
        || echo "npb $k failed: $(tail -n 1 "$OUT/npb-$k.txt")" >&2
    echo
    echo "NAS $k class W, 2 processes, unloaded and under --load cpu (best of $REPS):"
    cat "$OUT/npb-$k.txt"
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "results in $OUT"
