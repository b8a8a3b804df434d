#!/usr/bin/env bash
# Benchmark (not a test): does every command keep its --budget, on a quiet
# machine and under a competing load (issue 43)? For each case below, the
# command's wall time over its budget, the set-up it measured and printed
# (a sweep's `setup_s`: starting the peer, the handshake; with --lab
# and without --quiet, the lab's set-up and removal the command prints;
# 0 where the command states none) and whether wall <= 1.2 x budget + set-up. Each
# case runs idle, then beside `stress-ng --cpu 2` (bounded by --timeout and
# stopped by its own process id). The load average is printed beside each.
# Usage: bench/budgets.sh [BIN] [CASES] [LOADS]
#   BIN   default target/ci/wulf
#   CASES default "tcp tcp4k pvm lab run matrix hpl study tune"
#   LOADS default "idle busy"
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/ci/wulf}
CASES=${2:-tcp tcp4k pvm lab run matrix hpl study tune}
LOADS=${3:-idle busy}
work=$(mktemp -d)
load_pid=
stop_load() { if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; load_pid=; fi; }
trap 'stop_load; rm -rf "$work"' EXIT

# name budget_s command... (a JSON result, when the command writes one, in $work/r.json)
case_cmd() {
  case "$1" in
    tcp)    echo "10 sweep tcp --budget 10s --quiet --json $work/r.json" ;;
    tcp4k)  echo "10 sweep tcp --sndbuf 4Ki --rcvbuf 4Ki --budget 10s --quiet --json $work/r.json" ;;
    pvm)    echo "5 sweep pvm --budget 5s --quiet --json $work/r.json" ;;
    lab)    echo "10 sweep tcp --lab fe --budget 10s --quiet --json $work/r.json" ;;
    run)    echo "12.5 run --quick --no-npb --quiet --out $work/run" ;;
    matrix) echo "20 matrix --lab ge --ppn 2 --budget 20s --json $work/r.json" ;;
    hpl)    echo "60 hpl --lab ge --np 2 --budget 60s --json $work/r.json" ;;
    # Its budget is the measuring it states first ("about N s of measuring").
    study)  echo "0 study fe-vs-ge --quick --out $work/study" ;;
    tune)   echo "10 tune tcp --budget 10s --quiet --out $work/tune" ;;
    *) echo "unknown case $1" >&2; exit 2 ;;
  esac
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $BIN"
printf "%-7s %-5s %8s %8s %8s %7s %6s  %s\n" case load budget_s wall_s setup_s x_budget ok loadavg_1m
for load in $LOADS; do
  for c in $CASES; do
    stop_load
    if [ "$load" = busy ]; then
      stress-ng --cpu 2 --timeout 900s >/dev/null 2>&1 &
      load_pid=$!
      sleep 3
    fi
    read -r budget args <<<"$(case_cmd "$c")"
    rm -f "$work/r.json"
    la=$(cut -d' ' -f1 /proc/loadavg)
    s=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$BIN" $args >"$work/out" 2>"$work/err" || true
    e=$(date +%s.%N)
    stop_load
    python3 - "$c" "$load" "$budget" "$s" "$e" "$work/r.json" "$la" "$work/err" <<'PY'
import json, os, re, sys
c, load, budget, s, e, path, la, err = sys.argv[1:]
wall = float(e) - float(s)
budget = float(budget)
text = open(err, errors="replace").read()
if budget == 0:
    m = re.search(r"about (\d+) s of measuring", text)
    budget = float(m.group(1)) if m else 0.0
setup = 0.0
if os.path.exists(path):
    try:
        setup = json.load(open(path)).get("setup_s") or 0.0
    except Exception:
        pass
# A command run in a temporary lab (--lab) prints the lab's set-up and
# removal, outside its budget.
m = re.search(r"the lab took ([\d.]+) s to set up and ([\d.]+) s to remove", text)
if m:
    setup += float(m.group(1)) + float(m.group(2))
if budget > 0:
    ok = "yes" if wall <= 1.2 * budget + setup else "NO"
    x = f"{wall / budget:.2f}"
else:
    ok, x = "n/a", "n/a"
print(f"{c:<7} {load:<5} {budget:8.1f} {wall:8.1f} {setup:8.2f} {x:>7} {ok:>6}  {la}")
PY
  done
done
