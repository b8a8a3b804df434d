#!/usr/bin/env bash
# wulf's NAS FT against NPB 3.4's own MPI FT (Fortran, built with Open
# MPI's mpif90), interleaved run by run on this machine.
#
#   NPB_DIR=/path/to/NPB3.4.x/NPB3.4-MPI bench/npb_ft_vs_npb.sh [CLASS...]
#
#   CLASS  NPB classes (default: S W).
#   NPS    process counts (default: "1 2"); REPS, VIA, MPI as for
#          bench/npb_kernels_vs_npb.sh, which this runs with KERNELS=ft
#          (one script builds and times every kernel the same way).
#
# Both sides print NPB's Mop/s total: the same operation count (NPB's
# N (14.8157 + 7.19641 ln N + (5.23518 + 7.21113 ln N) niter)) over the
# wall time of the timed section (setup, forward FFT and the niter steps,
# after one untimed pass, as NPB); only verified runs count.
# MPI_NO_CHECKPOINT=1 keeps the checkpointing forks of NPB (github
# igankevich/npb-checkpoints) from writing their checkpoint in the timed
# loop; an unmodified NPB ignores it.
set -euo pipefail
[ $# -eq 0 ] && set -- S W
export MPI_NO_CHECKPOINT=1
exec env KERNELS=ft NPS="${NPS:-1 2}" "$(dirname "$0")/npb_kernels_vs_npb.sh" "$@"
