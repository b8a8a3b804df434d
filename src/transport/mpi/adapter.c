/*
 * wulf's MPI adapter.
 *
 * wulf is one binary for every MPI: it is built without MPI headers or
 * libraries, and at run time compiles this file with each MPI's own
 * compiler wrapper (mpicc) into a shared library that worker processes load
 * with dlopen. The library exports a small, stable C ABI of plain types
 * (no MPI handle ever crosses it), so the Rust side needs no knowledge of an
 * implementation's mpi.h: handles, constants and the size of MPI_Request
 * differ between Open MPI and MPICH.
 *
 * Every function returns an MPI error code (MPI_SUCCESS is 0 in every
 * implementation) or one of the WULF_E_* codes below; errors on
 * MPI_COMM_WORLD are returned rather than fatal (MPI_ERRORS_RETURN).
 *
 * The hot paths (wulf_send, wulf_recv) are the very calls a plain C
 * ping-pong makes: MPI_Send and MPI_Recv with MPI_STATUS_IGNORE, so the
 * adapter adds one function call and a length check, nothing else.
 *
 * Bump WULF_ADAPTER_ABI whenever a signature changes: the cache key
 * includes this file's text, and the loader checks the number.
 */
#include <limits.h>
#include <mpi.h>
#include <string.h>

#define WULF_ADAPTER_ABI 7
/* Most messages one windowed call keeps in flight (osu_bw uses 64). */
#define WULF_MAX_WINDOW 1024
/* A message longer than an MPI count (int) can describe. */
#define WULF_E_TOO_LONG -1
/* A window outside 1..WULF_MAX_WINDOW. */
#define WULF_E_WINDOW -2
/* A value type code the adapter does not know. */
#define WULF_E_TYPE -3
/* A request slot outside 0..WULF_MAX_PENDING, or one with nothing posted. */
#define WULF_E_SLOT -4
/* Most non-blocking requests the NAS communicator keeps posted at once. */
#define WULF_MAX_PENDING 64

/* Requests of the windowed calls: static, so nothing is allocated while
 * timing. Calls never overlap (the Rust handle serialises them), so one
 * array is enough. */
static MPI_Request wulf_reqs[WULF_MAX_WINDOW];

/* Requests of the non-blocking calls (ABI 7), by slot: the caller names
 * the slot (its own buffer's index), so no MPI_Request crosses the ABI. */
static MPI_Request wulf_pending[WULF_MAX_PENDING];
static int wulf_pending_used[WULF_MAX_PENDING];

int wulf_abi(void) { return WULF_ADAPTER_ABI; }

int wulf_max_window(void) { return WULF_MAX_WINDOW; }

/* MPI_Init_thread at `requested`; levels in and out are 0..3 (single,
 * funneled, serialized, multiple): the constants' values are the
 * implementation's business, these numbers are ours. wulf asks for single,
 * as MPI_Init and the usual benchmarks do: Open MPI 4 turns on its internal
 * locking for any higher level, which costs measurable latency. */
int wulf_init(int requested, int *rank, int *size, int *level)
{
    int want = requested == 3   ? MPI_THREAD_MULTIPLE
               : requested == 2 ? MPI_THREAD_SERIALIZED
               : requested == 1 ? MPI_THREAD_FUNNELED
                                : MPI_THREAD_SINGLE;
    int provided = MPI_THREAD_SINGLE;
    int rc = MPI_Init_thread(NULL, NULL, want, &provided);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    *level = provided == MPI_THREAD_MULTIPLE     ? 3
             : provided == MPI_THREAD_SERIALIZED ? 2
             : provided == MPI_THREAD_FUNNELED   ? 1
                                                 : 0;
    rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Comm_size(MPI_COMM_WORLD, size);
}

int wulf_finalize(void) { return MPI_Finalize(); }

int wulf_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

/* MPI_Get_library_version, truncated to `cap` bytes including the NUL. */
int wulf_library_version(char *out, int cap)
{
    char buf[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    int rc = MPI_Get_library_version(buf, &len);
    if (rc != MPI_SUCCESS || cap <= 0)
        return rc;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, buf, (size_t)len);
    out[len] = 0;
    return MPI_SUCCESS;
}

int wulf_version(int *major, int *minor) { return MPI_Get_version(major, minor); }

/* MPI_Get_processor_name, truncated to `cap` bytes including the NUL. */
int wulf_processor_name(char *out, int cap)
{
    char buf[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    int rc = MPI_Get_processor_name(buf, &len);
    if (rc != MPI_SUCCESS || cap <= 0)
        return rc;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, buf, (size_t)len);
    out[len] = 0;
    return MPI_SUCCESS;
}

/* The text of an error code (MPI's own, or ours). */
void wulf_error_string(int code, char *out, int cap)
{
    if (cap <= 0)
        return;
    const char *ours = code == WULF_E_TOO_LONG ? "message longer than an MPI count (2^31 - 1 bytes)"
                       : code == WULF_E_WINDOW ? "window outside 1..1024"
                       : code == WULF_E_TYPE   ? "unknown value type"
                       : code == WULF_E_SLOT   ? "request slot outside 0..63 or not posted"
                                               : NULL;
    if (ours) {
        strncpy(out, ours, (size_t)cap - 1);
        out[cap - 1] = 0;
        return;
    }
    char buf[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS)
        len = 0;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, buf, (size_t)len);
    out[len] = 0;
}

double wulf_wtime(void) { return MPI_Wtime(); }

int wulf_send(const void *buf, long long len, int peer, int tag)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    return MPI_Send(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
}

int wulf_recv(void *buf, long long len, int peer, int tag)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    return MPI_Recv(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* A receive that reports how many bytes arrived (at most `len`), for
 * callers that must catch a message of the wrong length. */
int wulf_recv_counted(void *buf, long long len, int peer, int tag, long long *got)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    MPI_Status st;
    int rc = MPI_Recv(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
    int n = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_BYTE, &n);
    *got = n;
    return rc;
}

/* A receive from whichever rank sends first (MPI_ANY_SOURCE), reporting
 * that rank in `source` (ABI 6: the listening end of a channel between two
 * ranks of a larger job learns its peer from the peer's hello). */
int wulf_recv_any(void *buf, long long len, int tag, int *source)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    MPI_Status st;
    int rc = MPI_Recv(buf, (int)len, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
    *source = rc == MPI_SUCCESS ? st.MPI_SOURCE : -1;
    return rc;
}

/* MPI_Sendrecv with distinct peers (a shift along a ring or a grid axis);
 * `got` as in wulf_recv_counted. */
int wulf_sendrecv(const void *out, long long out_len, int to, void *in, long long in_len,
                  int from, int tag, long long *got)
{
    if (out_len > INT_MAX || in_len > INT_MAX)
        return WULF_E_TOO_LONG;
    MPI_Status st;
    int rc = MPI_Sendrecv(out, (int)out_len, MPI_BYTE, to, tag, in, (int)in_len, MPI_BYTE, from,
                          tag, MPI_COMM_WORLD, &st);
    int n = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_BYTE, &n);
    *got = n;
    return rc;
}

/* Send `out` to and receive `in` from `peer` at once (no deadlock however
 * large the messages). */
int wulf_exchange(const void *out, long long out_len, void *in, long long in_len, int peer, int tag)
{
    if (out_len > INT_MAX || in_len > INT_MAX)
        return WULF_E_TOO_LONG;
    return MPI_Sendrecv(out, (int)out_len, MPI_BYTE, peer, tag, in, (int)in_len, MPI_BYTE, peer,
                        tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* `count` messages of `buf`, posted as non-blocking sends `window` at a
 * time, each window completed before the next (as osu_bw does). */
int wulf_send_window(const void *buf, long long len, long long count, int window, int peer, int tag)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    if (window < 1 || window > WULF_MAX_WINDOW)
        return WULF_E_WINDOW;
    while (count > 0) {
        int n = count < window ? (int)count : window;
        for (int i = 0; i < n; i++) {
            int rc = MPI_Isend(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &wulf_reqs[i]);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        int rc = MPI_Waitall(n, wulf_reqs, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        count -= n;
    }
    return MPI_SUCCESS;
}

/* The receiving mirror of wulf_send_window: `window` receives posted ahead
 * into the same buffer (as osu_bw does; only the timing matters here). */
int wulf_recv_window(void *buf, long long len, long long count, int window, int peer, int tag)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    if (window < 1 || window > WULF_MAX_WINDOW)
        return WULF_E_WINDOW;
    while (count > 0) {
        int n = count < window ? (int)count : window;
        for (int i = 0; i < n; i++) {
            int rc = MPI_Irecv(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &wulf_reqs[i]);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        int rc = MPI_Waitall(n, wulf_reqs, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        count -= n;
    }
    return MPI_SUCCESS;
}

/* Non-blocking receive (ABI 7): MPI_Irecv of at most `len` bytes from
 * `peer` into `buf`, completed by wulf_wait on the same `slot` (0..63,
 * free). The buffer must stay valid until then: the Rust side lends the
 * communicator's own staging memory, never a caller's borrow. */
int wulf_irecv(void *buf, long long len, int peer, int tag, int slot)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    if (slot < 0 || slot >= WULF_MAX_PENDING || wulf_pending_used[slot])
        return WULF_E_SLOT;
    int rc = MPI_Irecv(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &wulf_pending[slot]);
    wulf_pending_used[slot] = rc == MPI_SUCCESS;
    return rc;
}

/* Non-blocking send (ABI 7): MPI_Isend of `len` bytes of `buf` to `peer`,
 * completed by wulf_wait on `slot`, as wulf_irecv. */
int wulf_isend(const void *buf, long long len, int peer, int tag, int slot)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    if (slot < 0 || slot >= WULF_MAX_PENDING || wulf_pending_used[slot])
        return WULF_E_SLOT;
    int rc = MPI_Isend((void *)buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                       &wulf_pending[slot]);
    wulf_pending_used[slot] = rc == MPI_SUCCESS;
    return rc;
}

/* MPI_Wait on the request of `slot` (ABI 7), which becomes free; `got`:
 * the bytes a receive took in (0 for a send). */
int wulf_wait(int slot, long long *got)
{
    if (slot < 0 || slot >= WULF_MAX_PENDING || !wulf_pending_used[slot])
        return WULF_E_SLOT;
    MPI_Status st;
    int rc = MPI_Wait(&wulf_pending[slot], &st);
    wulf_pending_used[slot] = 0;
    int n = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_BYTE, &n);
    *got = n;
    return rc;
}

/* In-place allreduce of doubles; op 0 = sum, 1 = max, 2 = min. */
int wulf_allreduce_f64(double *data, long long n, int op)
{
    if (n > INT_MAX)
        return WULF_E_TOO_LONG;
    MPI_Op o = op == 1 ? MPI_MAX : op == 2 ? MPI_MIN : MPI_SUM;
    return MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_DOUBLE, o, MPI_COMM_WORLD);
}

/* In-place sum of ints over all ranks (IS's bucket sizes, which NPB
 * reduces as MPI_INT). */
int wulf_allreduce_i32(int *data, long long n)
{
    if (n > INT_MAX)
        return WULF_E_TOO_LONG;
    return MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

/* MPI_Alltoallv of doubles (type 0) or ints (type 1, IS's keys, as NPB
 * sends them): counts and displacements in values, one entry per rank (the
 * caller checks that every block lies inside its buffer). */
int wulf_alltoallv(const void *send, const int *send_counts, const int *send_displs,
                   void *recv, const int *recv_counts, const int *recv_displs, int type)
{
    MPI_Datatype t;
    if (type == 0)
        t = MPI_DOUBLE;
    else if (type == 1)
        t = MPI_INT;
    else
        return WULF_E_TYPE;
    return MPI_Alltoallv((void *)send, (int *)send_counts, (int *)send_displs, t, recv,
                         (int *)recv_counts, (int *)recv_displs, t, MPI_COMM_WORLD);
}

int wulf_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

/* MPI_Bcast of `len` bytes from `root` (ABI 5, `wulf collective`). */
int wulf_bcast(void *buf, long long len, int root)
{
    if (len > INT_MAX)
        return WULF_E_TOO_LONG;
    return MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
}

/* MPI_Alltoall of `block` bytes to and from every rank: `send` and `recv`
 * hold one block per rank, in rank order (ABI 5, `wulf collective`; the
 * caller checks both buffers hold size x block bytes). */
int wulf_alltoall(const void *send, void *recv, long long block)
{
    if (block > INT_MAX)
        return WULF_E_TOO_LONG;
    return MPI_Alltoall((void *)send, (int)block, MPI_BYTE, recv, (int)block, MPI_BYTE,
                        MPI_COMM_WORLD);
}
