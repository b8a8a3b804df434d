#!/usr/bin/env bash
# Benchmark (not a test): does a sweep over a slow lab link keep its
# --budget (issue 28/34)? For each binary given (e.g. the build of main
# and this branch), `wulf sweep tcp --lab LINK --budget B` with the default
# sizes, for LINK in fe ge and B in BUDGETS: the command's wall time (lab
# set-up and removal included) over B, the points measured and the sizes
# left out. Then the estimate against theory: the rate the sweep used for
# its estimate (result `sizes_left_out.rate_bits_per_s`) over the goodput a
# shaper allows, rate * (MTU - 52) / (MTU + 14), and the one-way time of
# the largest size measured over latency + size * 8 / that goodput.
# Usage: bench/sweep_budget_link.sh "BIN..." ["LINK..."] ["BUDGET..."]
#   defaults: target/release/wulf, "fe ge", "5s 10s 30s"
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${1:-target/release/wulf}
LINKS=${2:-fe ge}
BUDGETS=${3:-5s 10s 30s}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-28s %-4s %6s %8s %7s %6s %5s %12s %8s %8s\n" \
    bin link budget wall_s x_budget points left rate_Mbit rate/th t/theory
for bin in $BINS; do
  for link in $LINKS; do
    for b in $BUDGETS; do
      json="$work/r.json"
      s=$(date +%s.%N)
      "$bin" sweep tcp --lab "$link" --budget "$b" --quiet --json "$json" >/dev/null 2>&1 || true
      e=$(date +%s.%N)
      python3 - "$bin" "$link" "$b" "$s" "$e" "$json" <<'PY'
import json, sys
bin_, link, b, s, e, path = sys.argv[1:]
wall = float(e) - float(s)
budget = float(b.rstrip("s"))
r = json.load(open(path))
pts = r["points"]
left = r.get("sizes_left_out") or {}
rate_link = {"fe": 100e6, "ge": 1e9}[link]
mtu = 1500
theory = rate_link * (mtu - 52) / (mtu + 14)
rate = left.get("rate_bits_per_s")
lat = min(p["median_ns"] for p in pts)
big = pts[-1]
t_theory = lat + big["bytes"] * 8 / theory * 1e9
print(f"{bin_[-28:]:<28} {link:<4} {b:>6} {wall:8.1f} {wall/budget:7.2f} {len(pts):6d} "
      f"{len(left.get('sizes_bytes', [])):5d} {rate/1e6 if rate else float('nan'):12.1f} "
      f"{rate/theory if rate else float('nan'):8.3f} {big['median_ns']/t_theory:8.3f}")
PY
    done
  done
done
echo "# end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
