#!/usr/bin/env bash
# Benchmark (not a test): pinned ends against `--no-pin` on a machine whose
# CPUs other work also uses (issue 44: "local sweeps pinned to CPUs that
# other work also uses were 8-47x slower than --no-pin"). tcp and shm
# sweeps at 8 B and 64 KiB, the default placement and `--no-pin`
# interleaved, ROUNDS rounds. Prints every run (median, where the ends ran,
# the load average) and per case the ratio default/no-pin of the medians
# (median over the rounds, min-max). With LOAD=stress, `stress-ng --cpu N`
# (N = CPUs, bounded by --timeout, stopped by its own process id) runs
# beside every sweep; otherwise the machine's own load is the condition.
# Usage: bench/pinned_busy.sh [BIN] [BUDGET] [ROUNDS]
set -euo pipefail
BIN=$(realpath "${1:-target/ci/wulf}")
BUDGET=${2:-2s}
ROUNDS=${3:-3}
work=$(mktemp -d)
load_pid=
stop_load() { if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; load_pid=; fi; }
trap 'stop_load; rm -rf "$work"' EXIT
cd "$work"
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $BIN, --budget $BUDGET, $ROUNDS rounds, LOAD=${LOAD:-none}"
for round in $(seq 1 "$ROUNDS"); do
  for t in tcp shm; do
    for pin in default nopin; do
      if [ "${LOAD:-}" = stress ]; then
        stress-ng --cpu "$(nproc)" --timeout 60s >/dev/null 2>&1 &
        load_pid=$!
        sleep 1
      fi
      flags=()
      [ "$pin" = nopin ] && flags=(--no-pin)
      out="$work/$t-$pin-$round.json"
      cut -d' ' -f1 /proc/loadavg >"$out.load"
      "$BIN" sweep "$t" --sizes 8,64Ki --budget "$BUDGET" "${flags[@]}" --quiet --json "$out" \
        >/dev/null 2>"$work/err" || echo "# $t $pin round $round failed: $(tail -1 "$work/err")"
      stop_load
    done
  done
done
python3 - "$work" "$ROUNDS" <<'PY'
import json, os, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
print(f"{'case':<10} {'ends':<8} {'round':>5} {'median_ns':>12} {'cpus':>7} {'loadavg':>7}  note")
for r in range(1, rounds + 1):
    for t in ("tcp", "shm"):
        for pin in ("default", "nopin"):
            p = f"{work}/{t}-{pin}-{r}.json"
            if not os.path.exists(p):
                continue
            res = json.load(open(p))
            la = open(p + ".load").read().strip()
            pl = res.get("placement", {})
            cpus = f"{pl.get('client_cpu')},{pl.get('server_cpu')}".replace("None", "-")
            note = [w[:70] for w in res.get("warnings", []) if "pinned" in w]
            for pt in res["points"]:
                case = f"{t} {pt['bytes']}B"
                print(f"{case:<10} {pin:<8} {r:>5} {pt['median_ns']:>12.0f} {cpus:>7} {la:>7}  {' '.join(note)}")
                rows.setdefault((case, pin), {})[r] = pt["median_ns"]
print()
print(f"{'case':<10} {'default/no-pin median':>22} {'min-max':>16}")
for case in ("tcp 8B", "tcp 65536B", "shm 8B", "shm 65536B"):
    a, b = rows.get((case, "default"), {}), rows.get((case, "nopin"), {})
    ratios = [a[r] / b[r] for r in a if r in b and b[r] > 0]
    if ratios:
        print(f"{case:<10} {statistics.median(ratios):>22.2f} {min(ratios):>7.2f}-{max(ratios):<8.2f}")
PY
