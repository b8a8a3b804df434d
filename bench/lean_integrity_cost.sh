#!/usr/bin/env bash
# Benchmark (not a test): what `--integrity all` (every timed message
# stamped and checked) costs, on one veth pair between two namespaces:
# ping-pong sweeps of TRANSPORT at SIZES with and without it, interleaved
# rounds, blocking waits; per size the best and median one-way time of
# each and their ratio.
# Usage: bench/lean_integrity_cost.sh [ROUNDS] [TRANSPORT] [SIZES] [BUDGET]
#        (default 5 raw 8,64Ki 300ms); WULF=path picks the binary.
set -euo pipefail
# shellcheck source=bench/lean_veth.sh
. "$(dirname "$0")/lean_veth.sh"
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
T=${2:-raw}
SIZES=${3:-8,64Ki}
BUDGET=${4:-300ms}
if [ -z "${WULF:-}" ]; then
  cargo build --profile ci --quiet --bin wulf
  WULF=${CARGO_TARGET_DIR:-$PWD/target}/ci/wulf
fi
work=$(mktemp -d)
NS_A=wulfleanint-a-$$
NS_B=wulfleanint-b-$$
ADDR_B=198.19.250.2
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  veth_pair_down "$NS_A" "$NS_B"
  rm -rf "$work"
}
trap cleanup EXIT
veth_pair_up "$NS_A" "$NS_B" 198.19.250.1 "$ADDR_B"
ip netns exec "$NS_B" "$WULF" serve --bind "$ADDR_B" --allow-lean --announce >"$work/serve.out" 2>/dev/null &
server=$!
for _ in $(seq 100); do grep -qs WULF-LISTENING "$work/serve.out" && break; sleep 0.1; done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/all.txt"
for r in $(seq "$ROUNDS"); do
  for kind in plain all; do
    extra=()
    [ "$kind" = all ] && extra=(--integrity all)
    ip netns exec "$NS_A" "$WULF" sweep "$T" --sizes "$SIZES" --wait block --no-pin --budget "$BUDGET" \
      --peer "$ADDR_B:9137" --timeout 10s --quiet --json "$work/r.json" "${extra[@]}" >/dev/null 2>"$work/err" ||
      { echo "round $r $kind failed: $(tail -n 1 "$work/err")"; continue; }
    python3 - "$kind" "$work/r.json" >>"$work/all.txt" <<'PY'
import json, sys
for p in json.load(open(sys.argv[2]))["points"]:
    print(sys.argv[1], p["bytes"], p["median_ns"])
PY
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/all.txt" "$T" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kind, size, ns = line.split()
    rows.setdefault((int(size), kind), []).append(float(ns))
print(f"{sys.argv[2]} ping-pong, one-way us, best / median of rounds:")
for size in sorted({s for s, _ in rows}):
    p, a = rows.get((size, "plain"), []), rows.get((size, "all"), [])
    if not p or not a:
        continue
    print(f"  {size:>8} B  plain {min(p)/1e3:8.2f} {statistics.median(p)/1e3:8.2f}"
          f"  all {min(a)/1e3:8.2f} {statistics.median(a)/1e3:8.2f}"
          f"  all/plain {min(a)/min(p):5.2f} {statistics.median(a)/statistics.median(p):5.2f}")
PY
