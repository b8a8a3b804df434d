#!/usr/bin/env bash
# Benchmark (not a test): wulf's default TCP sweep against NetPIPE 3.7's NPtcp
# on loopback, interleaved, ROUNDS times. Prints per-round figures and the
# median ratios wulf/NetPIPE of sweep wall time, latency and peak throughput.
#
# Targets (issue 2): wall time <= 0.25x, latency <= 1.0x, peak >= 0.95x.
#
# NetPIPE's latency is the minimum of its 3 trials at 1 byte; wulf's is the
# median of its kept trials, so wulf's minimum is printed beside it.
# Usage: bench/netpipe_vs_wulf.sh [ROUNDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
command -v NPtcp >/dev/null || {
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq netpipe-tcp >/dev/null
}
cargo build --release --quiet
WULF=target/release/wulf
work=$(mktemp -d)
trap 'rm -rf "$work"; pkill -f "NPtcp -P 5998" 2>/dev/null || true' EXIT

for i in $(seq 1 "$ROUNDS"); do
    # NetPIPE: receiver in the background, transmitter timed.
    NPtcp -P 5998 >/dev/null 2>&1 &
    sleep 0.3
    s=$(date +%s.%N)
    NPtcp -h 127.0.0.1 -P 5998 -o "$work/np$i.out" >/dev/null 2>&1
    e=$(date +%s.%N)
    echo "$s $e" > "$work/np$i.time"
    wait || true
    # wulf: its default sweep.
    s=$(date +%s.%N)
    "$WULF" sweep tcp --quiet --json "$work/wulf$i.json" >/dev/null
    e=$(date +%s.%N)
    echo "$s $e" > "$work/wulf$i.time"
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, rounds + 1):
    s, e = map(float, open(f"{work}/np{i}.time").read().split())
    np_wall = e - s
    pts = [l.split() for l in open(f"{work}/np{i}.out") if l.strip()]
    pts = [(int(b), float(t)) for b, _, t in pts]  # bytes, one-way seconds
    np_lat = pts[0][1] * 1e9
    np_peak = max(b * 8 / t for b, t in pts)
    s, e = map(float, open(f"{work}/wulf{i}.time").read().split())
    w_wall = e - s
    r = json.load(open(f"{work}/wulf{i}.json"))
    w_lat = r["summary"]["latency_ns"]
    w_min = r["points"][0]["min_ns"]
    w_peak = r["summary"]["peak_bits_per_s"]
    w_ci = all("ci_low_ns" in p and "ci_high_ns" in p for p in r["points"])
    rows.append((np_wall, w_wall, np_lat, w_lat, w_min, np_peak, w_peak, len(pts), len(r["points"]), w_ci, r["summary"]["noisy_points"]))
    print(f"round {i}: NetPIPE {np_wall:6.1f} s {len(pts)} pts lat {np_lat/1e3:6.2f} us peak {np_peak/1e9:6.2f} Gbit/s | "
          f"wulf {w_wall:5.1f} s {len(r['points'])} pts lat {w_lat/1e3:6.2f} us (min {w_min/1e3:6.2f}) peak {w_peak/1e9:6.2f} Gbit/s, "
          f"noisy {r['summary']['noisy_points']}, CI on every point: {w_ci}")
med = lambda k: statistics.median(k)
print()
print(f"median ratio wulf/NetPIPE  wall time {med([r[1]/r[0] for r in rows]):.3f}  (target <= 0.25)")
print(f"median ratio wulf/NetPIPE  latency   {med([r[3]/r[2] for r in rows]):.3f}  (target <= 1.0; wulf min/NetPIPE {med([r[4]/r[2] for r in rows]):.3f})")
print(f"median ratio wulf/NetPIPE  peak      {med([r[6]/r[5] for r in rows]):.3f}  (target >= 0.95)")
PY
