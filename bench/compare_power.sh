#!/usr/bin/env bash
# Benchmark (not a test): does `wulf compare` see real changes and never
# cry wolf? (issue 28: "compare has no power, and still cries wolf")
#
# ROUNDS interleaved rounds (default 5), each one run of every
# configuration, BUDGET each (default 2s):
#   tcp      wulf sweep tcp
#   tcpbuf   wulf sweep tcp --sndbuf 4Ki --rcvbuf 4Ki
#   spin     wulf sweep shm              (busy-polling waits)
#   block    wulf sweep shm --wait block
#   lab200   wulf sweep tcp --lab 200mbit  (two lab nodes; needs root)
#   lab100   wulf sweep tcp --lab 100mbit  (the same link halved)
# Then, printed as one line per figure:
#   A/A      every ordered pair (i, j), i != j, of tcp and of spin, one run
#            per side: the share of band verdicts that claim a change
#            (target <= 5%) and the comparisons a --fail-if-slower 10 gate
#            fails with exit 4 (target 0).
#   A/B      tcp -> tcpbuf, spin -> block, lab200 -> lab100, one run per
#            side (round i against round i) and three runs per side
#            (rounds 1-3 against 1-3): of the bands whose true change is
#            beyond 25% (the median change over every A run against every
#            B run), the share whose verdict names the slower side.
#
# Usage: [CONFIGS="tcp spin"] bench/compare_power.sh [ROUNDS] [BUDGET] [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
BUDGET=${2:-2s}
WULF=${WULF:-target/release/wulf}
[ -x "$WULF" ] || cargo build --release --quiet
work=${3:-$(mktemp -d)}
mkdir -p "$work"
echo "runs in $work" >&2
configs="tcp tcpbuf spin block"
if [ "$(id -u)" -eq 0 ]; then configs="$configs lab200 lab100"; else echo "not root: no lab links" >&2; fi
# CONFIGS="tcp spin" measures only those (the A/A lines alone: minutes,
# where the lab's sweeps take about 400 s a round).
configs=${CONFIGS:-$configs}

sweep() { # $1 = config, $2 = round
    local out="$work/$1-$2.json"
    case $1 in
    tcp) "$WULF" sweep tcp --budget "$BUDGET" --quiet --json "$out" ;;
    tcpbuf) "$WULF" sweep tcp --sndbuf 4Ki --rcvbuf 4Ki --budget "$BUDGET" --quiet --json "$out" ;;
    spin) "$WULF" sweep shm --budget "$BUDGET" --quiet --json "$out" ;;
    block) "$WULF" sweep shm --wait block --budget "$BUDGET" --quiet --json "$out" ;;
    lab200) "$WULF" sweep tcp --lab 200mbit --budget "$BUDGET" --quiet --json "$out" ;;
    lab100) "$WULF" sweep tcp --lab 100mbit --budget "$BUDGET" --quiet --json "$out" ;;
    esac >/dev/null 2>&1 || echo "sweep $1 round $2 failed" >&2
}
start=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
    for c in $configs; do [ -f "$work/$c-$r.json" ] || sweep "$c" "$r"; done
    echo "round $r of $ROUNDS done ($(($(date +%s) - start)) s)" >&2
done

# One comparison's band rows as "name|change|verdict", and its exit code
# at a 10% gate on the last line as "exit|CODE".
bands() {
    local code=0
    "$WULF" compare --markdown --fail-if-slower 10 "$@" >"$work/cmp.md" 2>/dev/null || code=$?
    python3 - "$work/cmp.md" <<'EOF'
import sys
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) == 8 and c[0] != "size band" and not c[0].startswith("-"):
        print(f"{c[0]}|{float(c[4].rstrip('%')) / 100}|{c[7]}")
EOF
    echo "exit|$code"
}
files() { # $1 = config, $2 = first round, $3 = count
    for r in $(seq "$2" $(($2 + $3 - 1))); do printf '%s ' "$work/$1-$r.json"; done
}
have() { [ -f "$work/$1-1.json" ]; }

for c in tcp spin; do
    have "$c" || continue
    total=0 claims=0 gates=0 pairs=0
    for i in $(seq 1 "$ROUNDS"); do
        for j in $(seq 1 "$ROUNDS"); do
            [ "$i" -ne "$j" ] && [ -f "$work/$c-$i.json" ] && [ -f "$work/$c-$j.json" ] || continue
            pairs=$((pairs + 1))
            while IFS='|' read -r name _ v; do
                if [ "$name" = exit ]; then [ "$v" = 4 ] && gates=$((gates + 1)); continue; fi
                total=$((total + 1))
                case $v in "A faster" | "B faster") claims=$((claims + 1)) ;; esac
            done < <(bands "$work/$c-$i.json" "$work/$c-$j.json")
        done
    done
    echo "A/A $c: $claims of $total band verdicts claim a change ($pairs ordered pairs); gate exit 4 in $gates"
done

# The true change of each band: the median over every A run against every
# B run, one run per side.
truth() { # $1 = A config, $2 = B config
    for i in $(seq 1 "$ROUNDS"); do
        for j in $(seq 1 "$ROUNDS"); do
            [ -f "$work/$1-$i.json" ] && [ -f "$work/$2-$j.json" ] || continue
            bands "$work/$1-$i.json" "$work/$2-$j.json" | grep -v '^exit|'
        done
    done | python3 -c '
import sys, statistics
by = {}
for l in sys.stdin:
    n, ch, _ = l.strip().split("|"); by.setdefault(n, []).append(float(ch))
for n, v in by.items(): print(f"{n}|{statistics.median(v)}")
'
}
score() { # $1 = truth rows; stdin: band rows of A/B comparisons; prints "should hit"
    python3 -c '
import sys, math
truth = dict(l.split("|") for l in sys.argv[1].splitlines())
should = hit = 0
for l in sys.stdin:
    parts = l.strip().split("|")
    if len(parts) != 3 or parts[0] not in truth: continue
    n, _, v = parts
    t = float(truth[n])
    if abs(math.log1p(t)) <= math.log1p(0.25): continue
    should += 1
    hit += v == ("A faster" if t > 0 else "B faster")
print(should, hit)
' "$1"
}
for pair in "tcp tcpbuf" "spin block" "lab200 lab100"; do
    set -- $pair
    have "$1" && have "$2" || continue
    t=$(truth "$1" "$2")
    read -r s1 h1 < <(for i in $(seq 1 "$ROUNDS"); do
        [ -f "$work/$1-$i.json" ] && [ -f "$work/$2-$i.json" ] && bands "$work/$1-$i.json" "$work/$2-$i.json"
    done | score "$t")
    s3=0 h3=0
    if [ "$ROUNDS" -ge 3 ]; then
        # shellcheck disable=SC2046
        read -r s3 h3 < <(bands $(files "$1" 1 3) -- $(files "$2" 1 3) | score "$t")
    fi
    echo "A/B $1 -> $2: one run per side $h1 of $s1 changed bands detected; three runs per side $h3 of $s3"
    echo "    true change per band: $(echo "$t" | python3 -c '
import sys
print(", ".join(f"{n} {100 * float(c):+.1f}%" for n, c in (l.strip().split("|") for l in sys.stdin if l.strip())))
')"
done
