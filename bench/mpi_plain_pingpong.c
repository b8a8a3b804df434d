/*
 * Plain MPI ping-pong: the reference wulf's MPI transport is measured
 * against (bench/mpi_overhead.sh). Deliberately the simplest loop there is:
 * MPI_Send / MPI_Recv of one buffer between ranks 0 and 1, each rank pinned
 * to CPU <rank> as wulf pins its two ends by default, a warm-up, then TRIALS
 * blocks of REPS round trips, each block timed as one with MPI_Wtime.
 *
 * Usage: mpirun -np 2 ./plain BYTES [REPS] [TRIALS]
 * Prints: bytes, median one-way time (half a round trip) in ns over the
 * trials, min one-way ns, and the pingpong throughput in bit/s from the
 * median (bytes * 8 / one-way), as wulf computes it.
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 %s BYTES [REPS] [TRIALS]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    long bytes = atol(argv[1]);
    long reps = argc > 2 ? atol(argv[2]) : (bytes < 65536 ? 10000 : 20);
    int trials = argc > 3 ? atoi(argv[3]) : 30;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rank, &set);
    sched_setaffinity(0, sizeof set, &set);
    char *s = aligned_alloc(4096, (bytes + 4096) / 4096 * 4096);
    char *r = aligned_alloc(4096, (bytes + 4096) / 4096 * 4096);
    memset(s, 0xa5, bytes);
    memset(r, 0xa5, bytes);
    double *t = malloc(sizeof(double) * trials);
    int peer = 1 - rank;
    for (int trial = -3; trial < trials; trial++) { /* 3 warm-up blocks */
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
        double dt = MPI_Wtime() - t0;
        if (trial >= 0)
            t[trial] = dt / reps / 2 * 1e9;
    }
    if (rank == 0) {
        qsort(t, trials, sizeof(double), cmp);
        double med = trials % 2 ? t[trials / 2] : (t[trials / 2 - 1] + t[trials / 2]) / 2;
        printf("%ld %.3f %.3f %.6e\n", bytes, med, t[0], bytes * 8 / (med * 1e-9));
    }
    MPI_Finalize();
    return 0;
}
