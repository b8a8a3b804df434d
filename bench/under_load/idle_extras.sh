# Section "idle_extras" of bench/under_load.sh, run only with IDLE_EXTRAS=1
# and never under the load: the two figures issue 44 asks of the idle VM,
# measured by the lead on a quiet machine (nothing else running):
#   noisy share  of the default `wulf run --no-npb` (target at most 10% of
#                its points noisy), per transport and in all;
#   events       bench/analysis_repro.sh (target: at least 0.8 of at least
#                5 edges per pair of runs come back).
# Budget: the default run (several minutes) and analysis_repro.sh's
# six 10 s sweeps.

idle_extras_case() { # $1 = idle|busy, $2 = round
  [ "$1" = idle ] && [ "$2" = 1 ] || return 0
  local d="$work/idle_extras"
  mkdir -p "$d/run"
  note_load "$d/run"
  (cd "$d/run" && "$BIN" run --no-npb --out "$d/run/out" >"$d/run.log" 2>&1) ||
    echo "# idle extras: wulf run failed: $(tail -1 "$d/run.log")"
  note_load "$d/run"
  note_load "$d/repro"
  KEEP="$d/repro" bench/analysis_repro.sh "$BIN" "${REPRO_BUDGET:-10s}" >"$d/repro.log" 2>&1 ||
    echo "# idle extras: analysis_repro.sh failed: $(tail -1 "$d/repro.log")"
  note_load "$d/repro"
}

idle_extras_report() {
  local d="$work/idle_extras"
  [ -d "$d" ] || return 0
  echo "## idle VM only (IDLE_EXTRAS=1): noisy share of the default wulf run, load $(tr '\n' - <"$d/run.load")"
  python3 - "$d/run/out" <<'PY'
import glob, json, sys
total = noisy = 0
for p in sorted(glob.glob(f"{sys.argv[1]}/**/*.json", recursive=True)):
    try:
        r = json.load(open(p))
    except ValueError:
        continue
    if not isinstance(r, dict) or not isinstance(r.get("points"), list) or "transport" not in r:
        continue
    n = sum(1 for q in r["points"] if q.get("noisy"))
    total += len(r["points"])
    noisy += n
    print(f"  {r['transport']:<16} {n:>4} of {len(r['points']):>4} noisy")
share = noisy / total if total else float("nan")
print(f"noisy share: {noisy} of {total} = {100 * share:.1f}% (target at most 10%)")
PY
  echo "## idle VM only (IDLE_EXTRAS=1): event reproducibility, load $(tr '\n' - <"$d/repro.load")"
  tail -n 15 "$d/repro.log"
}
