/*
 * Plain MPI ping-pong: the reference wulf's MPI transport is measured
 * against (bench/mpi_overhead.sh). Deliberately the simplest loop there is:
 * MPI_Send / MPI_Recv of one buffer between ranks 0 and 1, each rank pinned
 * to CPU <rank> as wulf pins its two ends by default, a calibration that
 * doubles as warm-up, then TRIALS blocks of round trips, each block timed
 * as one with MPI_Wtime.
 *
 * Like wulf, it sizes a block to last TRIAL_MS (wulf aims at 1/25 of a
 * point's budget): under interference longer blocks catch more of it, so
 * both sides must time blocks of the same length to be comparable.
 *
 * Usage: mpirun -np 2 ./plain BYTES [TRIAL_MS] [TRIALS]   (40 ms, 25 trials)
 * Prints: bytes, the median one-way time (half a round trip) in ns over the
 * trials, the minimum one-way ns, the ping-pong throughput in bit/s from
 * the median (bytes * 8 / one-way, as wulf computes it), and round trips
 * per block.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* `reps` round trips of `bytes`; returns the block's seconds. */
static double block(int rank, char *s, char *r, long bytes, long reps)
{
    int peer = 1 - rank;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < reps; i++) {
        if (rank == 0) {
            MPI_Send(s, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(r, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(r, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 %s BYTES [TRIAL_MS] [TRIALS]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    long bytes = atol(argv[1]);
    double trial_s = (argc > 2 ? atof(argv[2]) : 40.0) / 1e3;
    int trials = argc > 3 ? atoi(argv[3]) : 25;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rank, &set);
    sched_setaffinity(0, sizeof set, &set);
    size_t cap = (size_t)(bytes + 4096) / 4096 * 4096;
    char *s = aligned_alloc(4096, cap);
    char *r = aligned_alloc(4096, cap);
    memset(s, 0xa5, cap);
    memset(r, 0xa5, cap);
    double *t = malloc(sizeof(double) * trials);

    /* Calibration: double the block until it lasts a tenth of a trial;
     * rank 0 decides for both. */
    long reps = 1;
    for (;;) {
        double dt = block(rank, s, r, bytes, reps);
        long next = dt >= trial_s / 10 ? (long)(reps * trial_s / dt) : 0;
        MPI_Bcast(&next, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        if (next) {
            reps = next;
            break;
        }
        reps *= 2;
    }
    block(rank, s, r, bytes, reps); /* one full-length warm-up block */
    for (int trial = 0; trial < trials; trial++)
        t[trial] = block(rank, s, r, bytes, reps) / reps / 2 * 1e9;
    if (rank == 0) {
        qsort(t, trials, sizeof(double), cmp);
        double med = trials % 2 ? t[trials / 2] : (t[trials / 2 - 1] + t[trials / 2]) / 2;
        printf("%ld %.3f %.3f %.6e %ld\n", bytes, med, t[0], bytes * 8 / (med * 1e-9), reps);
    }
    MPI_Finalize();
    return 0;
}
