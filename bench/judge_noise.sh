#!/usr/bin/env bash
# Benchmark (not a test): judgements under noise (issue 44 item 2), idle
# and beside a bounded competing load (`stress-ng --cpu 2`), one run per
# side:
#   halved   wulf sweep tcp --lab 200mbit --sizes 256Ki:4Mi against
#            --lab 100mbit: compare --fail-if-slower 10 must detect it
#            (exit 4, "A faster"), idle and loaded.
#   A/A      two --lab 200mbit runs: no change claimed, the gate passes
#            (exit 0) where both are link-bound.
#   table 2  wulf study fe-vs-ge --quick (3 interleaved rounds): each
#            ratio's median, lowest and highest round and its spread
#            ((high - low) / median; target <= 20%) from study.json.
# Needs root (lab links) and stress-ng for the loaded half.
#
# Usage: [ONLY=tcp,pvm] bench/judge_noise.sh [BUDGET] [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=${1:-10s}
WULF=${WULF:-target/release/wulf}
[ -x "$WULF" ] || cargo build --release --quiet
work=${2:-$(mktemp -d)}
mkdir -p "$work"
echo "runs in $work; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[ "$(id -u)" -eq 0 ] || { echo "not root: no lab links" >&2; exit 2; }

sweep() { # $1 = link, $2 = file
    "$WULF" sweep tcp --lab "$1" --sizes 256Ki:4Mi --budget "$BUDGET" --quiet --json "$2" \
        >/dev/null 2>"$2.log" || echo "sweep $1 failed: $(tail -1 "$2.log")" >&2
}

# One comparison: its band verdicts and figures' verdicts counted, the
# band source(s), and the gate's exit code at 10%.
judge() { # $1 = label, $2 = A, $3 = B
    local code=0 out
    out=$("$WULF" compare "$2" "$3" --fail-if-slower 10 2>/dev/null) || code=$?
    local a b same inc
    a=$(grep -c "A faster" <<<"$out" || true)
    b=$(grep -c "B faster" <<<"$out" || true)
    same=$(grep -c "no change (within" <<<"$out" || true)
    inc=$(grep -c "inconclusive: too" <<<"$out" || true)
    local band
    band=$(grep -o '(link-bound)\|(far beyond the noise)\|unknown (unclean runs)\|(trials)\|(drift)\|(minimum)' <<<"$out" | sort -u | tr '\n' ' ' || true)
    printf '%-22s A-faster %s  B-faster %s  same %s  inconclusive %s  exit %s  bands %s\n' \
        "$1" "$a" "$b" "$same" "$inc" "$code" "$band"
    grep -E '^(64 KiB - 1 MiB|> 1 MiB|latency|peak) ' <<<"$out" | sed 's/^/    /' || true
}

for cond in idle loaded; do
    pid=""
    if [ "$cond" = loaded ]; then
        command -v stress-ng >/dev/null || { echo "no stress-ng: loaded half skipped" >&2; break; }
        timeout 600 stress-ng --cpu 2 --quiet &
        pid=$!
        sleep 2
    fi
    sweep 200mbit "$work/$cond-200a.json"
    sweep 100mbit "$work/$cond-100.json"
    sweep 200mbit "$work/$cond-200b.json"
    echo "$cond: load $(cut -d' ' -f1-3 /proc/loadavg)"
    judge "$cond halved" "$work/$cond-200a.json" "$work/$cond-100.json"
    judge "$cond A/A" "$work/$cond-200a.json" "$work/$cond-200b.json"
    [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
done

only=()
[ -n "${ONLY:-}" ] && only=(--only "$ONLY")
"$WULF" study fe-vs-ge --quick "${only[@]}" --json --out "$work" >"$work/study.json" 2>"$work/study.log" ||
    echo "study failed: $(tail -1 "$work/study.log")" >&2
echo "table 2 ratios over the study's rounds: load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/study.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for r in s.get("ratios", []):
    spread = (r["high"] - r["low"]) / r["median"] if r["median"] else float("nan")
    print(f'  {r["numerator"]:>18} / {r["denominator"]:<12} {r["figure"]:<8} {r["link"]:<6} '
          f'median {r["median"]:.3f} [{r["low"]:.3f}, {r["high"]:.3f}] over {len(r["per_round"])} '
          f'rounds, spread {100 * spread:.1f}% ({"<= 20%" if spread <= 0.2 else "> 20%"}), '
          f'faster: {r.get("faster", "none")}')
PY
