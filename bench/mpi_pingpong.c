/*
 * Plain MPI ping-pong between ranks 0 and 1, timed the way wulf times a
 * sweep, so the figures compare: for each size, one untimed round trip,
 * a calibration block, then TRIALS blocks of REPS round trips each timed as
 * one (REPS chosen so a block lasts about TARGET_MS); a trial's figure is
 * half the block time divided by REPS (the one-way time). Rank 0 prints,
 * per size: bytes, median and minimum one-way time in ns, trials, reps.
 * Buffers are page aligned, touched before timing and reused (cache-hot,
 * like wulf without --nocache).
 *
 * Build: mpicc.openmpi -O2 -o mpi_pingpong_ompi mpi_pingpong.c
 * Run:   mpirun -np 2 --bind-to core ./mpi_pingpong_ompi 8 1024 65536
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIALS 21
#define TARGET_MS 5.0

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One block: an untimed primer round trip, then `reps` timed ones. Both
 * ranks call it with the same arguments; rank 0's time is returned. */
static double block(int rank, char *sbuf, char *rbuf, int bytes, long reps)
{
    int peer = 1 - rank;
    if (rank == 0) {
        MPI_Send(sbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
    }
    double t0 = MPI_Wtime();
    for (long i = 0; i < reps; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 %s BYTES...\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long max = 0;
    for (int a = 1; a < argc; a++)
        if (atol(argv[a]) > max)
            max = atol(argv[a]);
    char *sbuf, *rbuf;
    if (posix_memalign((void **)&sbuf, 4096, max + 1) || posix_memalign((void **)&rbuf, 4096, max + 1)) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 0xa5, max + 1);
    memset(rbuf, 0x5a, max + 1);
    if (rank == 0)
        printf("# bytes median_ns min_ns trials reps\n");
    for (int a = 1; a < argc; a++) {
        int bytes = atoi(argv[a]);
        long reps = 1;
        /* Calibration: a block of one round trip, then one sized from it. */
        for (int c = 0; c < 2; c++) {
            double t = block(rank, sbuf, rbuf, bytes, reps);
            if (rank == 0) {
                double per = t / reps;
                reps = (long)(TARGET_MS * 1e-3 / (per > 1e-9 ? per : 1e-9));
                if (reps < 1)
                    reps = 1;
            }
            MPI_Bcast(&reps, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        }
        double trials[TRIALS];
        for (int k = 0; k < TRIALS; k++)
            trials[k] = block(rank, sbuf, rbuf, bytes, reps) / reps / 2.0 * 1e9;
        if (rank == 0) {
            qsort(trials, TRIALS, sizeof(double), cmp_double);
            printf("%d %.1f %.1f %d %ld\n", bytes, trials[TRIALS / 2], trials[0], TRIALS, reps);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
