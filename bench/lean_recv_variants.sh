#!/usr/bin/env bash
# Benchmark (not a test): what each way of receiving a frame costs the
# plain C AF_PACKET ping-pong (bench/lean_packet_pingpong.c) on one veth
# pair, in interleaved rounds (issue 34: which receive wulf raw should
# use for a ping-pong). Variants (environment of both ends):
#   recvfrom      blocking recvfrom, 2 s SO_RCVTIMEO (the reference)
#   rcvtimeo20    the same with a 20 ms SO_RCVTIMEO (woken to look at an abort pipe)
#   try+recvfrom  a non-blocking recv first, then the blocking recvfrom
#   mmsg          recvmmsg of up to 32 frames, MSG_WAITFORONE
#   try+mmsg      a non-blocking recvmmsg first, then the blocking one (wulf raw's receive)
#   ppoll+recv    ppoll on the socket, then recvfrom
#   ring          TPACKET_V2 ring, ppoll on the socket
#   ring+abort    the ring, ppoll on the socket and a pipe (wulf raw's wait)
#   ring+epoll    the ring, epoll_wait on a set of the socket and a pipe
#   ring-small    the ring with 64 KiB (32 slots) instead of 4 MiB
# Every process unpinned, 4 ms timer slack on both (as wulf's waits).
# Usage: bench/lean_recv_variants.sh [ROUNDS] [SIZE]  (default 5 8)
set -euo pipefail
# shellcheck source=bench/lean_veth.sh
. "$(dirname "$0")/lean_veth.sh"
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SIZE=${2:-8}
ITERS=20000
work=$(mktemp -d)
gcc -O2 -o "$work/pkt" bench/lean_packet_pingpong.c
NS_A=wulfleanrv-a-$$
NS_B=wulfleanrv-b-$$
cleanup() {
  veth_pair_down "$NS_A" "$NS_B"
  rm -rf "$work"
}
trap cleanup EXIT
veth_pair_up "$NS_A" "$NS_B"
declare -A env=(
  [recvfrom]=""
  [rcvtimeo20]="LEAN_RCVTIMEO_MS=20"
  [try+recvfrom]="LEAN_TRY=1"
  [ppoll+recv]="LEAN_PPOLL_MS=2000"
  [mmsg]="LEAN_MMSG=1"
  [try+mmsg]="LEAN_MMSG=1 LEAN_TRY=1"
  [ring]="LEAN_RING=1"
  [ring+abort]="LEAN_RING=2"
  [ring+epoll]="LEAN_RING=2 LEAN_EPOLL=1"
  [ring-small]="LEAN_RING=2 LEAN_RING_BLOCKS=1"
)
VARIANTS=${VARIANTS:-"recvfrom rcvtimeo20 try+recvfrom ppoll+recv ring ring+abort ring+epoll ring-small"}
probe() {
  local pid out
  # shellcheck disable=SC2086
  env LEAN_SLACK_NS=4000000 ${env[$1]} timeout 30 ip netns exec "$NS_B" "$work/pkt" server veth-b "$ITERS" "$SIZE" & pid=$!
  sleep 0.05
  # shellcheck disable=SC2086
  out=$(env LEAN_SLACK_NS=4000000 ${env[$1]} timeout 30 ip netns exec "$NS_A" "$work/pkt" client veth-a "$MAC_B" "$ITERS" "$SIZE" || echo 0)
  wait "$pid" || true
  echo "$out"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A all
for r in $(seq "$ROUNDS"); do
  line="round $r:"
  for v in $VARIANTS; do
    x=$(probe "$v")
    all[$v]="${all[$v]:-} $x"
    line="$line $v=${x}ns"
  done
  echo "$line"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "one-way median ns at $SIZE B (best / median of $ROUNDS rounds, and / recvfrom's):"
for v in $VARIANTS; do
  python3 - "$v" "${all[$v]}" "${all[recvfrom]:-}" <<'PY'
import statistics, sys
v = [int(x) for x in sys.argv[2].split() if int(x) > 0]
ref = [int(x) for x in sys.argv[3].split() if int(x) > 0]
if not v:
    print(f"  {sys.argv[1]:<13} failed")
else:
    b, m = min(v), statistics.median(v)
    rel = f"  {b/min(ref):.2f} / {m/statistics.median(ref):.2f}" if ref else ""
    print(f"  {sys.argv[1]:<13} {b:6d} / {m:8.0f}{rel}")
PY
done
