#!/usr/bin/env bash
# Benchmark (not a test), issue 29: the one prepared script for a many-core
# machine. It needs only a wulf binary (the stripped release one will do),
# bash, python3, coreutils' timeout and an MPI with its mpicc (Open MPI;
# MPICH too if installed): no cargo, no `ip`.
#
# In this order, each step bounded by what is left of the time bound:
#   1. large messages: c2c (the limit), shm, cma and each MPI at 64 KiB to
#      4 MiB, warm (one buffer resent) and cold (--nocache: buffers rotated
#      past the last-level cache, what an application's fresh data sees);
#   2. every NAS kernel at np = nproc (one rank per core, the case issue 29
#      is about) over shm, tcp and each MPI;
#   3. the same at the other counts 1, 2, 4, ... < nproc (largest first);
#   each kernel only at the counts it accepts (MG, CG, IS, FT: powers of
#   two; SP, BT: squares; EP, LU: any). np = 1 runs over shm only (one rank
#   sends nothing: it is the speedup's base).
# Then one table: medians (sweeps: one-way us; NAS: best Mop/s of the
# repetitions) and each transport's ratio against the best MPI at the same
# point (>1: faster than the best MPI). Steps the bound did not reach are
# named as skipped, never silently missing.
#
# Usage: bench/full_node.sh [MINUTES] (default 8: a device session lends 15)
# Environment: WULF (binary; default: target/release/wulf, else wulf in
# PATH), CLASS (NAS class, default A), MAXNP (default nproc), MPIS (e.g.
# "mpi:openmpi"; default: each MPI found), KERNELS (default: every kernel
# `wulf npb` lists), REPS (NAS repetitions, default 1), SWEEP_BUDGET
# (default 3s), OUT (directory kept for the JSON; default a temporary one),
# EVIDENCE=1 (at np = nproc, also record what runs on each CPU, see below).
set -uo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-8}
export CLASS=${CLASS:-A}
MAXNP=${MAXNP:-$(nproc)}
REPS=${REPS:-1}
SWEEP_BUDGET=${SWEEP_BUDGET:-3s}
if [ -z "${WULF:-}" ]; then
    if [ -x target/release/wulf ]; then WULF=target/release/wulf; else WULF=$(command -v wulf || true); fi
fi
[ -x "${WULF:-}" ] || { echo "full_node: no wulf binary (set WULF=/path/to/wulf)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "full_node: python3 is needed for the table" >&2; exit 2; }
# Open MPI refuses to run as root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
kept=${OUT:-}
if [ -n "$kept" ]; then mkdir -p "$OUT"; else
    OUT=$(mktemp -d)
    trap 'rm -rf "$OUT"' EXIT
fi
start=$(date +%s)
deadline=$((start + MINUTES * 60))
# Seconds left in the current step (phase_end: the large messages get at
# most a third of the bound, so the NAS kernels always get the rest), less
# a reserve for the table.
phase_end=$deadline
left() { echo $((phase_end - $(date +%s) - 5)); }
skipped=()
# Run a step with what is left as its bound (SIGINT first: wulf keeps what
# it measured); $1 = label, the rest the command.
bounded() {
    local label=$1 l
    shift
    l=$(left)
    if [ "$l" -lt 10 ]; then
        skipped+=("$label")
        return 124
    fi
    echo "[$(($(date +%s) - start)) s] $label" >&2
    timeout --signal=INT --kill-after=10 "$l" "$@" >>"$OUT/log" 2>&1
    local rc=$?
    [ "$rc" -eq 124 ] && skipped+=("$label (cut at the bound)")
    return "$rc"
}

if [ -z "${MPIS:-}" ]; then
    MPIS=""
    for m in openmpi mpich; do
        command -v "mpicc.$m" >/dev/null && MPIS="$MPIS mpi:$m"
    done
    if [ -z "$MPIS" ] && command -v mpicc >/dev/null; then
        if mpicc --showme >/dev/null 2>&1; then MPIS="mpi:openmpi"; else MPIS="mpi:mpich"; fi
    fi
fi
MPIS=$(echo $MPIS)
[ -n "$MPIS" ] || echo "full_node: no MPI found: ratios against the best MPI will be empty" >&2
KERNELS=${KERNELS:-$("$WULF" npb --help | awk '/^  [a-z]+ +[A-Z]+:/ && $1 != "all" {print $1}')}
KERNELS=$(echo $KERNELS)
VIA="shm,tcp${MPIS:+,$(echo "$MPIS" | tr ' ' ',')}"
{
    echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "wulf: $("$WULF" --version); MPIs: ${MPIS:-none}; class $CLASS; kernels: $KERNELS; bound $MINUTES min"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/header"
cat "$OUT/header" >&2

# 1. Large messages, warm and cold.
sizes=64Ki,256Ki,1Mi,4Mi
phase_end=$((start + MINUTES * 20))
for t in c2c shm cma $MPIS; do
    for cold in "" --nocache; do
        tag=$(echo "$t" | tr ':' '_')${cold:+-cold}
        bounded "sweep $t ${cold:-warm}" "$WULF" sweep "$t" $cold --sizes "$sizes" \
            --budget "$SWEEP_BUDGET" --quiet --json "$OUT/sweep-$tag.json"
    done
done

# Process counts a kernel accepts (see the header).
accepts() { # $1 kernel, $2 np
    local k=$1 n=$2 r
    case $k in
    ep | lu) return 0 ;;
    sp | bt) r=$(python3 -c "import math; print(math.isqrt($n) ** 2 == $n)"); [ "$r" = True ] ;;
    *) [ $((n & (n - 1))) -eq 0 ] ;;
    esac
}
counts=("$MAXNP")
for ((n = 1; n < MAXNP; n *= 2)); do counts+=("$n"); done
# nproc first, then the rest largest first, np = 1 last.
ordered=("$MAXNP")
for ((i = ${#counts[@]} - 1; i >= 1; i--)); do ordered+=("${counts[$i]}"); done

evidence() { # $1 kernel: what runs on each CPU while the ranks run
    [ "${EVIDENCE:-0}" = 1 ] || return 0
    (
        sleep 3
        for i in 1 2 3; do
            # %cpu is ps's: CPU time over the thread's life, so a rank's
            # spinning shows as ~100 and a sleeper waits in wchan.
            echo "--- $1 np=$MAXNP sample $i: threads above 1% CPU by CPU (psr): pid, tid, state, %cpu, wait channel, command"
            ps -eLo psr,pid,tid,stat,pcpu,wchan:20,args --sort=psr | awk 'NR > 1 && $5 > 1.0' | cut -c1-150
            sleep 2
        done
    ) >>"$OUT/evidence-$1.txt" 2>&1 &
}

# 2 and 3. NAS.
phase_end=$deadline
for np in "${ordered[@]}"; do
    for k in $KERNELS; do
        accepts "$k" "$np" || continue
        via=$VIA
        [ "$np" = 1 ] && via=shm
        [ "$np" = "$MAXNP" ] && evidence "$k"
        bounded "npb $k class $CLASS np=$np" "$WULF" npb "$k" --class "$CLASS" --np "$np" \
            --via "$via" --repetitions "$REPS" --json "$OUT/npb-$k-$np.json"
    done
done

cat "$OUT/header"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); wall $(($(date +%s) - start)) s"
python3 - "$OUT" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
# Sweeps: one-way median us per (transport, buffers, size).
rows = {}
for p in sorted(glob.glob(os.path.join(out, "sweep-*.json"))):
    r = load(p)
    if not r:
        continue
    buf = "cold" if r["options"].get("nocache") else "warm"
    for pt in r["points"]:
        rows.setdefault((buf, pt["bytes"]), {})[r["transport"]] = pt["median_ns"] / 1e3
if rows:
    print("\nLarge messages: median one-way time, us (ratio: best MPI time / this; >1 faster than the best MPI)")
    names = sorted({t for v in rows.values() for t in v}, key=lambda t: (t.startswith("mpi"), t))
    print("%-6s %8s " % ("bufs", "bytes") + " ".join("%22s" % n for n in names))
    for (buf, b) in sorted(rows):
        v = rows[(buf, b)]
        mpis = [x for n, x in v.items() if n.startswith("mpi:")]
        best = min(mpis) if mpis else None
        cells = []
        for n in names:
            if n not in v:
                cells.append("%22s" % "-")
            elif best and not n.startswith("mpi:") and n != "c2c":
                cells.append("%22s" % ("%.1f (%.2fx)" % (v[n], best / v[n])))
            else:
                cells.append("%22s" % ("%.1f" % v[n]))
        print("%-6s %8d " % (buf, b) + " ".join(cells))
# NAS: best Mop/s per (kernel, np, via).
nas = {}
for p in sorted(glob.glob(os.path.join(out, "npb-*.json"))):
    r = load(p)
    if not r:
        continue
    for run in r["runs"]:
        m = run.get("best_mop_s")
        key = (r["kernel"], run["nprocs"])
        nas.setdefault(key, {})[run["via"]] = ("%.0f" % m) if m else "FAILED"
if nas:
    vias = sorted({v for d in nas.values() for v in d}, key=lambda t: (t.startswith("mpi"), t))
    print("\nNAS class %s: best Mop/s (ratio against the best MPI at the same np)" % os.environ.get("CLASS", "A"))
    print("%-6s %5s " % ("kernel", "np") + " ".join("%20s" % v for v in vias))
    for (k, np) in sorted(nas):
        d = nas[(k, np)]
        mpis = [float(x) for n, x in d.items() if n.startswith("mpi:") and x != "FAILED"]
        best = max(mpis) if mpis else None
        cells = []
        for v in vias:
            x = d.get(v)
            if x is None:
                cells.append("%20s" % "-")
            elif best and x != "FAILED" and not v.startswith("mpi:"):
                cells.append("%20s" % ("%s (%.2fx)" % (x, float(x) / best)))
            else:
                cells.append("%20s" % x)
        print("%-6s %5d " % (k, np) + " ".join(cells))
EOF
if [ "${#skipped[@]}" -gt 0 ]; then
    echo
    echo "not measured within the bound (or cut at it):"
    printf '  %s\n' "${skipped[@]}"
fi
if [ "${EVIDENCE:-0}" = 1 ]; then
    for f in "$OUT"/evidence-*.txt; do [ -e "$f" ] && { echo; echo "== $f"; head -40 "$f"; }; done
fi
if [ -n "$kept" ]; then echo "results and log: $OUT"; else echo "(set OUT=DIR to keep the JSON and the log)"; fi
