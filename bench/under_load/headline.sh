# Section "headline" of bench/under_load.sh: tcp and shm sweeps at 8 B and
# 64 KiB (their headline latency, the median of the clean blocks: see
# docs/methodology.md, "Clean blocks") and their peak. Per case the
# loaded/idle ratio of the medians over the rounds; target 0.8-1.25, or
# the figure withheld with its reason (fewer than three clean blocks:
# marked noisy and named in the result's warnings), or, for the
# latencies, an idle run whose blocking waits measured a CPU's wake-up
# (the result's `wake_up` probe, budgets of 2 s and more).
# Budget: HEADLINE_BUDGET per sweep (default 2s, the least that runs the
# wake-up probe): 4 sweeps a round, about 12 s.

headline_case() { # $1 = idle|busy, $2 = round
  local t out
  for t in tcp shm; do
    out="$work/headline/$t-$1-$2.json"
    mkdir -p "$work/headline"
    note_load "$out"
    "$BIN" sweep "$t" --sizes 8,64Ki,1Mi --budget "${HEADLINE_BUDGET:-2s}" --quiet --json "$out" \
      >/dev/null 2>"$out.err" || echo "# headline: $t $1 round $2 failed: $(tail -1 "$out.err")"
    note_load "$out"
  done
}

headline_report() {
  echo "## headline latency and peak, idle and beside stress-ng --cpu 2 (budget ${HEADLINE_BUDGET:-2s})"
  python3 - "$work/headline" "$ROUNDS" <<'PY'
import json, os, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def load(t, l, r):
    p = f"{work}/{t}-{l}-{r}.json"
    if not os.path.exists(p):
        return None, None
    la = open(p + ".load").read().split()
    return json.load(open(p)), "-".join(la)
print(f"{'case':<10} {'load':<5} {'round':>5} {'median_ns':>12} {'clean':>6} {'noisy':>5} {'loadavg':>9}")
rows, woken = {}, {}
for r in range(1, rounds + 1):
    for t in ("tcp", "shm"):
        for l in ("idle", "busy"):
            res, la = load(t, l, r)
            if res is None:
                continue
            # The result's own wake-up probe: an idle run whose blocking
            # waits measured a CPU's wake-up has no transport figure to
            # hold the loaded one to.
            wake = res.get("wake_up") or {}
            if l == "idle" and wake.get("dominated"):
                woken.setdefault(t, []).append(
                    f"{wake['blocked_ns'] / 1e3:.1f} us blocked vs {wake['spinning_ns'] / 1e3:.1f} spinning")
            for p in res["points"]:
                if p["bytes"] not in (8, 65536):
                    continue
                case = f"{t} {p['bytes']}B"
                share = p.get("clean_share")
                clean = len(p["trials_ns"]) - len(p.get("disturbed_trials", []))
                withheld = l == "busy" and clean < 3
                print(f"{case:<10} {l:<5} {r:>5} {p['median_ns']:>12.0f} "
                      f"{'-' if share is None else f'{share:.2f}':>6} {str(p['noisy']):>5} {la:>9}")
                rows.setdefault((case, l), []).append(None if withheld else p["median_ns"])
            peak = res["summary"].get("peak_bits_per_s")
            if peak:
                rows.setdefault((f"{t} peak", l), []).append(peak)
print()
print(f"{'case':<10} {'idle':>12} {'busy':>12} {'busy/idle':>9}  verdict")
for case in ("tcp 8B", "tcp 65536B", "tcp peak", "shm 8B", "shm 65536B", "shm peak"):
    idle = [v for v in rows.get((case, "idle"), []) if v is not None]
    busy = rows.get((case, "busy"), [])
    kept = [v for v in busy if v is not None]
    if not idle or not kept:
        why = "withheld: fewer than 3 clean blocks in every loaded run" if idle else "no idle figure"
        print(f"{case:<10} {'':>12} {'':>12} {'-':>9}  {why}")
        continue
    t = case.split()[0]
    if woken.get(t) and not case.endswith("peak"):
        print(f"{case:<10} {'':>12} {'':>12} {'-':>9}  withheld: the idle run's blocking waits measured a "
              f"CPU's wake-up ({len(woken[t])} of {rounds} idle runs; {woken[t][0]}: its result's wake_up)")
        continue
    i, b = statistics.median(idle), statistics.median(kept)
    if case.endswith("peak"):
        i_s, b_s = f"{i / 1e6:.0f} Mbit/s", f"{b / 1e6:.0f} Mbit/s"
    else:
        i_s, b_s = f"{i:.0f} ns", f"{b:.0f} ns"
    ratio = b / i
    ok = "ok" if 0.8 <= ratio <= 1.25 else "OUT"
    note = f" ({len(busy) - len(kept)} loaded run(s) withheld)" if len(kept) < len(busy) else ""
    print(f"{case:<10} {i_s:>12} {b_s:>12} {ratio:>9.2f}  {ok}{note}")
PY
}
