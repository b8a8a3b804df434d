# Section "study" of bench/under_load.sh: Table 2 of `wulf study fe-vs-ge
# --quick` (Nguyen 2001), idle and loaded. The study runs its own three
# interleaved rounds (every transport over both links once per round) and
# takes each ratio within a round, so one study is the three runs of the
# issue's "Table 2 ratios over 3 runs": it runs in the first round of the
# bench only. Printed per ratio: its rounds, its spread ((highest - lowest)
# / median; target at most 20%) and whether the study's own warnings name
# it as moved.
# Budget: the study's --quick budgets (STUDY_ONLY=t1,t2 passes --only).

study_case() { # $1 = idle|busy, $2 = round
  [ "$2" = 1 ] || return 0
  local d="$work/study/$1"
  mkdir -p "$d"
  local only=()
  [ -n "${STUDY_ONLY:-}" ] && only=(--only "$STUDY_ONLY")
  note_load "$d/study"
  local t0=$SECONDS
  "$BIN" study fe-vs-ge --quick "${only[@]}" --json --out "$d" >"$d/study.json" 2>"$d/study.err" ||
    echo "# study $1 failed: $(tail -1 "$d/study.err")"
  note_load "$d/study"
  echo "$((SECONDS - t0))" >"$d/study.wall"
}

study_report() {
  echo "## study fe-vs-ge --quick: Table 2 ratios over the study's 3 interleaved rounds"
  python3 - "$work/study" <<'PY'
import json, os, sys
work = sys.argv[1]
for l in ("idle", "busy"):
    p = f"{work}/{l}/study.json"
    try:
        s = json.load(open(p))
    except (OSError, ValueError) as e:
        continue
    la = "-".join(open(f"{work}/{l}/study.load").read().split())
    wall = open(f"{work}/{l}/study.wall").read().strip()
    warned = "\n".join(s.get("warnings", []))
    within = moved_named = moved_silent = 0
    print(f"{l}: {wall} s, load {la}")
    for r in s.get("ratios", []):
        if len(r["per_round"]) < 2:
            print(f"  {r['numerator']:>14} / {r['denominator']:<12} {r['figure']:<8} {r['link']:<6} one round only")
            continue
        spread = (r["high"] - r["low"]) / r["median"] if r["median"] else float("inf")
        key = f"{r['numerator']} / {r['denominator']} {r['figure']} over {r['link']} moved"
        said = key in warned
        if spread <= 0.2:
            within += 1
        elif said:
            moved_named += 1
        else:
            moved_silent += 1
        rounds = ", ".join(f"{x:.3f}" for x in r["per_round"])
        print(f"  {r['numerator']:>14} / {r['denominator']:<12} {r['figure']:<8} {r['link']:<6} "
              f"{rounds:<24} spread {100 * spread:6.1f}% "
              f"{'<= 20%' if spread <= 0.2 else ('> 20%, named by the study' if said else '> 20%, NOT named')}")
    cases = s.get("cases", [])
    held = sum(bool(c.get("latency_interfered")) + bool(c.get("peak_interfered")) for c in cases)
    print(f"study {l}: {within} ratios within 20%, {moved_named} moved and named in the study's warnings, "
          f"{moved_silent} moved unnamed (target: none unnamed); {held} figures of {2 * len(cases)} "
          f"withheld (other work kept an end off its CPU: latency_interfered, peak_interfered)")
PY
}
