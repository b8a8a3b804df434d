#!/usr/bin/env bash
# Benchmark (not a test): `wulf sweep --cost whole` against the kernel's own
# accounting, sampled from outside. For each case (tcp at 64 B, 64 KiB and
# 4 MiB, shm at 64 KiB), one size at a time with --no-perturb and a 4 s
# budget, a Python sampler reads /proc/stat every 0.25 s while wulf runs and
# takes the busy time (user+nice+system+irq+softirq, every CPU) over the
# steady middle of the run (the first and last quarter of the samples are
# dropped), less the background it measured itself for 1 s before the run.
# That is compared with wulf's own figure (cpu_ns / wall_ns: CPUs busy over
# its kept blocks, background subtracted). Cases are interleaved ROUNDS
# times (default 2). Agreement: the ratio within 0.9-1.1 on a quiet machine.
# The getrusage column is the ends' own threads, for scale: what the kernel
# saw beyond them is softirq, interrupts and the other end's wakeups.
# (The soakers of --cost soak are busy time to /proc/stat, so an outside
# sampler cannot check them; their figure stands beside the kernel's in
# each result instead.)
# Usage: bench/cost_vs_procstat.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
COST=whole
WULF=${WULF:-target/release/wulf}
[ -x "$WULF" ] || cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/sample.py" <<'PY'
import json, subprocess, sys, time

def busy():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                v = [int(x) for x in line.split()[1:]]
                # user nice system idle iowait irq softirq steal
                return v[0] + v[1] + v[2] + v[5] + v[6]

hz = 100.0
import os
hz = os.sysconf("SC_CLK_TCK")
b0, t0 = busy(), time.monotonic()
time.sleep(1.0)
background = (busy() - b0) / hz / (time.monotonic() - t0)  # CPUs
cmd = sys.argv[1:]
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
samples = []
while p.poll() is None:
    samples.append((time.monotonic(), busy()))
    time.sleep(0.25)
n = len(samples)
a, b = samples[n // 4], samples[(3 * n) // 4]
rate = (b[1] - a[1]) / hz / (b[0] - a[0]) - background
print(json.dumps({"rc": p.returncode, "procstat_cpus": rate, "background": background, "samples": n}))
PY
cases=("tcp 64" "tcp 64Ki" "tcp 4Mi" "shm 64Ki")
printf '%-6s %7s %5s  %12s %12s %7s  %12s %14s\n' transport size round \
    "wulf CPUs" "/proc/stat" ratio "wulf ns/B" "getrusage ns/B"
for round in $(seq 1 "$ROUNDS"); do
    for c in "${cases[@]}"; do
        set -- $c
        out="$work/r.json"
        rm -f "$out"
        line=$(python3 "$work/sample.py" "$WULF" sweep "$1" --sizes "$2" --budget 4s \
            --no-perturb --quiet --cost "$COST" --json "$out")
        python3 - "$out" "$line" "$1" "$2" "$round" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = json.loads(sys.argv[2])
w = r["points"][0]["cpu_whole"]
wulf = w["cpu_ns"] / w["wall_ns"]
ref = s["procstat_cpus"]
print("%-6s %7s %5s  %12.3f %12.3f %7.2f  %12.4g %14.4g" % (
    sys.argv[3], sys.argv[4], sys.argv[5], wulf, ref, wulf / ref if ref > 0 else float("nan"),
    w["ns_per_byte"], w["getrusage_ns_per_byte"]))
PY
    done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
