#!/usr/bin/env bash
# Reproducibility of wulf's reported events (issue 16): two back-to-back
# sweeps of tcp, unix and shm, then the share of reported (confirmed)
# drop-outs and switch-overs that appear in both runs. Target: >= 0.8.
#
# usage: bench/analysis_repro.sh [WULF_BINARY] [BUDGET]
# An event of run A "appears in" run B when B reports an event of the same
# kind on overlapping sizes (a drop-out) or within a factor 1.6 in size (a
# switch-over: the schedule's resolution). share = matched events of both
# runs / all events of both runs. The candidates each run checked (and how
# many of them a confirmation re-measured and kept) are printed too: with
# no confirmed event at all (a loaded machine, where the interleaved
# confirmation keeps none) the share is empty, not a pass. The sizes whose
# confirmation trials split in a fast and a slow mode are counted: many
# of them mean a bimodal pass (the two ends sharing a CPU for part of it).
set -euo pipefail
wulf=${1:-target/release/wulf}
budget=${2:-10s}
# KEEP=DIR keeps the six results there.
if [ -n "${KEEP:-}" ]; then
  dir=$KEEP; mkdir -p "$dir"
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
for run in a b; do
  for t in tcp unix shm; do
    "$wulf" sweep "$t" --budget "$budget" --json "$dir/$run-$t.json" >/dev/null
  done
done
python3 - "$dir" <<'PY'
import json, sys, os
d = sys.argv[1]
def events(path):
    r = json.load(open(path))
    c = r.get("confirmation") or {}
    return [e for e in c.get("events", []) if e["confirmed"]]
def candidates(path):
    r = json.load(open(path))
    c = r.get("confirmation") or {}
    split = sum(1 for p in c.get("points", []) if p.get("slow_trials", 0) > 0)
    return len(c.get("events", [])), r["summary"]["noisy_points"], len(r["points"]), split, len(c.get("points", []))
def same(x, y):
    if x["kind"] != y["kind"]:
        return False
    if x["kind"] == "dropout":
        return x["from_bytes"] <= y["to_bytes"] and x["to_bytes"] >= y["from_bytes"]
    return y["from_bytes"] / 1.6 <= x["from_bytes"] <= y["from_bytes"] * 1.6
matched = total = 0
for t in ("tcp", "unix", "shm"):
    a, b = events(f"{d}/a-{t}.json"), events(f"{d}/b-{t}.json")
    ma = sum(any(same(x, y) for y in b) for x in a)
    mb = sum(any(same(y, x) for x in a) for y in b)
    print(f"{t}: run A {len(a)} events ({ma} also in B), run B {len(b)} events ({mb} also in A)")
    for name in ("a", "b"):
        n, noisy, points, split, again = candidates(f"{d}/{name}-{t}.json")
        print(f"    run {name.upper()}: {n} candidates checked, {noisy} of {points} points noisy; "
              f"{split} of {again} re-measured sizes split in two modes (judged on the fast one)")
    for name, ev in (("A", a), ("B", b)):
        for e in ev:
            print(f"    {name}: {e['kind']} {e['from_bytes']}..{e['to_bytes']}")
    matched += ma + mb
    total += len(a) + len(b)
if total:
    print(f"share of reported events that appear in both runs: {matched / total:.2f} ({matched} of {total}); target >= 0.8")
else:
    print("no confirmed event in either run: nothing to reproduce (no figure; a quiet machine is needed)")
PY
