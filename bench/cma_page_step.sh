#!/usr/bin/env bash
# Benchmark (not a test): does `wulf sweep cma` name the page step that a
# plain process_vm_readv probe measures (issue 49)? cma pays about
# 250-260 ns for each extra 4 KiB page a message spans; wulf's analysis
# names such a step "cma page" (src/transport/cma.rs states the page,
# analysis::causes names the event). In each round, interleaved on the
# same machine: bench/cma_page_probe.sh at the sizes (the fastest block's
# time per call), then `wulf sweep cma --sizes SIZES`; each prints the
# step at each page boundary (4096 -> 4099 B, 8192 -> 8195 B, ...) in ns,
# and wulf's line the events its analysis named (`wulf report --format
# markdown`: switch-overs and drop-outs with their likely causes).
#
# At load 11-12 (2 vCPUs), a 5 s budget left sizes out (the deadline),
# and 20 s named the step at 4099 and 8195 B in each of 3 rounds, at times
# unconfirmed by the fresh trials; docs/validation.md has the rows.
#
# usage: bench/cma_page_step.sh [ROUNDS] [BUDGET (20s)] [OUTDIR]
#   SIZES=4096,4099,8192,8195,12288,12291 (pairs 3 B apart at each page)
#   WULF=target/ci/wulf (or target/release/wulf)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
BUDGET=${2:-20s}
SIZES=${SIZES:-4096,4099,8192,8195,12288,12291}
WULF=${WULF:-target/ci/wulf}
[ -x "$WULF" ] || WULF=target/release/wulf
[ -x "$WULF" ] || { echo "build wulf first (cargo build --profile ci)" >&2; exit 2; }
work=${3:-$(mktemp -d)}
mkdir -p "$work"
echo "sizes $SIZES, $ROUNDS rounds, wulf budget $BUDGET; files in $work"

# The steps (ns) between the members of each pair of sizes, from the
# probe's "bytes ns" lines in the order of SIZES.
steps() {
    awk '{ t[NR] = $2 } END { for (i = 2; i <= NR; i += 2) printf " %+.0f", t[i] - t[i-1]; print "" }'
}

for r in $(seq "$ROUNDS"); do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    bench/cma_page_probe.sh "$SIZES" 20000 31 >"$work/probe-$r.txt"
    probe=$(awk 'NR > 1 { print $1, $3 }' "$work/probe-$r.txt" | steps)
    "$WULF" sweep cma --sizes "$SIZES" --budget "$BUDGET" --quiet \
        --json "$work/sweep-$r.json" >"$work/sweep-$r.txt" 2>&1
    # Pairs by size: a size the --budget left out shows as n/a.
    wulf=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
t = {p["bytes"]: p["median_ns"] for p in r["points"]}
sizes = [int(s) for s in sys.argv[2].split(",")]
print("".join(" %+.0f" % (t[b] - t[a]) if a in t and b in t else " n/a"
              for a, b in zip(sizes[::2], sizes[1::2])))
' "$work/sweep-$r.json" "$SIZES")
    "$WULF" report "$work/sweep-$r.json" --format markdown -o "$work/sweep-$r.md" >/dev/null
    # Each event named after the page: where it starts, and whether the
    # fresh trials confirmed it.
    named=$(python3 -c '
import re, sys
out = []
for line in open(sys.argv[1]):
    m = re.search(r"(drop-out|switch-over) at ([0-9]+) B", line)
    if m and "cma page" in line:
        st = re.search(r"\[(.*)\]", line)
        out.append("%s B (%s, %s)" % (m.group(2), m.group(1), st.group(1) if st else "no fresh trials"))
print("; ".join(out))
' "$work/sweep-$r.md")
    others=$(grep -cE "(drop-out|switch-over) at" "$work/sweep-$r.md" || true)
    noisy=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"]; print(sum(x["noisy"] for x in p), "of", len(p))' "$work/sweep-$r.json")
    echo "round $r (load $load)"
    echo "  probe  step per page, ns (fastest block):${probe}"
    echo "  wulf   step per page, ns (median):       ${wulf}"
    echo "  wulf   events named 'cma page': ${named:-none} (events in all: $others; noisy points: $noisy)"
done
