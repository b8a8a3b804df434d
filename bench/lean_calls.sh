#!/usr/bin/env bash
# Benchmark (not a test): where wulf raw's and xdp's time goes against the
# plain C AF_PACKET probe (issue 34), on one veth pair between two
# namespaces, as bench/lean_vs_c.sh sets it up.
#  1. System calls per message at SIZE (default 8 B) ping-pong, blocking
#     waits, measuring end: perf stat's syscall tracepoints around the C
#     probe's client and around a wulf sweep (per data frame the protocol
#     sent: a message of SIZE <= one frame is one data frame).
#  2. CPU per byte at 64 KiB streams (tcp, raw, xdp): the result's
#     getrusage per end (cpu_client / cpu_server ns per byte), in
#     interleaved rounds, best of rounds.
# Usage: bench/lean_calls.sh [ROUNDS] [SIZE] [BUDGET]  (default 3 8 300ms)
# WULF=path picks the binary (default: a --profile ci build).
set -euo pipefail
# shellcheck source=bench/lean_veth.sh
. "$(dirname "$0")/lean_veth.sh"
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SIZE=${2:-8}
BUDGET=${3:-300ms}
ITERS=20000
if [ -z "${WULF:-}" ]; then
  cargo build --profile ci --quiet --bin wulf
  WULF=${CARGO_TARGET_DIR:-$PWD/target}/ci/wulf
fi
work=$(mktemp -d)
gcc -O2 -o "$work/pkt" bench/lean_packet_pingpong.c
NS_A=wulfleancalls-a-$$
NS_B=wulfleancalls-b-$$
ADDR_A=198.19.252.1
ADDR_B=198.19.252.2
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  veth_pair_down "$NS_A" "$NS_B"
  rm -rf "$work"
}
trap cleanup EXIT
veth_pair_up "$NS_A" "$NS_B" "$ADDR_A" "$ADDR_B"
ip netns exec "$NS_B" "$WULF" serve --bind "$ADDR_B" --allow-lean --announce >"$work/serve.out" 2>/dev/null &
server=$!
for _ in $(seq 100); do grep -q WULF-LISTENING "$work/serve.out" && break; sleep 0.1; done
EVENTS=syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_writev,syscalls:sys_enter_sendmmsg,syscalls:sys_enter_ppoll,syscalls:sys_enter_poll,syscalls:sys_enter_recvmsg,syscalls:sys_enter_recvmmsg,syscalls:sys_enter_setsockopt,syscalls:sys_enter_sendmsg,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_futex

# calls FILE DIVISOR: perf's nonzero counts, each per message.
calls() {
  python3 - "$1" "$2" <<'PY'
import sys
div = float(sys.argv[2])
out = []
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].isdigit() and int(f[0]) > 0:
        out.append(f"{f[2].split('sys_enter_')[-1]} {int(f[0])/div:.2f}")
print(", ".join(out) if out else "none counted")
PY
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "system calls per message, ${SIZE} B ping-pong, measuring end:"
timeout 30 ip netns exec "$NS_B" "$work/pkt" server veth-b "$ITERS" "$SIZE" & pid=$!
sleep 0.05
perf stat -x, -e "$EVENTS" -o "$work/c.perf" -- \
  timeout 30 ip netns exec "$NS_A" "$work/pkt" client veth-a "$MAC_B" "$ITERS" "$SIZE" >/dev/null
wait "$pid" || true
echo "  C packet: $(calls "$work/c.perf" "$ITERS")"
for t in raw xdp tcp; do
  perf stat -x, -e "$EVENTS" -o "$work/$t.perf" -- \
    ip netns exec "$NS_A" "$WULF" sweep "$t" --sizes "$SIZE" --wait block --no-pin --budget "$BUDGET" \
    --peer "$ADDR_B:9137" --timeout 10s --quiet --json "$work/$t.json" >/dev/null 2>"$work/err" ||
    { echo "  wulf $t failed: $(tail -n 1 "$work/err")"; continue; }
  frames=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); c=v["options"]["transport"].get("frame_counters"); p=v["points"][0]; print(c["data_frames"] if c else sum(len(p["trials_ns"])*p["repeats"] for p in v["points"]))' "$work/$t.json")
  echo "  wulf $t: $(calls "$work/$t.perf" "$frames") (per $( [ "$t" = tcp ] && echo 'timed message, a lower bound of those sent' || echo 'data frame sent'))"
done

echo "CPU per byte, 64 KiB stream, blocking waits (ns/B client + server; best of $ROUNDS interleaved rounds):"
declare -A best
for r in $(seq "$ROUNDS"); do
  line="round $r:"
  for t in tcp raw xdp; do
    if ip netns exec "$NS_A" "$WULF" sweep "$t" --mode stream --sizes 64Ki --wait block --no-pin --budget "$BUDGET" \
        --peer "$ADDR_B:9137" --timeout 10s --quiet --json "$work/s.json" >/dev/null 2>"$work/err"; then
      v=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; print("%.3f %.3f %.0f" % (p["cpu_client"]["ns_per_byte"], p["cpu_server"]["ns_per_byte"], p["bits_per_s"]/1e6))' "$work/s.json")
      set -- $v
      line="$line $t=$1+$2ns/B@${3}Mbit/s"
      tot=$(python3 -c "print($1+$2)")
      if [ -z "${best[$t]:-}" ] || python3 -c "import sys; sys.exit(0 if $tot < ${best[$t]} else 1)"; then best[$t]=$tot; fi
    else
      line="$line $t=failed($(tail -n 1 "$work/err"))"
    fi
  done
  echo "$line"
done
echo "best: tcp ${best[tcp]:-?} raw ${best[raw]:-?} xdp ${best[xdp]:-?} ns/B"
python3 -c "
t=${best[tcp]:-0}; r=${best[raw]:-0}; x=${best[xdp]:-0}
print(f'raw / tcp {r/t:.2f}, xdp / tcp {x/t:.2f}' if t else '')"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
