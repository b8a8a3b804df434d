#!/usr/bin/env bash
# Benchmark (not a test): does `wulf compare` survive an A/A test, and does
# it still see a real change? (issue 16, section 2)
#
# ROUNDS rounds, each: `wulf sweep shm` (spin), `wulf sweep tcp` and `wulf
# sweep shm --wait block`, BUDGET each, interleaved, so the runs of one
# configuration are spread over the whole bench. Then:
#
# * A/A, one run per side: round i against round i + ROUNDS/2 (minutes
#   apart) for shm and tcp, with the floor `wulf compare` picks (the
#   built-in default: no run-to-run spread is known); and A/A, three runs
#   per side (rounds i..i+2 against i+ROUNDS/2..): hierarchical bootstrap
#   and the floor from the runs. Figure: the share of band verdicts that
#   say "no change beyond run-to-run noise" (target >= 95%).
# * A/B: shm spin (A) against shm block (B), one run per side (same round)
#   and three per side. The true change of a band is taken from all runs
#   (every spin run against every block run); a band "should be detected"
#   when that change exceeds the floor the comparison used; the figure is
#   the share of those bands whose verdict names the right side.
#
# Usage: bench/compare_aa.sh [ROUNDS] [BUDGET] [OUTDIR]  (default 20 3s tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-20}
BUDGET=${2:-3s}
HALF=$((ROUNDS / 2))
WULF=${WULF:-target/release/wulf}
[ -x "$WULF" ] || cargo build --release --quiet
work=${3:-$(mktemp -d)}
mkdir -p "$work"
echo "runs in $work" >&2

sweep() { # $1 = config, $2 = round
    case $1 in
    spin) "$WULF" sweep shm --budget "$BUDGET" --quiet --json "$work/spin-$2.json" ;;
    tcp) "$WULF" sweep tcp --budget "$BUDGET" --quiet --json "$work/tcp-$2.json" ;;
    block) "$WULF" sweep shm --wait block --budget "$BUDGET" --quiet --json "$work/block-$2.json" ;;
    esac >/dev/null
}
start=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
    [ -f "$work/block-$r.json" ] && continue
    for c in spin tcp block; do sweep "$c" "$r"; done
    echo "round $r of $ROUNDS done ($(($(date +%s) - start)) s)" >&2
done

# One comparison: markdown band rows "name|change|floor|verdict" on stdout.
bands() {
    "$WULF" compare --markdown "$@" | python3 -c '
import sys
for line in sys.stdin:
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) == 8 and c[0] not in ("size band",) and not c[0].startswith("-"):
        change = float(c[4].rstrip("%")) / 100
        floor = float(c[6].split("%")[0].lstrip("+-")) / 100
        print(f"{c[0]}|{change}|{floor}|{c[7]}")
'
}
files() { # $1 = config, $2 = first round, $3 = count
    for r in $(seq "$2" $(($2 + $3 - 1))); do printf '%s ' "$work/$1-$r.json"; done
}

aa_total=0 aa_same=0 aa3_total=0 aa3_same=0
for c in spin tcp; do
    for i in $(seq 1 "$HALF"); do
        while IFS='|' read -r _ _ _ v; do
            aa_total=$((aa_total + 1))
            [ "$v" = "no change beyond run-to-run noise" ] && aa_same=$((aa_same + 1))
        done < <(bands "$work/$c-$i.json" "$work/$c-$((i + HALF)).json")
    done
    for i in $(seq 1 3 $((HALF - 2))); do
        # shellcheck disable=SC2046
        while IFS='|' read -r _ _ _ v; do
            aa3_total=$((aa3_total + 1))
            [ "$v" = "no change beyond run-to-run noise" ] && aa3_same=$((aa3_same + 1))
        done < <(bands $(files "$c" "$i" 3) -- $(files "$c" $((i + HALF)) 3))
    done
done

# The true change per band: all spin runs against all block runs.
# shellcheck disable=SC2046
truth=$(bands $(files spin 1 "$ROUNDS") -- $(files block 1 "$ROUNDS"))
echo "true change, shm spin (A) -> shm block (B), $ROUNDS runs each:"
echo "$truth" | awk -F'|' '{printf "  %-16s %+7.1f%%  (floor %.1f%%) %s\n", $1, 100*$2, 100*$3, $4}'
detect() { # reads band rows of one A/B comparison; prints "should detected"
    python3 -c '
import sys, math
truth = {}
for l in sys.argv[1].splitlines():
    n, ch, _, _ = l.split("|"); truth[n] = float(ch)
should = hit = 0
for l in sys.stdin:
    n, ch, fl, v = l.strip().split("|")
    t = truth.get(n)
    if t is None or abs(math.log1p(t)) <= math.log1p(float(fl)):
        continue
    should += 1
    hit += v == ("A faster" if t > 0 else "B faster")
print(should, hit)
' "$truth"
}
ab_should=0 ab_hit=0 ab3_should=0 ab3_hit=0
for i in $(seq 1 "$ROUNDS"); do
    read -r s h < <(bands "$work/spin-$i.json" "$work/block-$i.json" | detect)
    ab_should=$((ab_should + s)) ab_hit=$((ab_hit + h))
done
for i in $(seq 1 3 $((ROUNDS - 2))); do
    # shellcheck disable=SC2046
    read -r s h < <(bands $(files spin "$i" 3) -- $(files block "$i" 3) | detect)
    ab3_should=$((ab3_should + s)) ab3_hit=$((ab3_hit + h))
done

pct() { if [ "$2" -gt 0 ]; then echo "$((100 * $1 / $2))% ($1 of $2)"; else echo "n/a (0)"; fi; }
echo "A/A one run per side:    no change in $(pct $aa_same $aa_total) band verdicts (target >= 95%)"
echo "A/A three runs per side: no change in $(pct $aa3_same $aa3_total) band verdicts"
echo "A/B one run per side:    detected $(pct $ab_hit $ab_should) of bands whose true change exceeds the floor"
echo "A/B three runs per side: detected $(pct $ab3_hit $ab3_should) of bands whose true change exceeds the floor"
echo "wall time: $(($(date +%s) - start)) s"
