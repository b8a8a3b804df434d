#!/usr/bin/env bash
# Benchmark (not a test): what wulf's MPI transport costs on top of MPI.
#
# For each installed library (Open MPI, MPICH), a plain C ping-pong
# (bench/mpi_plain_pingpong.c, MPI_Send/MPI_Recv, compiled with that
# library's mpicc, started by its launcher with the same arguments wulf
# uses) against `wulf sweep mpi:LIB`, interleaved, ROUNDS times: one-way
# latency at 8 B and ping-pong throughput at 4 MiB. Both pin rank r to CPU
# r, time blocks of the same length (wulf's budget / 25) and report the
# median over blocks. Three summaries per library:
#   - median over rounds of the per-round ratios of medians;
#   - the same of minimums (interference only ever adds time);
#   - best of rounds: each side's best median over all rounds. Each launch
#     lands in a fast or a slow placement of the two vCPUs (bimodal, see
#     the machine notes), independently for the two sides, so per-round
#     ratios often compare different modes; the best of several rounds
#     compares both in the fast mode. The targets are checked on this one.
#
# Targets (issue 4): wulf adds at most 5% to latency (ratio <= 1.05) and
# loses at most 2% of bandwidth (ratio >= 0.98).
#
# On a machine shared with other sessions (Linux schedules each session as
# one "autogroup", so nice alone does nothing against them), the script
# re-runs itself in a session of its own whose autogroup has nice -10
# (BENCH_NICE; 0 = off). Plain loop and wulf get the same treatment.
#
# Usage: bench/mpi_overhead.sh [ROUNDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NICE=${BENCH_NICE:--10}
if [ -z "${WULF_BENCH_SESSION:-}" ] && [ "$BENCH_NICE" != 0 ] && [ -w /proc/self/autogroup ]; then
    export WULF_BENCH_SESSION=1 BENCH_NICE
    exec setsid -w bash -c 'echo "$BENCH_NICE" > /proc/self/autogroup && exec "$0" "$@"' "$0" "$@" </dev/null
fi
ROUNDS=${1:-5}
# wulf's budget for its one point; its blocks aim at 1/25 of it.
BUDGET_S=${BUDGET_S:-1}
TRIAL_MS=$(python3 -c "print(min(50, max(0.05, $BUDGET_S * 0.98 / 25 * 1e3)))")
cargo build --release --quiet
WULF=$PWD/target/release/wulf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Open MPI refuses root without these (wulf sets them for its own jobs).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

libs=()
command -v mpicc.openmpi >/dev/null && libs+=(openmpi)
command -v mpicc.mpich >/dev/null && libs+=(mpich)
[ ${#libs[@]} -gt 0 ] || { echo "no MPI: apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev" >&2; exit 1; }
launcher() {
    case $1 in
    openmpi) echo "mpirun.openmpi -np 2 --oversubscribe" ;;
    mpich) echo "mpiexec.mpich -np 2" ;;
    esac
}
for lib in "${libs[@]}"; do
    "mpicc.$lib" -O2 -o "$work/plain_$lib" bench/mpi_plain_pingpong.c
done

for i in $(seq 1 "$ROUNDS"); do
    for lib in "${libs[@]}"; do
        for bytes in 8 4194304; do
            # shellcheck disable=SC2046
            $(launcher "$lib") "$work/plain_$lib" "$bytes" "$TRIAL_MS" > "$work/plain_${lib}_${bytes}_$i.txt"
            "$WULF" sweep "mpi:$lib" --sizes "$bytes" --no-perturb --budget "${BUDGET_S}s" --quiet \
                --json "$work/wulf_${lib}_${bytes}_$i.json" > /dev/null
        done
    done
done

python3 - "$work" "$ROUNDS" "${libs[@]}" <<'PY'
import json, statistics, sys
work, rounds, libs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
med = statistics.median
ok = True
for lib in libs:
    lat, bw, lat_min, bw_min = [], [], [], []
    best = {"p8": [], "w8": [], "pb": [], "wb": []}
    for i in range(1, rounds + 1):
        p8 = open(f"{work}/plain_{lib}_8_{i}.txt").read().split()
        pb = open(f"{work}/plain_{lib}_4194304_{i}.txt").read().split()
        w8 = json.load(open(f"{work}/wulf_{lib}_8_{i}.json"))["points"][0]
        wb = json.load(open(f"{work}/wulf_{lib}_4194304_{i}.json"))["points"][0]
        plain_ns, plain_bps = float(p8[1]), float(pb[3])
        best["p8"].append(plain_ns)
        best["w8"].append(w8["median_ns"])
        best["pb"].append(plain_bps)
        best["wb"].append(wb["bits_per_s"])
        lat.append(w8["median_ns"] / plain_ns)
        bw.append(wb["bits_per_s"] / plain_bps)
        # Minimum block time; for bandwidth the fastest block of 4 MiB.
        lat_min.append(w8["min_ns"] / float(p8[2]))
        bw_min.append(float(pb[2]) / wb["min_ns"])
        print(f"{lib:8} round {i}: 8 B one-way median plain {plain_ns:8.1f} ns wulf {w8['median_ns']:8.1f} ns"
              f" (min {float(p8[2]):7.1f} / {w8['min_ns']:7.1f}; blocks {p8[4]} / {w8['repeats']} round trips)"
              f" | 4 MiB plain {plain_bps/1e9:6.2f} Gbit/s wulf {wb['bits_per_s']/1e9:6.2f} Gbit/s")
    print(f"{lib:8} median of per-round ratios wulf/plain, medians:  latency {med(lat):.3f}, bandwidth {med(bw):.3f}")
    print(f"{lib:8} median of per-round ratios wulf/plain, minimums: latency {med(lat_min):.3f}, bandwidth {med(bw_min):.3f}")
    l = min(best["w8"]) / min(best["p8"])
    b = max(best["wb"]) / max(best["pb"])
    ok &= l <= 1.05 and b >= 0.98
    print(f"{lib:8} best of {rounds} rounds: 8 B plain {min(best['p8']):.1f} ns wulf {min(best['w8']):.1f} ns,"
          f" latency ratio {l:.3f} (target <= 1.05); 4 MiB plain {max(best['pb'])/1e9:.2f} Gbit/s"
          f" wulf {max(best['wb'])/1e9:.2f} Gbit/s, bandwidth ratio {b:.3f} (target >= 0.98)")
print("targets met" if ok else "targets NOT met")
PY
