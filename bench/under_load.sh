#!/usr/bin/env bash
# Benchmark (not a test): figures and verdicts that measure the transport,
# not the neighbours (issue 44). Each case runs idle and beside a
# competing load (`stress-ng --cpu 2`: two hogs, one per CPU of this
# 2-vCPU VM, bounded by --timeout and stopped by their own process id),
# interleaved (every round runs each case idle, then loaded), ROUNDS
# rounds, and the results are printed side by side with the load average
# beside each run. The cases, one file each under bench/under_load/:
#   headline     tcp and shm headline latency at 8 B and 64 KiB and the
#                peak: loaded/idle within 0.8-1.25, or withheld with the
#                reason;
#   compare      `wulf compare` of one run per side: a halved lab link
#                detected (exit 4), an A/A pair claiming nothing with the
#                gate passing (exit 0);
#   matrix       a healthy 4-node fe lab matrix naming nothing;
#   study        Table 2 ratios of `wulf study fe-vs-ge --quick` over its
#                three interleaved rounds: spread at most 20%, or named by
#                the study as moved;
#   idle_extras  only with IDLE_EXTRAS=1, idle only: the noisy share of the
#                default `wulf run` and event reproducibility, figures of
#                a quiet machine.
# Budgets (each section's file says why): headline 2 s a sweep, compare
# 20 s a sweep, matrix 12 s, the study its --quick budgets (277 s a study
# at load 14): about 30 minutes for 3 rounds on the busy development VM
# (without the extras), of which the two studies take 10; SECTIONS runs
# fewer.
# Needs root (lab namespaces) for compare, matrix and study.
#
# Usage: [SECTIONS="headline compare"] [IDLE_EXTRAS=1] \
#        bench/under_load.sh [BIN] [ROUNDS] [OUTDIR]
#   BIN     default target/ci/wulf
#   ROUNDS  default 3
#   OUTDIR  keep the results there (default: a temporary directory)
# HEADLINE_BUDGET, COMPARE_BUDGET, MATRIX_BUDGET and STUDY_ONLY override a
# section's budget (or the study's transports).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/ci/wulf}
ROUNDS=${2:-3}
SECTIONS=${SECTIONS:-headline compare matrix study}
[ "${IDLE_EXTRAS:-0}" = 1 ] && SECTIONS="$SECTIONS idle_extras"
keep=${3:-}
if [ -n "$keep" ]; then
  work=$keep
  mkdir -p "$work"
else
  work=$(mktemp -d)
fi
for s in common $SECTIONS; do
  # shellcheck source=/dev/null
  . "bench/under_load/$s.sh"
done
trap 'stop_load; [ -n "$keep" ] || rm -rf "$work"' EXIT
# The longest case (the study) takes a few minutes; the load never
# outlives this bound even if this script is killed.
LOAD_TIMEOUT=${LOAD_TIMEOUT:-600}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $BIN, $ROUNDS rounds, sections: $SECTIONS; load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  for s in $SECTIONS; do
    for load in idle busy; do
      [ "$load" = busy ] && [ "$s" = idle_extras ] && continue
      [ "$load" = busy ] && start_load "$LOAD_TIMEOUT"
      "${s}_case" "$load" "$round"
      stop_load
    done
  done
  echo "# round $round done $(date -u +%TZ), load $(loadavg)"
done
for s in $SECTIONS; do
  echo
  "${s}_report"
done
echo
echo "# $(date -u +%FT%TZ) done; load $(cut -d' ' -f1-3 /proc/loadavg); results in $work"
