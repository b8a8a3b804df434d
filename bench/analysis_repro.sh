#!/usr/bin/env bash
# Reproducibility of wulf's reported events (issue 16): two back-to-back
# sweeps of tcp, unix and shm, then the share of reported (confirmed)
# edges of drop-outs and switch-overs that appear in both runs. Target:
# >= 0.8.
#
# usage: bench/analysis_repro.sh [WULF_BINARY] [BUDGET]
# What is counted are edges, the sizes where the curve changes level, each
# with its direction (`slower` or `faster` from that size on): a confirmed
# drop-out reports its two edges (its start, slower; the first size after
# it, faster), a confirmed switch-over its one, and an unconfirmed event the
# edges its confirmation pass judged on their own and kept
# (`confirmation.events[].edges`, since the first pass names one edge
# differently from run to run: a switch-over in one run, the end of a
# drop-out in the other). An edge of run A "appears in" run B when B
# reports an edge of the same direction within a factor 1.6 in size (the
# schedule's resolution; a switch-over of an older file, without its
# direction, matches either). share = matched edges of both runs / all
# edges of both runs. Before edges (files without `edges`), events were
# matched by kind: a drop-out with an overlapping drop-out, a switch-over
# with one within 1.6x. The candidates each run checked (and how
# many of them a confirmation re-measured and kept) are printed too: with
# no confirmed event at all (a loaded machine, where the interleaved
# confirmation keeps none) the share is empty, not a pass. The sizes whose
# confirmation trials split in a fast and a slow mode are counted: many
# of them mean a bimodal pass (the two ends sharing a CPU for part of it).
# One edge is counted once per run: a run that reports the same edge twice
# (a switch-over at 8 KiB and a drop-out whose end edge is 8 KiB) has one
# edge there, not two, so a repeated name cannot raise the share.
# JUDGE_ONLY=1 with KEEP=DIR judges the six results already in DIR again.
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
  [ "${JUDGE_ONLY:-}" = 1 ] && break
  for t in tcp unix shm; do
    "$wulf" sweep "$t" --budget "$budget" --json "$dir/$run-$t.json" >/dev/null
  done
done
python3 - "$dir" <<'PY'
import json, sys, os
d = sys.argv[1]
def edges(path):
    """(bytes, direction or None, label) of every edge the run reports."""
    r = json.load(open(path))
    c = r.get("confirmation") or {}
    bytes_ = [p["bytes"] for p in r["points"]]
    out = []
    for e in c.get("events", []):
        own = e.get("edges")
        label = f"{e['kind']} {e['from_bytes']}..{e['to_bytes']}"
        if own is None:
            if e["kind"] == "dropout":
                after = next((b for b in bytes_ if b > e["to_bytes"]), e["to_bytes"])
                own = [{"bytes": e["from_bytes"], "direction": "slower", "confirmed": False},
                       {"bytes": after, "direction": "faster", "confirmed": False}]
            else:
                own = [{"bytes": e["from_bytes"], "direction": None, "confirmed": False}]
        for x in own:
            if e["confirmed"] or x["confirmed"]:
                whole = "" if e["confirmed"] else " (edge alone)"
                edge = (x["bytes"], x["direction"], f"{label}{whole}")
                twin = next((i for i, o in enumerate(out) if same(edge, o)), None)
                if twin is None:
                    out.append(edge)
                else:
                    o = out[twin]
                    out[twin] = (o[0], o[1] or edge[1], f"{o[2]}; {edge[2]}")
    return out
def candidates(path):
    r = json.load(open(path))
    c = r.get("confirmation") or {}
    split = sum(1 for p in c.get("points", []) if p.get("slow_trials", 0) > 0)
    return len(c.get("events", [])), r["summary"]["noisy_points"], len(r["points"]), split, len(c.get("points", []))
def same(x, y):
    if x[1] is not None and y[1] is not None and x[1] != y[1]:
        return False
    return y[0] / 1.6 <= x[0] <= y[0] * 1.6
matched = total = 0
for t in ("tcp", "unix", "shm"):
    a, b = edges(f"{d}/a-{t}.json"), edges(f"{d}/b-{t}.json")
    ma = sum(any(same(x, y) for y in b) for x in a)
    mb = sum(any(same(y, x) for x in a) for y in b)
    print(f"{t}: run A {len(a)} edges ({ma} also in B), run B {len(b)} edges ({mb} also in A)")
    for name in ("a", "b"):
        n, noisy, points, split, again = candidates(f"{d}/{name}-{t}.json")
        print(f"    run {name.upper()}: {n} candidates checked, {noisy} of {points} points noisy; "
              f"{split} of {again} re-measured sizes split in two modes (judged on the fast one)")
    for name, ev in (("A", a), ("B", b)):
        for x in ev:
            print(f"    {name}: {x[1] or 'edge'} from {x[0]} ({x[2]})")
    matched += ma + mb
    total += len(a) + len(b)
if total:
    print(f"share of reported edges that appear in both runs: {matched / total:.2f} ({matched} of {total}); target >= 0.8")
else:
    print("no confirmed event or edge in either run: nothing to reproduce (no figure; a quiet machine is needed)")
PY
