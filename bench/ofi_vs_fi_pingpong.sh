#!/usr/bin/env bash
# wulf's `ofi(...)` transports against libfabric's own fi_pingpong (from
# libfabric-bin) on the same path (issue 47): for the tcp and shm
# providers, interleaved rounds of
#   - 8 B latency: fi_pingpong's usec/xfer (one way: half a round trip)
#     against `wulf sweep ofi(X) --sizes 8`'s median one-way time;
#   - 1 MiB peak: 1 MiB over fi_pingpong's usec/xfer against `wulf sweep
#     ofi(X) --sizes 1Mi`'s bits_per_s (both ping-pong: fi_pingpong has no
#     streaming mode).
# Both tools on RDM endpoints with the tagged interface (fi_pingpong -e rdm
# -m tagged), fi_pingpong's ends pinned with taskset to CPUs 0 and 1 as
# wulf pins its own. Prints one line per round and the median ratio per
# provider; targets (issue 47): latency ratio wulf/fi_pingpong at most 1.1,
# peak ratio at least 0.95.
#
# Usage: bench/ofi_vs_fi_pingpong.sh [ROUNDS] (default 3); WULF=path/to/wulf.
set -euo pipefail
ROUNDS=${1:-3}
WULF=${WULF:-target/ci/wulf}
command -v fi_pingpong >/dev/null || { echo "fi_pingpong missing: apt install libfabric-bin" >&2; exit 2; }
[ -x "$WULF" ] || { echo "$WULF missing: cargo build --profile ci" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; kill $(jobs -p) 2>/dev/null || true' EXIT
PORT=47600

# fi_pp PROVIDER SIZE: fi_pingpong's usec/xfer (column 7 of its line).
fi_pp() {
    local prov=$1 size=$2 iters
    iters=$([ "$size" -gt 65536 ] && echo 300 || echo 20000)
    PORT=$((PORT + 1))
    timeout 120 taskset -c 1 fi_pingpong -p "$prov" -e rdm -m tagged -B "$PORT" -S "$size" -I "$iters" >/dev/null 2>&1 &
    sleep 0.5
    timeout 120 taskset -c 0 fi_pingpong -p "$prov" -e rdm -m tagged -P "$PORT" -S "$size" -I "$iters" 127.0.0.1 2>/dev/null |
        awk '$1 ~ /^[0-9]+[kmg]?$/ { print $7 }' | tail -1
    wait
}

# wulf_figure TRANSPORT SIZE FIELD: the point's median_ns or bits_per_s.
wulf_figure() {
    local t=$1 size=$2 field=$3
    "$WULF" sweep "$t" --sizes "$size" --budget 3s --no-perturb --quiet \
        --json "$TMP/r.json" >/dev/null
    python3 -c "import json; p=json.load(open('$TMP/r.json'))['points'][0]; print(p['$field'])"
}

printf '# load %s; libfabric %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(fi_info --version | sed -n 2p)"
printf '%-9s %5s %12s %12s %7s %14s %14s %7s\n' provider round "fipp 8B us" "wulf 8B us" ratio \
    "fipp 1MiB Gb/s" "wulf 1MiB Gb/s" ratio
for prov in tcp shm; do
    lat_ratios=() bw_ratios=()
    for r in $(seq "$ROUNDS"); do
        fp_lat=$(fi_pp "$prov" 8)
        w_lat=$(wulf_figure "ofi($prov)" 8 median_ns)
        fp_big=$(fi_pp "$prov" 1048576)
        w_bw=$(wulf_figure "ofi($prov)" 1Mi bits_per_s)
        read -r l b wl wb pl pb < <(python3 -c "
pl=$fp_lat; wl=$w_lat/1000; pb=1048576*8/($fp_big*1e3); wb=$w_bw/1e9
print(wl/pl, wb/pb, wl, wb, pl, pb)")
        lat_ratios+=("$l") bw_ratios+=("$b")
        printf '%-9s %5d %12.3f %12.3f %7.2f %14.2f %14.2f %7.2f\n' "ofi($prov)" "$r" "$pl" "$wl" "$l" "$pb" "$wb" "$b"
    done
    python3 -c "
import statistics as s
l=[$(IFS=,; echo "${lat_ratios[*]}")]; b=[$(IFS=,; echo "${bw_ratios[*]}")]
print('ofi($prov) median ratios: latency %.2f (target <= 1.1), peak %.2f (target >= 0.95)' % (s.median(l), s.median(b)))"
done
printf '# load after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
