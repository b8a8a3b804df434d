#!/usr/bin/env bash
# Benchmark (not a test): wulf's `pvm` transports against a plain C PVM
# ping-pong (bench/pvm_pingpong.c, NetPIPE's pvm calls, nothing of wulf's)
# on this host (issue 32, item 1). Interleaved rounds: in each, for the
# direct route (`pvm`) and the daemon route (`pvm(daemon)`), the C probe at
# 1 B and 64 KiB (its own pvmd in a private PVM_TMP), then `wulf sweep` of
# the same transport at the same sizes (wulf starts and halts its own
# pvmd), both ends unpinned as the C probe's are (pinned to CPUs 0 and 1
# of a busy 2-vCPU VM, wulf's 1-byte time was 8x the C probe's). Prints one line per round and the median over the rounds of the
# one-way time at 1 B and the rate at 64 KiB, and wulf / C ratios; agreement
# is a ratio near 1 within the rounds' spread (no speed is asserted).
# Afterwards it checks that no pvmd and no wulf-pvm-* directory is left.
# Usage: bench/pvm_vs_c.sh [ROUNDS] [BUDGET]   (default 3 1s)
# WULF=path picks the binary (default: a --profile ci build). Needs pvm and
# pvm-dev (apt install pvm pvm-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
BUDGET=${2:-1s}
if [ -z "${WULF:-}" ]; then
  cargo build --profile ci --quiet --bin wulf
  WULF=${CARGO_TARGET_DIR:-$PWD/target}/ci/wulf
fi
work=$(mktemp -d)
chmod 700 "$work"
pvmd_pid=
cleanup() {
  if [ -n "$pvmd_pid" ]; then kill "$pvmd_pid" 2>/dev/null || true; wait "$pvmd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cc -O2 -o "$work/pp" bench/pvm_pingpong.c -lpvm3
# The C probe's own daemon, in a private directory.
mkdir -m 700 "$work/pvm"
export PVM_ROOT=/usr/lib/pvm3 PVM_ALLOW_ROOT=1
PVM_TMP="$work/pvm" /usr/lib/pvm3/lib/pvmd >"$work/pvmd.out" 2>&1 &
pvmd_pid=$!
for _ in $(seq 50); do [ -s "$work/pvmd.out" ] && break; sleep 0.1; done
c_probe() { # SIZE ITERS ROUTE -> "us mbit"
  PVM_TMP="$work/pvm" timeout 60 "$work/pp" "$1" "$2" raw "$3" | awk '{print $2, $3}'
}
wulf_probe() { # TRANSPORT -> "us_at_1 mbit_at_64k"
  (cd "$work" && unset PVM_TMP && timeout 300 "$WULF" sweep "$1" --sizes 1,65536 --no-perturb --no-pin \
    --budget "$BUDGET" --json "$work/w.json" >/dev/null 2>&1)
  python3 - "$work/w.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = {x["bytes"]: x for x in d["points"]}
print(f'{p[1]["median_ns"] / 1e3:.3f} {p[65536]["bits_per_s"] / 1e6:.1f}')
EOF
}
printf '%-6s %-12s %10s %10s %12s %12s\n' round route c_1B_us wulf_1B_us c_64K_Mbps wulf_64K_Mbps
for r in $(seq "$ROUNDS"); do
  for route in direct daemon; do
    t=pvm; [ "$route" = daemon ] && t='pvm(daemon)'
    read -r c1 _ < <(c_probe 1 5000 "$route")
    read -r _ c64 < <(c_probe 65536 500 "$route")
    read -r w1 w64 < <(wulf_probe "$t")
    printf '%-6s %-12s %10s %10s %12s %12s\n' "$r" "$route" "$c1" "$w1" "$c64" "$w64" | tee -a "$work/rows"
  done
done
echo "medians over $ROUNDS rounds (wulf / C):"
python3 - "$work/rows" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for route in ("direct", "daemon"):
    r = [x for x in rows if x[1] == route]
    m = [statistics.median(float(x[i]) for x in r) for i in (2, 3, 4, 5)]
    print(f"  {route:7} 1 B: C {m[0]:.1f} us, wulf {m[1]:.1f} us (x{m[1] / m[0]:.2f});"
          f" 64 KiB: C {m[2]:.0f} Mbit/s, wulf {m[3]:.0f} Mbit/s (x{m[3] / m[2]:.2f})")
EOF
kill "$pvmd_pid"; wait "$pvmd_pid" 2>/dev/null || true; pvmd_pid=
left=$(ps -eo stat=,comm= | awk '$2 == "pvmd" && $1 !~ /^Z/' | wc -l)
dirs=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'wulf-pvm-*' | wc -l)
echo "left behind: $left running pvmd processes, $dirs wulf-pvm-* directories"
