#!/usr/bin/env bash
# Benchmark (not a test): does a sweep measure the transport, not the
# neighbours (issue 44)? tcp and shm sweeps at 8 B and 64 KiB (their
# headline latency, the median of the clean blocks: see docs/methodology.md,
# "Clean blocks") and their peak, each idle and beside `stress-ng --cpu 2`
# (two hogs, one per CPU of this 2-vCPU VM, bounded by --timeout and stopped
# by their own process id), interleaved, ROUNDS rounds. Prints every run
# (median, clean share, noisy), then per case the loaded/idle ratio of the
# medians over the rounds; target 0.8-1.25, or the figure withheld with its
# reason (fewer than three clean blocks: marked noisy and named in the
# result's warnings), or, for the latencies, an idle run whose blocking
# waits measured a CPU's wake-up (the result's `wake_up` probe, budgets of
# 2 s and more). The load average is printed beside each run.
# Usage: bench/under_load.sh [BIN] [BUDGET] [ROUNDS]
#   BIN    default target/ci/wulf
#   BUDGET default 2s (per sweep)
#   ROUNDS default 3
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/ci/wulf}
BUDGET=${2:-2s}
ROUNDS=${3:-3}
work=$(mktemp -d)
load_pid=
stop_load() { if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; load_pid=; fi; }
trap 'stop_load; rm -rf "$work"' EXIT

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $BIN, --budget $BUDGET, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  for t in tcp shm; do
    for load in idle busy; do
      stop_load
      if [ "$load" = busy ]; then
        stress-ng --cpu 2 --timeout 120s >/dev/null 2>&1 &
        load_pid=$!
        sleep 2
      fi
      la=$(cut -d' ' -f1 /proc/loadavg)
      out="$work/$t-$load-$round.json"
      "$BIN" sweep "$t" --sizes 8,64Ki,1Mi --budget "$BUDGET" --quiet --json "$out" \
        >/dev/null 2>"$work/err" || { echo "# $t $load round $round failed: $(tail -1 "$work/err")"; }
      stop_load
      echo "$la" >"$out.load"
    done
  done
done

python3 - "$work" "$ROUNDS" <<'PY'
import glob, json, os, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def load(t, l, r):
    p = f"{work}/{t}-{l}-{r}.json"
    if not os.path.exists(p):
        return None, None
    return json.load(open(p)), open(p + ".load").read().strip()
print(f"{'case':<10} {'load':<5} {'round':>5} {'median_ns':>12} {'clean':>6} {'noisy':>5} {'loadavg':>7}")
rows = {}
woken = {}
for r in range(1, rounds + 1):
    for t in ("tcp", "shm"):
        for l in ("idle", "busy"):
            res, la = load(t, l, r)
            if res is None:
                continue
            # The result's own wake-up probe (budgets of 2 s and more): an
            # idle run whose blocking waits measured a CPU's wake-up has no
            # transport figure to hold the loaded one to.
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
                      f"{'-' if share is None else f'{share:.2f}':>6} {str(p['noisy']):>5} {la:>7}")
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
        # Rates: loaded over idle, as for the latencies.
        i_s, b_s = f"{i / 1e6:.0f} Mbit/s", f"{b / 1e6:.0f} Mbit/s"
    else:
        i_s, b_s = f"{i:.0f} ns", f"{b:.0f} ns"
    ratio = b / i
    ok = "ok" if 0.8 <= ratio <= 1.25 else "OUT"
    note = f" ({len(busy) - len(kept)} loaded run(s) withheld)" if len(kept) < len(busy) else ""
    print(f"{case:<10} {i_s:>12} {b_s:>12} {ratio:>9.2f}  {ok}{note}")
PY
