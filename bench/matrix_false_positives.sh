#!/usr/bin/env bash
# Benchmark (not a test): false findings of `wulf matrix` on a healthy lab
# (issue 35: goal 0), and whether it keeps its --budget (within 1.2 x).
# REPEATS matrices of a 6-node lab whose links are all alike, each with a
# fresh seed (recorded): every slow node, slow link (not explained by a
# lossy link) and asymmetric pair named is a false positive. Printed per
# run: the seed, the measurement's time against the budget, whether the
# rounds were host-bound, and what was named; then the totals.
# Usage: bench/matrix_false_positives.sh [REPEATS] [BUDGET] [LINK]
#        (defaults 5, 12s, ge; WULF=path overrides the release build; root)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-5}
BUDGET=${2:-12s}
LINK=${3:-ge}
if [ -z "${WULF:-}" ]; then
  cargo build --release --quiet
  WULF=$(pwd)/target/release/wulf
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) CPUs)"
for r in $(seq "$REPEATS"); do
  "$WULF" matrix --lab "$LINK" --nodes 6 --budget "$BUDGET" --bandwidth-size 1Mi \
    --quiet --json "$work/m-$r.json" >/dev/null || true
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$REPEATS" <<'PY'
import json, sys
work, repeats = sys.argv[1], int(sys.argv[2])
total, worst = 0, 0.0
for r in range(1, repeats + 1):
    try:
        m = json.load(open(f"{work}/m-{r}.json"))
    except (OSError, ValueError) as e:
        print(f"run {r}: no result ({e})")
        continue
    a, names = m["analysis"], [n["name"] for n in m["nodes"]]
    found = [f"slow node {names[s['node']]} ({s['metric']})" for s in a["slow_nodes"]]
    found += [f"slow link {names[c['from']]}->{names[c['to']]} ({c['metric']})"
              for c in a["outlier_cells"] if not c["explained_by_node"]]
    found += [f"asymmetric {names[p['a']]}<->{names[p['b']]} ({p['metric']})"
              for p in a["asymmetric_pairs"]]
    total += len(found)
    budget = m.get("budget_s") or float("nan")
    worst = max(worst, m["rounds_s"] / budget)
    hb = a.get("host_bound")
    print(f"run {r}: seed {m.get('seed')}, measured {m['rounds_s']:.1f} s of {budget:.0f} s "
          f"({m['rounds_s'] / budget:.2f} x), start-up {m['wall_s'] - m['rounds_s']:.1f} s, "
          f"host-bound {'%.2f of the links' % hb['link_share'] if hb else 'no'}, "
          f"unconfirmed {a.get('unconfirmed', 0)}, named: {', '.join(found) or 'nothing'}")
print(f"false positives: {total} in {repeats} healthy matrices (goal 0); "
      f"worst measurement / budget {worst:.2f} (bound 1.2)")
PY
