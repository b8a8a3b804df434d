#!/usr/bin/env bash
# wulf's NAS BT against NPB 3.4's own MPI BT (Fortran, built with Open
# MPI's mpif90), interleaved run by run on this machine.
#
#   NPB_DIR=/path/to/NPB3.4.x/NPB3.4-MPI bench/npb_bt_vs_fortran.sh [CLASS...]
#
#   CLASS  NPB classes (default: S W).
#   NPS    process counts (default: "1 4": BT, like SP, runs on NPB's
#          multi-partition, square counts); REPS, VIA, MPI as for
#          bench/npb_kernels_vs_npb.sh, which this runs with KERNELS=bt.
#
# Both sides print NPB's Mop/s total: the same operation count (NPB's fit
# `niter (3478.8 n^3 - 17655.7 n^2 + 28023.7 n)`) over the wall time of
# the timed ADI steps; only verified runs count. NPB's BT is built
# without its I/O subtypes (plain `make bt CLASS=...`). MPI_NO_CHECKPOINT=1
# keeps the checkpointing forks of NPB (github igankevich/npb-checkpoints)
# from writing checkpoints in the timed loop; an unmodified NPB ignores it.
set -euo pipefail
[ $# -eq 0 ] && set -- S W
export MPI_NO_CHECKPOINT=1
exec env KERNELS=bt NPS="${NPS:-1 4}" "$(dirname "$0")/npb_kernels_vs_npb.sh" "$@"
