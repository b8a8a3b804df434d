#!/usr/bin/env bash
# Benchmark (not a test): how faithful and how cheap `wulf matrix` is.
#
# 1. Cells against plain sweeps (issue 11 target: bandwidth within 5%,
#    latency within the cells' confidence intervals). On a 4-node ge lab,
#    interleaved ROUNDS times: a serial matrix (one pair at a time, as a
#    lone `wulf sweep --peer` is), then for every directed pair the same
#    two one-size sweeps with `wulf sweep --peer` from the measuring node
#    against a `wulf serve` on the other. Printed per pair: the medians of
#    both over the rounds and their ratio.
# 2. Coordination overhead (target: at most 5% of wall time): the matrix's
#    wall time against rounds x per-pair time (serial: every cell one
#    after the other, so the sum of the cells' own times; concurrent: a
#    step lasts as long as its slowest cell), for the serial matrices and
#    one concurrent matrix on the same lab; start-up (agents joining) beside.
# 3. Scale: 8, 16, 32 and 64 simulated agents (processes on this machine,
#    over loopback) with the same per-cell budget: wall time, coordinator
#    CPU, and the coordinator's peak memory.
# 4. The analysis of a 1,000-node matrix (synthetic cells): its time and
#    the coordinator's memory per cell.
# Usage: bench/matrix.sh [ROUNDS]   (default 3; needs root for the lab)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
cargo build --release --quiet
WULF=$(pwd)/target/release/wulf
LAB=bm$$
work=$(mktemp -d)
serves=()
# The servers by their own process ids (each `wulf lab exec` and the serve
# it started), never by name.
stop_serves() { for p in "${serves[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done; }
trap 'stop_serves; rm -rf "$work"; "$WULF" lab down --name "$LAB" >/dev/null 2>&1 || true' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) CPUs)"
"$WULF" lab up --name "$LAB" --nodes 4 --link ge >/dev/null
addr() { "$WULF" lab status --name "$LAB" --json | python3 -c "import json,sys; print([n['address'].split('/')[0] for n in json.load(sys.stdin)[0]['nodes'] if n['name']=='$1'][0])"; }
for n in 1 2 3 4; do
  ip=$(addr node$n)
  "$WULF" lab exec --name "$LAB" node$n -- "$WULF" serve --bind "$ip" --port 9137 >/dev/null 2>&1 &
  serves+=($!)
done
sleep 1
for r in $(seq "$ROUNDS"); do
  "$WULF" matrix --launch "lab:$LAB" --serial --budget 24s --quiet --json "$work/matrix-$r.json" >/dev/null
  for a in 1 2 3 4; do for b in 1 2 3 4; do
    [ "$a" = "$b" ] && continue
    peer=$(addr node$b)
    "$WULF" lab exec --name "$LAB" node$a -- "$WULF" sweep tcp --peer "$peer" --sizes 8 --budget 0.67s --no-pin --quiet --json "$work/lat-$a-$b-$r.json" >/dev/null
    "$WULF" lab exec --name "$LAB" node$a -- "$WULF" sweep tcp --peer "$peer" --mode stream --sizes 4Mi --budget 1.33s --no-pin --quiet --json "$work/bw-$a-$b-$r.json" >/dev/null
  done; done
done
# One matrix with the pairs of a round at once, for its overhead.
"$WULF" matrix --launch "lab:$LAB" --budget 24s --quiet --json "$work/matrix-conc.json" >/dev/null
echo "load average after the lab part: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
m = [json.load(open(f"{work}/matrix-{r}.json")) for r in range(1, rounds + 1)]
names = [n["name"] for n in m[0]["nodes"]]
# Latency: the sweeps' median against the cells' confidence intervals
# (the target), and against the spread of the cells' medians from round
# to round (a median's interval covers one run's sampling, not the
# run-to-run variation of a ping-pong's scheduling).
print(f"{'pair':<14}{'cell lat us':>12}{'cells min-max':>15}{'sweep lat us':>13}{'sweeps min-max':>16}{'in CI':>7}{'in range':>9}"
      f"{'cell Mbit/s':>13}{'sweep Mbit/s':>13}{'ratio':>7}")
worst = 1.0
in_ci = in_range = 0
for a in range(4):
    for b in range(4):
        if a == b:
            continue
        cells = [c for mm in m for c in mm["cells"] if c["from"] == a and c["to"] == b]
        lat = statistics.median(c["latency"]["median_ns"] for c in cells) / 1e3
        lo = min(c["latency"]["ci_low_ns"] for c in cells) / 1e3
        hi = max(c["latency"]["ci_high_ns"] for c in cells) / 1e3
        bw = statistics.median(c["bandwidth"]["bits_per_s"] for c in cells) / 1e6
        cell_lats = [c["latency"]["median_ns"] / 1e3 for c in cells]
        sweep_lats = [json.load(open(f"{work}/lat-{a+1}-{b+1}-{r}.json"))["points"][0]["median_ns"] / 1e3 for r in range(1, rounds + 1)]
        sl = statistics.median(sweep_lats)
        sb = statistics.median(json.load(open(f"{work}/bw-{a+1}-{b+1}-{r}.json"))["points"][0]["bits_per_s"] for r in range(1, rounds + 1)) / 1e6
        worst = min(worst, min(bw, sb) / max(bw, sb))
        ci = lo <= sl <= hi
        rng = min(cell_lats) <= sl <= max(cell_lats)
        in_ci += ci
        in_range += rng
        print(f"{names[a]+'->'+names[b]:<14}{lat:>12.1f}{min(cell_lats):>7.1f}-{max(cell_lats):<7.1f}{sl:>13.1f}"
              f"{min(sweep_lats):>8.1f}-{max(sweep_lats):<7.1f}{('yes' if ci else 'no'):>7}{('yes' if rng else 'no'):>9}"
              f"{bw:>13.1f}{sb:>13.1f}{bw/sb:>7.3f}")
print(f"worst bandwidth agreement: {worst:.3f} (target >= 0.95)")
print(f"sweep latency inside the cells' confidence intervals: {in_ci} of 12 pairs; inside the cells' run-to-run range: {in_range} of 12")
def steps_time(mm):
    # A step (one direction of a round) lasts as long as its slowest cell.
    busy = 0.0
    for rnd in range(mm["rounds"]):
        for fwd in (True, False):
            g = [c["measure_s"] for c in mm["cells"] if c["round"] == rnd and (c["from"] < c["to"]) == fwd]
            busy += max(g, default=0)
    return busy
conc = json.load(open(f"{work}/matrix-conc.json"))
for label, mm in [("serial", x) for x in m] + [("concurrent", conc)]:
    cells = sum(c.get("measure_s", 0) for c in mm["cells"])
    per_pair = statistics.median(c["measure_s"] for c in mm["cells"])
    busy = cells if mm["serial"] else steps_time(mm)
    over = mm["rounds_s"] - busy
    print(f"{label} matrix: wall {mm['wall_s']:.2f} s, {mm['rounds']} rounds, rounds {mm['rounds_s']:.2f} s, "
          f"rounds x per-pair {busy:.2f} s (median pair {per_pair:.2f} s), "
          f"coordination {over:.3f} s = {100*over/mm['wall_s']:.1f}% of wall, start-up {mm['wall_s']-mm['rounds_s']:.2f} s")
PY
echo
printf "%7s %8s %8s %10s %14s %12s %10s\n" agents cells wall_s rounds_s "coord cpu_s" "cpu us/cell" "peak KiB"
for n in 8 16 32 64; do
  rounds=$(( n - 1 ))
  budget=$(python3 -c "print(f'{2*$rounds*0.06:.2f}s')")
  /usr/bin/time -f "%M" -o "$work/rss-$n" "$WULF" matrix --launch local --hosts "sim[1-$n]" --bandwidth-size 64Ki \
      --budget "$budget" --quiet --json "$work/sim-$n.json" >/dev/null
  python3 - "$work/sim-$n.json" "$(cat "$work/rss-$n")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cells = len(r["cells"])
busy = 0.0
for rnd in range(r["rounds"]):
    # Both directions of a round: each lasts as long as its slowest cell.
    for fwd in (True, False):
        g = [c["measure_s"] for c in r["cells"] if c["round"] == rnd and (c["from"] < c["to"]) == fwd]
        busy += max(g, default=0)
print(f"{len(r['nodes']):>7} {cells:>8} {r['wall_s']:>8.2f} {r['rounds_s']:>10.2f} {r['coordinator_cpu_s']:>14.3f} "
      f"{1e6*r['coordinator_cpu_s']/cells:>12.1f} {sys.argv[2]:>10}   coordination {100*(r['rounds_s']-busy)/r['wall_s']:.1f}% of wall")
PY
done
# 4. The analysis at 1,000 nodes (999,000 synthetic cells): its time, and
#    what the coordinator holds per cell.
cargo test --release --quiet --lib analysis_of_a_thousand_nodes -- --ignored --nocapture 2>/dev/null | grep '^analysis of'
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
