#!/usr/bin/env bash
# wulf's `mpi:*` rows against NetPIPE's own MPI modules on the same path
# (issue 47, item 5): NPopenmpi (netpipe-openmpi) against mpi:openmpi and
# NPmpich2 (netpipe-mpich2) against mpi:mpich, both ranks on this host with
# each library's default path, in interleaved rounds of
#   - 8 B latency: NetPIPE's time (np.out column 3, one way: half a round
#     trip) against `wulf sweep mpi:X --sizes 8`'s median one-way time;
#   - 1 MiB peak: NetPIPE's Mbps at 1 MiB against `wulf sweep mpi:X
#     --sizes 1Mi`'s bits_per_s (both ping-pong).
# NetPIPE with no perturbation (-p 0) at one size per run (-l N -u N).
# Prints one line per round and the median ratio per library, with the
# lowest and highest round; targets (issue 47): latency ratio wulf/NetPIPE
# at most 1.1, peak ratio at least 0.95.
# And NPpvm (netpipe-pvm) against `pvm(inplace)` (PVM's direct route and
# PvmDataInPlace, as NetPIPE's pvm module packs: its netpipe.h): NPpvm is
# started twice by hand, the receiver first, under a private pvmd of this
# script's (PVM_TMP in its own directory), both ends unpinned, so wulf's
# runs with --no-pin and its own pvmd. Beside each pvm round, the plain C
# probe bench/pvm_pingpong.c (the same calls, packed in place, spawned
# under the same pvmd) at 8 B: its median block and its fastest block
# (NetPIPE reports the fastest of its few long trials, wulf the median of
# its blocks), to tell wulf's cost from the statistic's and NetPIPE's.
#
# Usage: bench/netpipe_modules.sh [ROUNDS] (default 3); WULF=path/to/wulf;
# LIBS="openmpi mpich pvm" (the default) picks the modules.
set -euo pipefail
ROUNDS=${1:-3}
WULF=${WULF:-target/ci/wulf}
[ -x "$WULF" ] || { echo "$WULF missing: cargo build --profile ci" >&2; exit 2; }
TMP=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pvmd_pid=
stop_pvmd() { if [ -n "$pvmd_pid" ]; then kill "$pvmd_pid" 2>/dev/null || true; wait "$pvmd_pid" 2>/dev/null || true; pvmd_pid=; fi; }
trap 'stop_pvmd; rm -rf "$TMP"' EXIT

# NetPIPE's pvm module needs a running pvmd: a private one, in its own
# directory, started once.
start_pvmd() {
    [ -n "$pvmd_pid" ] && return
    mkdir -m 700 "$TMP/pvm"
    PVM_ROOT=/usr/lib/pvm3 PVM_ALLOW_ROOT=1 PVM_TMP="$TMP/pvm" /usr/lib/pvm3/lib/pvmd >"$TMP/pvmd.out" 2>&1 &
    pvmd_pid=$!
    for _ in $(seq 50); do [ -s "$TMP/pvmd.out" ] && break; sleep 0.1; done
}

# np_pvm SIZE: NPpvm's "Mbps seconds" at SIZE, its receiver started first
# (under the pvmd start_pvmd started in the main shell: np runs in a
# subshell, whose variables die with it).
np_pvm() {
    local size=$1
    rm -f "$TMP/np.out"
    (cd "$TMP" && export PVM_ROOT=/usr/lib/pvm3 PVM_ALLOW_ROOT=1 PVM_TMP="$TMP/pvm" &&
        { timeout 120 NPpvm -l "$size" -u "$size" -p 0 >/dev/null 2>&1 & } &&
        sleep 0.5 &&
        timeout 120 NPpvm -h "$(hostname)" -l "$size" -u "$size" -p 0 -o np.out >/dev/null 2>&1; wait)
    awk '{ print $2, $3 }' "$TMP/np.out" | tail -1
}

# probe_pvm: the C probe's "median_us fastest_us" at 8 B, in place, direct
# route, under start_pvmd's pvmd (built once).
probe_pvm() {
    [ -x "$TMP/pp" ] || cc -O2 -o "$TMP/pp" "$(dirname "$0")/pvm_pingpong.c" -lpvm3
    (export PVM_ROOT=/usr/lib/pvm3 PVM_ALLOW_ROOT=1 PVM_TMP="$TMP/pvm" &&
        timeout 120 "$TMP/pp" 8 20000 inplace direct) | awk '{ print $2, $4 }'
}

# np LIB SIZE: NetPIPE's "Mbps seconds" at SIZE through LIB's module.
np() {
    local lib=$1 size=$2
    [ "$lib" = pvm ] && { np_pvm "$size"; return; }
    case $lib in
        openmpi) launcher=(mpirun.openmpi --oversubscribe -np 2) exe=NPopenmpi ;;
        mpich) launcher=(mpiexec.mpich -np 2) exe=NPmpich2 ;;
    esac
    rm -f "$TMP/np.out"
    (cd "$TMP" && timeout 120 "${launcher[@]}" "$exe" -l "$size" -u "$size" -p 0 -o np.out >/dev/null 2>&1)
    awk '{ print $2, $3 }' "$TMP/np.out" | tail -1
}

# wulf_figure TRANSPORT SIZE FIELD: the point's median_ns or bits_per_s
# (pvm unpinned, as NPpvm's ends are, with wulf's own pvmd).
wulf_figure() {
    local t=$1 size=$2 field=$3 pin=()
    [[ $t == pvm* ]] && pin=(--no-pin)
    (unset PVM_TMP; "$WULF" sweep "$t" --sizes "$size" --budget 3s --no-perturb --quiet \
        "${pin[@]}" --json "$TMP/r.json" >/dev/null)
    python3 -c "import json; p=json.load(open('$TMP/r.json'))['points'][0]; print(p['$field'])"
}

printf '# load %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %5s %12s %12s %7s %14s %14s %7s\n' row round "NP 8B us" "wulf 8B us" ratio \
    "NP 1MiB Mb/s" "wulf 1MiB Mb/s" ratio
for lib in ${LIBS:-openmpi mpich pvm}; do
    case $lib in
        openmpi) exe=NPopenmpi row=mpi:openmpi ;;
        mpich) exe=NPmpich2 row=mpi:mpich ;;
        pvm) exe=NPpvm row='pvm(inplace)' ;;
    esac
    command -v "$exe" >/dev/null ||
        { echo "NetPIPE's $lib module missing: apt install netpipe-openmpi netpipe-mpich2 netpipe-pvm" >&2; exit 2; }
    [ "$lib" = pvm ] && start_pvmd
    lat_ratios=() bw_ratios=()
    for r in $(seq "$ROUNDS"); do
        read -r _ np_s < <(np "$lib" 8)
        w_lat=$(wulf_figure "$row" 8 median_ns)
        read -r np_mbps _ < <(np "$lib" 1048576)
        w_bw=$(wulf_figure "$row" 1Mi bits_per_s)
        read -r l b wl wb pl pb < <(python3 -c "
pl=$np_s*1e6; wl=$w_lat/1000; pb=$np_mbps; wb=$w_bw/1e6
print(wl/pl, wb/pb, wl, wb, pl, pb)")
        lat_ratios+=("$l") bw_ratios+=("$b")
        printf '%-12s %5d %12.3f %12.3f %7.2f %14.1f %14.1f %7.2f\n' "$row" "$r" "$pl" "$wl" "$l" "$pb" "$wb" "$b"
        if [ "$lib" = pvm ]; then
            read -r pp_med pp_min < <(probe_pvm)
            printf '%-12s %5d C probe 8 B: median block %s us, fastest %s us; wulf/probe %s\n' \
                "" "$r" "$pp_med" "$pp_min" "$(python3 -c "print(round($wl/$pp_med, 2))")"
        fi
    done
    python3 -c "
import statistics as s
l=[$(IFS=,; echo "${lat_ratios[*]}")]; b=[$(IFS=,; echo "${bw_ratios[*]}")]
print('$row median ratios: latency %.2f [%.2f, %.2f] (target <= 1.1), peak %.2f [%.2f, %.2f] (target >= 0.95)' % (s.median(l), min(l), max(l), s.median(b), min(b), max(b)))"
done
printf '# load after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
