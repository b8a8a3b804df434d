#!/usr/bin/env bash
# Benchmark (not a test): lean stacks against TCP/IP across one lab link
# (issue 15). For tcp and raw (AF_PACKET frames with wulf's own reliable
# protocol), each with blocking and spinning waits, across a 2-node lab
# link (10ge by default; any `--lab` spec as $1): one-way latency at 8 B and
# 1 KiB (ping-pong medians), peak throughput (stream mode, 64 KiB to 4 MiB)
# and CPU ns per byte of both ends together at 64 KiB (ping-pong).
#
# Targets (issue 15): raw at least 1.5x lower small-message latency than
# tcp with the same wait mode, and lower CPU per byte at 64 KiB.
# xdp is not built yet, so it has no row.
# Usage: bench/lean_stacks.sh [LAB-SPEC] [BUDGET]   (default 10ge 2s)
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC=${1:-10ge}
BUDGET=${2:-2s}
cargo build --release --quiet
WULF=target/release/wulf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf "%-5s %-6s %10s %10s %14s %12s\n" stack wait "8 B us" "1 KiB us" "peak Gbit/s" "cpu ns/B@64K"
for t in tcp raw; do
  for w in block spin; do
    "$WULF" sweep "$t" --lab "$SPEC" --wait "$w" --sizes 8,1Ki,64Ki --budget "$BUDGET" \
        --quiet --json "$work/pp.json" >/dev/null 2>&1
    "$WULF" sweep "$t" --lab "$SPEC" --wait "$w" --mode stream --sizes 64Ki,1Mi,4Mi \
        --budget "$BUDGET" --quiet --json "$work/st.json" >/dev/null 2>&1
    python3 - "$t" "$w" "$work/pp.json" "$work/st.json" <<'PY'
import json, sys
t, w, pp, st = sys.argv[1:5]
p = {x["bytes"]: x for x in json.load(open(pp))["points"]}
s = json.load(open(st))["points"]
cpu = p[65536]["cpu_client"]["ns_per_byte"] + p[65536]["cpu_server"]["ns_per_byte"]
peak = max(x["bits_per_s"] for x in s) / 1e9
print(f"{t:<5} {w:<6} {p[8]['median_ns']/1e3:10.2f} {p[1024]['median_ns']/1e3:10.2f} {peak:14.2f} {cpu:12.3f}")
PY
  done
done
