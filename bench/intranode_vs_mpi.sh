#!/usr/bin/env bash
# Benchmark (not a test): wulf's intra-node transports (shm, cma), the
# cache-line floor and the core-to-core single-copy limit (the c2c baseline)
# against plain MPI ping-pong loops (bench/mpi_pingpong.c) built with Open
# MPI's and MPICH's mpicc, interleaved, ROUNDS times, at 8 B, 1 KiB, 64 KiB,
# 256 KiB, 1 MiB and 4 MiB. Both sides pin their two processes to CPUs 0
# and 1 and reuse cache-hot buffers; all figures are one-way times (half a
# round trip), medians of the trials of a run, then the median over rounds.
# The load average before and after is printed: the figures of a shared
# machine mean little without it.
#
# Targets (issue 3): shm at 8 B <= 1.5x the cache-line floor and no slower
# than the faster MPI; at 1 MiB and 4 MiB the better of shm and cma at least
# as fast as the faster MPI. (Issue 18): at 1 MiB and 4 MiB the better of
# shm and cma at least 0.8 of the c2c single-copy limit (c2c time / wulf
# time) and at least 1.5x faster than the faster MPI; shm at 8 B at most
# 1.2x the cache-line floor.
#
# shm switches to single copy from its threshold (shm.rs); `shm-ring` is
# shm held to its ring (copy-in/copy-out) at every size by
# WULF_SHM_SINGLE_COPY_MIN_BYTES, to show what each protocol gets.
#
# Usage: bench/intranode_vs_mpi.sh [ROUNDS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SIZES=(8 1024 65536 262144 1048576 4194304)
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v mpicc.openmpi >/dev/null || ! command -v mpicc.mpich >/dev/null; then
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq \
        openmpi-bin libopenmpi-dev mpich libmpich-dev >/dev/null
fi
# Open MPI refuses to run as root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release --quiet
WULF=target/release/wulf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc.openmpi -O2 -o "$work/pp_ompi" bench/mpi_pingpong.c
mpicc.mpich -O2 -o "$work/pp_mpich" bench/mpi_pingpong.c
wulf_sizes=$(IFS=,; echo "${SIZES[*]}")

run_one() { # $1 = what, $2 = round
    case $1 in
    floor) "$WULF" sweep cacheline --sizes 8 --budget 2s --quiet --json "$work/floor$2.json" >/dev/null ;;
    c2c) "$WULF" sweep c2c --sizes "$wulf_sizes" --budget 6s --quiet --json "$work/c2c$2.json" >/dev/null ;;
    shm | cma) "$WULF" sweep "$1" --sizes "$wulf_sizes" --budget 6s --quiet --json "$work/$1$2.json" >/dev/null ;;
    shm-ring) WULF_SHM_SINGLE_COPY_MIN_BYTES=4000Mi "$WULF" sweep shm --sizes "$wulf_sizes" --budget 6s --quiet \
        --json "$work/$1$2.json" >/dev/null ;;
    ompi) mpirun.openmpi -np 2 --bind-to core --map-by core "$work/pp_ompi" "${SIZES[@]}" >"$work/ompi$2.out" ;;
    mpich) mpirun.mpich -np 2 -bind-to core "$work/pp_mpich" "${SIZES[@]}" >"$work/mpich$2.out" ;;
    esac
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
order=(floor shm ompi c2c cma mpich shm-ring)
for i in $(seq 1 "$ROUNDS"); do
    # Rotate the order each round so no contender always follows another.
    for k in "${!order[@]}"; do
        run_one "${order[$(((k + i) % ${#order[@]}))]}" "$i"
    done
    echo "round $i done" >&2
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$work" "$ROUNDS" "${SIZES[@]}" <<'PY'
import json, statistics, sys
work, rounds, sizes = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3:]]
def wulf(name, i, field="median_ns"):
    r = json.load(open(f"{work}/{name}{i}.json"))
    return {p["bytes"]: p[field] for p in r["points"]}
# shm's own record: latency at 8 B over the floor measured just before it,
# on the same CPUs (summary.latency_floor_multiple).
multiples = [json.load(open(f"{work}/shm{i}.json"))["summary"]["latency_floor_multiple"]
             for i in range(1, rounds + 1)]
def mpi(name, i, column=1):
    out = {}
    for line in open(f"{work}/{name}{i}.out"):
        if line.startswith("#") or not line.strip():
            continue
        cols = line.split()
        out[int(cols[0])] = float(cols[column])
    return out
runs = {n: [wulf(n, i) for i in range(1, rounds + 1)] for n in ["shm", "cma", "c2c", "shm-ring"]}
runs.update({n: [mpi(n, i) for i in range(1, rounds + 1)] for n in ["ompi", "mpich"]})
floors = [wulf("floor", i)[8] for i in range(1, rounds + 1)]
med = lambda name, b: statistics.median(r[b] for r in runs[name])
floor = statistics.median(floors)
def fmt(ns):
    return f"{ns:10.0f} ns" if ns < 1e4 else f"{ns / 1e3:10.2f} us"
print(f"one-way time, median over {rounds} rounds (each a median of trials); cache-line floor {floor:.0f} ns "
      f"(rounds: {', '.join(f'{f:.0f}' for f in floors)})")
print(f"{'bytes':>8} {'shm':>13} {'shm ring':>13} {'cma':>13} {'c2c':>13} {'Open MPI':>13} {'MPICH':>13}   shm/floor  best(shm,cma)/best(MPI)")
for b in sizes:
    s, r, c, k, o, m = (med(n, b) for n in ["shm", "shm-ring", "cma", "c2c", "ompi", "mpich"])
    print(f"{b:>8} {fmt(s)} {fmt(r)} {fmt(c)} {fmt(k)} {fmt(o)} {fmt(m)}   {s / floor:9.2f}  {min(s, c) / min(o, m):10.3f}")
print()
s8, best_mpi8 = med("shm", 8), min(med("ompi", 8), med("mpich", 8))
x = statistics.median(multiples)
print(f"target shm 8 B <= 1.5x floor:        {x:.2f}x  {'met' if x <= 1.5 else 'MISSED'} "
      f"(shm's own latency_floor_multiple per round: {', '.join(f'{m:.2f}' for m in multiples)}; "
      f"against the separate cacheline runs: {s8 / floor:.2f}x)")
print(f"target shm 8 B <= faster MPI:        {s8 / best_mpi8:.3f}  {'met' if s8 <= best_mpi8 else 'MISSED'}")
for b in (1 << 20, 4 << 20):
    ours = min(med("shm", b), med("cma", b))
    theirs = min(med("ompi", b), med("mpich", b))
    print(f"target best of shm/cma at {b >> 20} MiB <= faster MPI: {ours / theirs:.3f}  {'met' if ours <= theirs else 'MISSED'}")
print()
print("issue 18: the better of shm and cma against the c2c single-copy limit and the faster MPI")
print(f"{'bytes':>8} {'best wulf':>13} {'(which)':>7} {'c2c limit':>13} {'faster MPI':>13}  of c2c  x faster than MPI")
for b in sizes:
    if b < 65536:
        continue
    which = min(["shm", "cma"], key=lambda n: med(n, b))
    ours, c2c = med(which, b), med("c2c", b)
    theirs = min(med("ompi", b), med("mpich", b))
    print(f"{b:>8} {fmt(ours)} {which:>7} {fmt(c2c)} {fmt(theirs)}  {c2c / ours:6.2f}  {theirs / ours:6.2f}")
for b in (1 << 20, 4 << 20):
    ours = min(med("shm", b), med("cma", b))
    theirs = min(med("ompi", b), med("mpich", b))
    f, x = med("c2c", b) / ours, theirs / ours
    print(f"target at {b >> 20} MiB: >= 0.8 of c2c: {f:.2f} {'met' if f >= 0.8 else 'MISSED'}; "
          f">= 1.5x faster than MPI: {x:.2f} {'met' if x >= 1.5 else 'MISSED'}")
m = statistics.median(multiples)
print(f"target shm 8 B <= 1.2x floor:        {m:.2f}x  {'met' if m <= 1.2 else 'MISSED'}")
# On a loaded machine the medians above are mostly scheduling noise; the
# fastest trial of all rounds shows what each path can do when it runs.
fastest = {n: [wulf(n, i, "min_ns") for i in range(1, rounds + 1)] for n in ["shm", "cma", "c2c", "shm-ring"]}
fastest.update({n: [mpi(n, i, 2) for i in range(1, rounds + 1)] for n in ["ompi", "mpich"]})
low = lambda name, b: min(r[b] for r in fastest[name])
print()
print(f"fastest trial over all rounds (one-way)")
print(f"{'bytes':>8} {'shm':>13} {'shm ring':>13} {'cma':>13} {'c2c limit':>13} {'faster MPI':>13}  of c2c  x faster than MPI")
for b in sizes:
    ours = min(low("shm", b), low("cma", b))
    theirs = min(low("ompi", b), low("mpich", b))
    print(f"{b:>8} {fmt(low('shm', b))} {fmt(low('shm-ring', b))} {fmt(low('cma', b))} {fmt(low('c2c', b))} "
          f"{fmt(theirs)}  {low('c2c', b) / ours:6.2f}  {theirs / ours:6.2f}")
PY
