/* A PMPI interposer (LD_PRELOAD) that counts what an MPI program sends,
 * for bench/npb_traffic.sh: point-to-point messages and bytes to other
 * ranks, and collectives by kind (calls and this rank's share of bytes,
 * counted as wulf's comm::Counted counts them), with a snapshot of the
 * counters at every MPI_Wtime call, so that the script can take the
 * counts between the two calls that bracket NPB's timed section.
 *
 * Open MPI's Fortran bindings call the C PMPI_ functions directly, so a
 * Fortran program (NPB's kernels but IS) is caught at its Fortran symbols
 * (mpi_send_ ...) and a C program (IS) at the C ones; both feed the same
 * counters. At MPI_Finalize each rank writes $NPB_PMPI_OUT.RANK: one line
 * per MPI_Wtime call, "wtime SECONDS COUNTERS...", in the order of
 * KINDS below.
 *
 * Build: mpicc -O2 -shared -fPIC -o npb_pmpi_count.so npb_pmpi_count.c
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    P2P_MSGS, P2P_BYTES,
    ALLREDUCE_CALLS, ALLREDUCE_BYTES,
    REDUCE_CALLS, REDUCE_BYTES,
    BCAST_CALLS, BCAST_BYTES,
    ALLTOALL_CALLS, ALLTOALL_BYTES,
    ALLTOALLV_CALLS, ALLTOALLV_BYTES,
    ALLGATHER_CALLS, ALLGATHER_BYTES,
    BARRIER_CALLS,
    /* Totals as wulf counts them: a message per point-to-point send to
     * another rank, per rank and reduction, per other rank of an
     * all-to-all with data, per broadcast at its root. */
    WULF_MSGS, WULF_BYTES,
    NCOUNTERS
};

static const char *KINDS =
    "p2p_msgs p2p_bytes allreduce_calls allreduce_bytes reduce_calls reduce_bytes "
    "bcast_calls bcast_bytes alltoall_calls alltoall_bytes alltoallv_calls alltoallv_bytes "
    "allgather_calls allgather_bytes barrier_calls wulf_msgs wulf_bytes";

static long long counters[NCOUNTERS];

struct snapshot {
    double t;
    long long c[NCOUNTERS];
};

static struct snapshot *snaps;
static size_t nsnaps, capsnaps;

static void snapshot(double t)
{
    if (nsnaps == capsnaps) {
        capsnaps = capsnaps ? 2 * capsnaps : 256;
        snaps = realloc(snaps, capsnaps * sizeof *snaps);
        if (!snaps) {
            fprintf(stderr, "npb_pmpi_count: out of memory\n");
            abort();
        }
    }
    snaps[nsnaps].t = t;
    for (int i = 0; i < NCOUNTERS; i++)
        snaps[nsnaps].c[i] = counters[i];
    nsnaps++;
}

static long long type_bytes(MPI_Datatype type, long long count)
{
    int size = 0;
    PMPI_Type_size(type, &size);
    return count * size;
}

static int comm_size(MPI_Comm comm)
{
    int n = 1;
    PMPI_Comm_size(comm, &n);
    return n;
}

static int comm_rank(MPI_Comm comm)
{
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

static void count_p2p(MPI_Comm comm, int dest, long long bytes)
{
    if (dest == MPI_PROC_NULL || dest == comm_rank(comm))
        return;
    counters[P2P_MSGS]++;
    counters[P2P_BYTES] += bytes;
    counters[WULF_MSGS]++;
    counters[WULF_BYTES] += bytes;
}

/* A reduction or gather: this rank's data once. */
static void count_reduction(MPI_Comm comm, int calls, int bytes_at, long long bytes)
{
    counters[calls]++;
    counters[bytes_at] += bytes;
    if (comm_size(comm) > 1) {
        counters[WULF_MSGS]++;
        counters[WULF_BYTES] += bytes;
    }
}

static void count_bcast(MPI_Comm comm, int root, long long bytes)
{
    counters[BCAST_CALLS]++;
    if (comm_rank(comm) == root && comm_size(comm) > 1) {
        counters[BCAST_BYTES] += bytes;
        counters[WULF_MSGS]++;
        counters[WULF_BYTES] += bytes;
    }
}

static void count_alltoall(MPI_Comm comm, long long block_bytes)
{
    int n = comm_size(comm);
    counters[ALLTOALL_CALLS]++;
    counters[ALLTOALL_BYTES] += (n - 1) * block_bytes;
    if (block_bytes > 0) {
        counters[WULF_MSGS] += n - 1;
        counters[WULF_BYTES] += (n - 1) * block_bytes;
    }
}

static void count_alltoallv(MPI_Comm comm, const int *counts, MPI_Datatype type)
{
    int n = comm_size(comm), me = comm_rank(comm);
    counters[ALLTOALLV_CALLS]++;
    for (int r = 0; r < n; r++) {
        if (r == me || counts[r] == 0)
            continue;
        long long b = type_bytes(type, counts[r]);
        counters[ALLTOALLV_BYTES] += b;
        counters[WULF_MSGS]++;
        counters[WULF_BYTES] += b;
    }
}

static void write_snapshots(void)
{
    const char *base = getenv("NPB_PMPI_OUT");
    if (!base)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", base, comm_rank(MPI_COMM_WORLD));
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return;
    }
    fprintf(f, "# %s\n", KINDS);
    for (size_t s = 0; s < nsnaps; s++) {
        fprintf(f, "wtime %.9f", snaps[s].t);
        for (int i = 0; i < NCOUNTERS; i++)
            fprintf(f, " %lld", snaps[s].c[i]);
        fputc('\n', f);
    }
    fclose(f);
}

/* ---- C bindings (NPB's IS) ---- */

double MPI_Wtime(void)
{
    double t = PMPI_Wtime();
    snapshot(t);
    return t;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    count_p2p(comm, dest, type_bytes(type, count));
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    count_p2p(comm, dest, type_bytes(type, count));
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    count_p2p(comm, dest, type_bytes(stype, scount));
    return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                         status);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    count_reduction(comm, ALLREDUCE_CALLS, ALLREDUCE_BYTES, type_bytes(type, count));
    return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm)
{
    count_reduction(comm, REDUCE_CALLS, REDUCE_BYTES, type_bytes(type, count));
    return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    count_bcast(comm, root, type_bytes(type, count));
    return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    count_alltoall(comm, type_bytes(stype, scount));
    return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Alltoallv(const void *sbuf, const int *scounts, const int *sdispls, MPI_Datatype stype,
                  void *rbuf, const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    count_alltoallv(comm, scounts, stype);
    return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    count_reduction(comm, ALLGATHER_CALLS, ALLGATHER_BYTES, type_bytes(stype, scount));
    return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Barrier(MPI_Comm comm)
{
    counters[BARRIER_CALLS]++;
    return PMPI_Barrier(comm);
}

int MPI_Finalize(void)
{
    write_snapshots();
    return PMPI_Finalize();
}

/* ---- Fortran bindings (gfortran's names; every argument by reference,
 * handles as Fortran integers) ---- */

typedef int MPI_Fint_t;

void pmpi_send_(void *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *,
                MPI_Fint_t *);
void pmpi_isend_(void *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *,
                 MPI_Fint_t *, MPI_Fint_t *);
void pmpi_sendrecv_(void *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, void *,
                    MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *,
                    MPI_Fint_t *, MPI_Fint_t *);
void pmpi_allreduce_(void *, void *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *,
                     MPI_Fint_t *);
void pmpi_reduce_(void *, void *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *,
                  MPI_Fint_t *, MPI_Fint_t *);
void pmpi_bcast_(void *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *);
void pmpi_alltoall_(void *, MPI_Fint_t *, MPI_Fint_t *, void *, MPI_Fint_t *, MPI_Fint_t *,
                    MPI_Fint_t *, MPI_Fint_t *);
void pmpi_alltoallv_(void *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, void *, MPI_Fint_t *,
                     MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *, MPI_Fint_t *);
void pmpi_allgather_(void *, MPI_Fint_t *, MPI_Fint_t *, void *, MPI_Fint_t *, MPI_Fint_t *,
                     MPI_Fint_t *, MPI_Fint_t *);
void pmpi_barrier_(MPI_Fint_t *, MPI_Fint_t *);
void pmpi_finalize_(MPI_Fint_t *);

#define C_TYPE(f) MPI_Type_f2c(*(f))
#define C_COMM(f) MPI_Comm_f2c(*(f))

double mpi_wtime_(void)
{
    return MPI_Wtime();
}

void mpi_send_(void *buf, MPI_Fint_t *count, MPI_Fint_t *type, MPI_Fint_t *dest, MPI_Fint_t *tag,
               MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    count_p2p(C_COMM(comm), *dest, type_bytes(C_TYPE(type), *count));
    pmpi_send_(buf, count, type, dest, tag, comm, ierr);
}

void mpi_isend_(void *buf, MPI_Fint_t *count, MPI_Fint_t *type, MPI_Fint_t *dest,
                MPI_Fint_t *tag, MPI_Fint_t *comm, MPI_Fint_t *req, MPI_Fint_t *ierr)
{
    count_p2p(C_COMM(comm), *dest, type_bytes(C_TYPE(type), *count));
    pmpi_isend_(buf, count, type, dest, tag, comm, req, ierr);
}

void mpi_sendrecv_(void *sbuf, MPI_Fint_t *scount, MPI_Fint_t *stype, MPI_Fint_t *dest,
                   MPI_Fint_t *stag, void *rbuf, MPI_Fint_t *rcount, MPI_Fint_t *rtype,
                   MPI_Fint_t *source, MPI_Fint_t *rtag, MPI_Fint_t *comm, MPI_Fint_t *status,
                   MPI_Fint_t *ierr)
{
    count_p2p(C_COMM(comm), *dest, type_bytes(C_TYPE(stype), *scount));
    pmpi_sendrecv_(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                   status, ierr);
}

void mpi_allreduce_(void *sbuf, void *rbuf, MPI_Fint_t *count, MPI_Fint_t *type, MPI_Fint_t *op,
                    MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    count_reduction(C_COMM(comm), ALLREDUCE_CALLS, ALLREDUCE_BYTES,
                    type_bytes(C_TYPE(type), *count));
    pmpi_allreduce_(sbuf, rbuf, count, type, op, comm, ierr);
}

void mpi_reduce_(void *sbuf, void *rbuf, MPI_Fint_t *count, MPI_Fint_t *type, MPI_Fint_t *op,
                 MPI_Fint_t *root, MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    count_reduction(C_COMM(comm), REDUCE_CALLS, REDUCE_BYTES, type_bytes(C_TYPE(type), *count));
    pmpi_reduce_(sbuf, rbuf, count, type, op, root, comm, ierr);
}

void mpi_bcast_(void *buf, MPI_Fint_t *count, MPI_Fint_t *type, MPI_Fint_t *root,
                MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    count_bcast(C_COMM(comm), *root, type_bytes(C_TYPE(type), *count));
    pmpi_bcast_(buf, count, type, root, comm, ierr);
}

void mpi_alltoall_(void *sbuf, MPI_Fint_t *scount, MPI_Fint_t *stype, void *rbuf,
                   MPI_Fint_t *rcount, MPI_Fint_t *rtype, MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    count_alltoall(C_COMM(comm), type_bytes(C_TYPE(stype), *scount));
    pmpi_alltoall_(sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr);
}

void mpi_alltoallv_(void *sbuf, MPI_Fint_t *scounts, MPI_Fint_t *sdispls, MPI_Fint_t *stype,
                    void *rbuf, MPI_Fint_t *rcounts, MPI_Fint_t *rdispls, MPI_Fint_t *rtype,
                    MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    count_alltoallv(C_COMM(comm), scounts, C_TYPE(stype));
    pmpi_alltoallv_(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, ierr);
}

void mpi_allgather_(void *sbuf, MPI_Fint_t *scount, MPI_Fint_t *stype, void *rbuf,
                    MPI_Fint_t *rcount, MPI_Fint_t *rtype, MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    count_reduction(C_COMM(comm), ALLGATHER_CALLS, ALLGATHER_BYTES,
                    type_bytes(C_TYPE(stype), *scount));
    pmpi_allgather_(sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr);
}

void mpi_barrier_(MPI_Fint_t *comm, MPI_Fint_t *ierr)
{
    counters[BARRIER_CALLS]++;
    pmpi_barrier_(comm, ierr);
}

void mpi_finalize_(MPI_Fint_t *ierr)
{
    write_snapshots();
    pmpi_finalize_(ierr);
}
