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
# * A/B: shm spin (A) against shm block (B), and tcp (A) against tcp with
#   4 KiB socket buffers (B, rounds 1 to ROUNDS/2 only: its sweeps are
#   slow), one run per side (same round) and three per side. The true
#   change of a band is taken from all runs (every A run against every B
#   run); a band "should be detected" when that change exceeds the floor
#   the comparison used; the figure is the share of those bands whose
#   verdict names the right side.
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
    tcpbuf) "$WULF" sweep tcp --sndbuf 4Ki --rcvbuf 4Ki --budget "$BUDGET" --quiet --json "$work/tcpbuf-$2.json" ;;
    esac >/dev/null
}
start=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
    configs="spin tcp block"
    [ "$r" -le "$HALF" ] && configs="$configs tcpbuf"
    for c in $configs; do [ -f "$work/$c-$r.json" ] || sweep "$c" "$r"; done
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

detect() { # $1 = true band rows; reads one A/B comparison's; prints "should hit"
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
' "$1"
}
# A/B of configs $1 (A) and $2 (B) over rounds 1..$3: sets ab1 and ab3 to
# "hit should" for one and three runs per side.
ab() {
    # shellcheck disable=SC2046
    local truth s h s1=0 h1=0 s3=0 h3=0
    truth=$(bands $(files "$1" 1 "$ROUNDS") -- $(files "$2" 1 "$3"))
    echo "true change, $1 (A) -> $2 (B), all runs:"
    echo "$truth" | awk -F'|' '{printf "  %-16s %+9.1f%%  %s\n", $1, 100*$2, $4}'
    for i in $(seq 1 "$3"); do
        read -r s h < <(bands "$work/$1-$i.json" "$work/$2-$i.json" | detect "$truth")
        s1=$((s1 + s)) h1=$((h1 + h))
    done
    for i in $(seq 1 3 $(($3 - 2))); do
        # shellcheck disable=SC2046
        read -r s h < <(bands $(files "$1" "$i" 3) -- $(files "$2" "$i" 3) | detect "$truth")
        s3=$((s3 + s)) h3=$((h3 + h))
    done
    ab1="$h1 $s1" ab3="$h3 $s3"
}
ab spin block "$ROUNDS"
read -r ab_hit ab_should <<<"$ab1"
read -r ab3_hit ab3_should <<<"$ab3"
ab tcp tcpbuf "$HALF"
read -r tb_hit tb_should <<<"$ab1"
read -r tb3_hit tb3_should <<<"$ab3"

pct() { if [ "$2" -gt 0 ]; then echo "$((100 * $1 / $2))% ($1 of $2)"; else echo "n/a (0)"; fi; }
echo "A/A one run per side:    no change in $(pct $aa_same $aa_total) band verdicts (target >= 95%)"
echo "A/A three runs per side: no change in $(pct $aa3_same $aa3_total) band verdicts"
echo "A/B shm spin/block, one run per side:    detected $(pct "$ab_hit" "$ab_should") of bands whose true change exceeds the floor"
echo "A/B shm spin/block, three runs per side: detected $(pct "$ab3_hit" "$ab3_should") of bands whose true change exceeds the floor"
echo "A/B tcp/4 KiB buffers, one run per side:    detected $(pct "$tb_hit" "$tb_should") of bands whose true change exceeds the floor"
echo "A/B tcp/4 KiB buffers, three runs per side: detected $(pct "$tb3_hit" "$tb3_should") of bands whose true change exceeds the floor"
echo "wall time: $(($(date +%s) - start)) s"
