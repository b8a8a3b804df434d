#!/usr/bin/env bash
# Benchmark (not a test): wulf's lean stacks against plain C probes on the
# same veth pair (issue 34). Interleaved rounds: in each round, one plain C
# TCP ping-pong (bench/lean_tcp_pingpong.c), one plain C AF_PACKET
# ping-pong (bench/lean_packet_pingpong.c), then wulf tcp, raw and xdp
# sweeps at the same size with blocking waits, every process unpinned as
# the C probes are; the best (lowest median)
# of the rounds is kept per stack, and the issue's ratios are printed.
# The C probes print the median of single round trips; wulf's sweeps run
# with --tails, so beside the sweep's median (of blocks' mean times, which
# carry every slow message of a block) the per-message median (the tail
# pass's p50) is printed too: the like-for-like figure against C
# ("p50" rows).
# With LOSS_SPEC set (e.g. "ge,loss=1 ge,loss=5"), 4 MiB stream rates of
# tcp, raw and xdp across a lab link with that switch loss follow, also
# interleaved, with raw's and xdp's resend counters.
#
# Targets (issue 34): wulf tcp / wulf raw >= 1.4, wulf raw / C packet
# <= 1.1, xdp at least as low as raw; under loss raw and xdp at least
# tcp's share of the lossless rate.
# Usage: bench/lean_vs_c.sh [ROUNDS] [SIZE] [BUDGET]   (default 5 8 300ms)
# WULF=path picks the binary (default: a --profile ci build); WULF_BASE=path
# adds that binary's raw and xdp (a build before a change) to every round,
# against its own server, so before and after are measured interleaved.
set -euo pipefail
# shellcheck source=bench/lean_veth.sh
. "$(dirname "$0")/lean_veth.sh"
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SIZE=${2:-8}
BUDGET=${3:-300ms}
ITERS=20000
if [ -z "${WULF:-}" ]; then
  cargo build --profile ci --quiet --bin wulf
  WULF=${CARGO_TARGET_DIR:-$PWD/target}/ci/wulf
fi
work=$(mktemp -d)
gcc -O2 -o "$work/pkt" bench/lean_packet_pingpong.c
gcc -O2 -o "$work/tcp" bench/lean_tcp_pingpong.c
# The veth pair's namespaces (addresses from RFC 2544's benchmark range,
# only inside them: nothing leaves the machine).
NS_A=wulfleanc-a-$$
NS_B=wulfleanc-b-$$
ADDR_A=198.19.253.1
ADDR_B=198.19.253.2
server=
cleanup() {
  for s in "$server" "${base_server:-}"; do
    if [ -n "$s" ]; then kill "$s" 2>/dev/null || true; wait "$s" 2>/dev/null || true; fi
  done
  veth_pair_down "$NS_A" "$NS_B"
  rm -rf "$work"
}
trap cleanup EXIT
veth_pair_up "$NS_A" "$NS_B" "$ADDR_A" "$ADDR_B"
ip netns exec "$NS_B" "$WULF" serve --bind "$ADDR_B" --allow-lean --announce >"$work/serve.out" 2>/dev/null &
server=$!
base_server=
if [ -n "${WULF_BASE:-}" ]; then
  ip netns exec "$NS_B" "$WULF_BASE" serve --bind "$ADDR_B" --port 9138 --allow-lean --announce >"$work/base.out" 2>/dev/null &
  base_server=$!
fi
for _ in $(seq 100); do grep -q WULF-LISTENING "$work/serve.out" && break; sleep 0.1; done

# c_probe KIND: one plain C ping-pong; its median one-way ns.
c_probe() {
  local pid out
  if [ "$1" = pkt ]; then
    timeout 30 ip netns exec "$NS_B" "$work/pkt" server veth-b "$ITERS" "$SIZE" & pid=$!
    sleep 0.05
    out=$(timeout 30 ip netns exec "$NS_A" "$work/pkt" client veth-a "$MAC_B" "$ITERS" "$SIZE")
  else
    timeout 30 ip netns exec "$NS_B" "$work/tcp" server "$ADDR_B" 5299 "$ITERS" "$SIZE" & pid=$!
    out=$(timeout 30 ip netns exec "$NS_A" "$work/tcp" client "$ADDR_B" 5299 "$ITERS" "$SIZE")
  fi
  wait "$pid" || true
  echo "$out"
}

# wulf_probe STACK [BINARY PORT]: one wulf ping-pong sweep at SIZE; its
# median one-way ns and its per-message median (tail pass p50), "M/P".
wulf_probe() {
  local try bin=${2:-$WULF} port=${3:-9137}
  for try in $(seq 20); do
    if ip netns exec "$NS_A" "$bin" sweep "$1" --sizes "$SIZE" --wait block --no-pin --budget "$BUDGET" \
        --tails --peer "$ADDR_B:$port" --timeout 10s --quiet --json "$work/$1.json" >/dev/null 2>"$work/err"; then
      python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; print("%d/%d" % (p["median_ns"], (p.get("tails") or {}).get("p50_ns", 0)))' "$work/$1.json"
      return 0
    fi
    grep -q "busy with another client" "$work/err" || break
    sleep 0.3
  done
  echo "wulf $1 failed: $(tail -n 1 "$work/err")" >&2
  echo 0/0
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A all
keys="ctcp cpkt tcp raw xdp"
[ -n "${WULF_BASE:-}" ] && keys="$keys braw bxdp"
for r in $(seq "$ROUNDS"); do
  line="round $r:"
  for k in $keys; do
    case $k in
      ctcp) v=$(c_probe tcp) ;;
      cpkt) v=$(c_probe pkt) ;;
      braw) v=$(wulf_probe raw "$WULF_BASE" 9138) ;;
      bxdp) v=$(wulf_probe xdp "$WULF_BASE" 9138) ;;
      *) v=$(wulf_probe "$k") ;;
    esac
    case $k in
      ctcp|cpkt) all[$k]="${all[$k]:-} $v" ;;
      *) all[$k]="${all[$k]:-} ${v%/*}"; all[p$k]="${all[p$k]:-} ${v#*/}" ;;
    esac
    line="$line $k=${v}ns"
  done
  echo "$line"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$SIZE" "${all[ctcp]}" "${all[cpkt]}" "${all[tcp]}" "${all[raw]}" "${all[xdp]}" "${all[braw]:-}" "${all[bxdp]:-}" \
    "${all[ptcp]}" "${all[praw]}" "${all[pxdp]}" "${all[pbraw]:-}" "${all[pbxdp]:-}" <<'PY'
import statistics, sys
size = sys.argv[1]
names = ["C tcp", "C packet", "wulf tcp", "wulf raw", "wulf xdp", "base raw", "base xdp",
         "p50 tcp", "p50 raw", "p50 xdp", "p50 braw", "p50 bxdp"]
vals = {n: [int(x) for x in a.split() if int(x) > 0] for n, a in zip(names, sys.argv[2:])}
best = {n: min(v) if v else float("nan") for n, v in vals.items()}
med = {n: statistics.median(v) if v else float("nan") for n, v in vals.items()}
print(f"one-way latency at {size} B, veth pair, blocking waits (best / median of rounds, us):")
for n in [n for n in names if vals[n]]:
    print(f"  {n:<9} {best[n]/1e3:8.2f} {med[n]/1e3:8.2f}")
rows = [
    ("wulf tcp / wulf raw, latency (target >= 1.4)", "wulf tcp", "wulf raw"),
    ("wulf tcp / wulf xdp, latency (target >= raw's)", "wulf tcp", "wulf xdp"),
    ("C tcp / C packet (the kernel's allowance)", "C tcp", "C packet"),
    ("wulf raw / C packet (target <= 1.1)", "wulf raw", "C packet"),
    ("wulf xdp / C packet", "wulf xdp", "C packet"),
    ("wulf tcp / C tcp (wulf's own loop)", "wulf tcp", "C tcp"),
    ("base raw / wulf raw (the change)", "base raw", "wulf raw"),
    ("base xdp / wulf xdp (the change)", "base xdp", "wulf xdp"),
    ("p50: wulf tcp / wulf raw (target >= 1.4)", "p50 tcp", "p50 raw"),
    ("p50: wulf tcp / wulf xdp", "p50 tcp", "p50 xdp"),
    ("p50: wulf raw / C packet (target <= 1.1)", "p50 raw", "C packet"),
    ("p50: wulf xdp / C packet", "p50 xdp", "C packet"),
    ("p50: wulf tcp / C tcp", "p50 tcp", "C tcp"),
    ("p50: base raw / wulf raw (the change)", "p50 braw", "p50 raw"),
    ("p50: base xdp / wulf xdp (the change)", "p50 bxdp", "p50 xdp"),
]
print("ratio (best / median)")
for label, a, b in [r for r in rows if vals[r[1]] and vals[r[2]]]:
    print(f"  {label:<48} {best[a]/best[b]:5.2f} {med[a]/med[b]:5.2f}")
PY

# Loss: 4 MiB streams across a lab link whose switch drops frames.
for spec in ${LOSS_SPEC:-}; do
  for r in $(seq "$ROUNDS"); do
    line="$spec round $r:"
    for t in tcp raw xdp; do
      if "$WULF" sweep "$t" --lab "$spec" --mode stream --sizes 4Mi --budget 1s --timeout 10s --quiet \
          --json "$work/loss.json" >/dev/null 2>"$work/err"; then
        line="$line $(python3 - "$t" "$work/loss.json" <<'PY'
import json, sys
t, path = sys.argv[1:3]
v = json.load(open(path))
p = v["points"][0]
c = v["options"]["transport"].get("frame_counters", {})
extra = f" (data {c.get('data_frames')}, resent {c.get('resent_frames')}, timeouts {c.get('timeouts')})" if c else ""
print(f"{t}={p['bits_per_s']/1e6:.0f}Mbit/s{extra}")
PY
)"
      else
        line="$line $t=failed($(tail -n 1 "$work/err"))"
      fi
    done
    echo "$line"
  done
done
