#!/usr/bin/env bash
# Benchmark (not a test): PVM against TCP over an emulated Fast Ethernet
# link between two lab nodes (issue 32, item 1; seed 004's Table 2 has
# both), with a plain C PVM ping-pong across the same link as the
# reference nothing of wulf's is in (bench/pvm_pingpong.c, its own pvmds,
# its child spawned on the other node).
#
# One lab (`wulf lab up --link fe`, removed at the end) and one `wulf
# serve` in node2 for the whole run. Interleaved rounds: in each, from
# node1 against node2, `wulf sweep pvm`, `wulf sweep 'pvm(daemon)'` and
# `wulf sweep tcp` at 1 B, 64 KiB and 256 KiB (256 KiB: large enough that
# the shaper's free burst of two frames adds under 2%; 64 KiB first, as a
# warm-up), and the C probe (parent in node2, child in node1) at 1 B and
# 256 KiB on both routes. Prints one line per round, then medians: the
# one-way time at 1 B and the rate at 256 KiB, and, as theory, the TCP
# payload 100 Mbit/s of 1500-byte frames carries (1448 of 1514 bytes as
# the lab's htb counts a frame: 95.6 Mbit/s; of 1538 on a real wire). The
# daemon route (pvmd to pvmd over UDP) is bimodal over the shaped link, in
# the C probe as in wulf: about 95 Mbit/s in some rounds, 20-30 in others.
# Afterwards it checks that no pvmd of the lab is left.
# Usage: bench/pvm_lab_vs_tcp.sh [ROUNDS] [BUDGET]   (default 3 1s)
# WULF=path picks the binary (default: a release build). Needs root (the
# lab), pvm and pvm-dev (apt install pvm pvm-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
BUDGET=${2:-1s}
if [ -z "${WULF:-}" ]; then
  cargo build --release --quiet --bin wulf
  WULF=${CARGO_TARGET_DIR:-$PWD/target}/release/wulf
fi
LAB=pvmb$$
PORT=17112
work=$(mktemp -d)
chmod 700 "$work"
serve_pid=
master_pid=
pvmds_of_lab() { # [PATTERN of PVM_TMP] -> running pvmds of the lab
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = pvmd ] || continue
    [ "$(awk '{print $3}' "$p/stat" 2>/dev/null)" = Z ] && continue
    env=$(tr '\0' '\n' <"$p/environ" 2>/dev/null)
    grep -qx "WULF_LAB=$LAB" <<<"$env" && grep -q "^PVM_TMP=.*${1:-}" <<<"$env" && echo "${p#/proc/}"
  done
  true
}
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
  [ -n "$master_pid" ] && kill "$master_pid" 2>/dev/null
  for p in $(pvmds_of_lab); do kill -9 "$p" 2>/dev/null || true; done
  "$WULF" lab down --name "$LAB" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$WULF" lab up --name "$LAB" --link fe >/dev/null
in_node() { local n=$1; shift; "$WULF" lab exec --name "$LAB" "$n" -- "$@"; }

# The C probe's virtual machine: a master pvmd in node2 that adds node1
# through the lab's remote shell, each pvmd in its own private directory.
cc -O2 -o "$work/pp" bench/pvm_pingpong.c -lpvm3
mkdir -m 700 "$work/m" "$work/s"
printf '#!/bin/sh\nexec timeout 30 %s lab rsh --name %s "$@"\n' "$WULF" "$LAB" >"$work/rsh"
printf '#!/bin/sh\nPVM_TMP=%s; export PVM_TMP\nexec /usr/lib/pvm3/lib/pvmd "$@"\n' "$work/s" >"$work/slave"
chmod 755 "$work/rsh" "$work/slave"
printf '* dx=%s\nnode1\n' "$work/slave" >"$work/hosts"
export PVM_ROOT=/usr/lib/pvm3 PVM_ALLOW_ROOT=1
PVM_TMP="$work/m" PVM_RSH="$work/rsh" in_node node2 /usr/lib/pvm3/lib/pvmd "$work/hosts" >"$work/pvmd.out" 2>&1 &
master_pid=$!
for _ in $(seq 100); do [ -s "$work/s/pvmd.0" ] && break; sleep 0.1; done
[ -s "$work/s/pvmd.0" ] || { echo "the C probe's pvmd did not start on node1" >&2; exit 1; }
c_probe() { # SIZE ITERS ROUTE -> "us mbit"
  PVM_TMP="$work/m" timeout 120 "$WULF" lab exec --name "$LAB" node2 -- "$work/pp" "$1" "$2" raw "$3" node1 |
    awk '{print $2, $3}'
}

in_node node2 "$WULF" serve --port "$PORT" >"$work/serve.log" 2>&1 &
serve_pid=$!
sleep 1
wulf_probe() { # TRANSPORT -> "us_at_1 mbit_at_256k"
  (cd "$work" && timeout 300 "$WULF" lab exec --name "$LAB" node1 -- "$WULF" sweep "$1" \
    --peer "node2:$PORT" --sizes 1,65536,262144 --no-perturb --budget "$BUDGET" --json "$work/w.json" >/dev/null 2>&1)
  python3 - "$work/w.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = {x["bytes"]: x for x in d["points"]}
print(f'{p[1]["median_ns"] / 1e3:.2f} {p[262144]["bits_per_s"] / 1e6:.2f}')
EOF
}
printf '%-6s %-14s %10s %12s\n' round stack 1B_us 256K_Mbps
for r in $(seq "$ROUNDS"); do
  for t in pvm 'pvm(daemon)' tcp C-direct C-daemon; do
    case $t in
      C-*) read -r l _ < <(c_probe 1 2500 "${t#C-}"); read -r _ b < <(c_probe 262144 50 "${t#C-}") ;;
      *) read -r l b < <(wulf_probe "$t") ;;
    esac
    printf '%-6s %-14s %10s %12s\n' "$r" "$t" "$l" "$b" | tee -a "$work/rows"
  done
done
echo "medians over $ROUNDS rounds (theory: TCP payload in 100 Mbit/s of 1500-byte frames: 1448/1514 = 95.6 Mbit/s as the lab's htb counts a frame, 1448/1538 = 94.1 Mbit/s on a real wire):"
python3 - "$work/rows" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for t in ("pvm", "pvm(daemon)", "tcp", "C-direct", "C-daemon"):
    r = [x for x in rows if x[1] == t]
    med[t] = (statistics.median(float(x[2]) for x in r), statistics.median(float(x[3]) for x in r))
    lo, hi = min(float(x[2]) for x in r), max(float(x[2]) for x in r)
    print(f"  {t:12} 1 B {med[t][0]:8.1f} us (rounds {lo:.1f}-{hi:.1f}), 256 KiB {med[t][1]:6.1f} Mbit/s")
p, d, t, c, cd = (med[k] for k in ("pvm", "pvm(daemon)", "tcp", "C-direct", "C-daemon"))
print(f"  pvm / tcp: latency x{p[0] / t[0]:.2f}, rate x{p[1] / t[1]:.2f}; "
      f"pvm / C direct: latency x{p[0] / c[0]:.2f}, rate x{p[1] / c[1]:.2f}; "
      f"pvm(daemon) / C daemon: latency x{d[0] / cd[0]:.2f}, rate x{d[1] / cd[1]:.2f}")
EOF
sleep 1
echo "left behind by wulf (no session running): $(pvmds_of_lab wulf-pvm- | wc -l) pvmd processes of lab $LAB"
