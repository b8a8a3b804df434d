/* A plain C PVM ping-pong, the independent probe for wulf's `pvm`
 * transports (bench/pvm_vs_c.sh): NetPIPE's pvm module's calls, nothing of
 * wulf's. The parent enrolls with the pvmd named by $PVM_TMP, spawns
 * itself (absolute path) as the echoing child, and times ITERS round trips
 * of SIZE bytes: pvm_initsend + pvm_pkbyte + pvm_send, pvm_recv +
 * pvm_upkbyte.
 *
 *   pvm_pingpong SIZE ITERS [raw|xdr] [direct|daemon] [HOST]
 *
 * HOST: the virtual machine's host the child is spawned on (PvmTaskHost;
 * bench/pvm_lab_vs_tcp.sh puts it on the other lab node); none: PVM's
 * choice (on one host, that host).
 *
 * Prints: size_bytes one_way_us (median of 25 blocks of ITERS/25 round
 * trips, half the round trip: as wulf's median of trials, robust to a
 * descheduled block on a busy machine), Mbit/s at that time, and the
 * fastest block's one-way us (NetPIPE reports the fastest of its few
 * long trials: bench/netpipe_modules.sh sets the two side by side).
 * Build: cc -O2 -o pvm_pingpong bench/pvm_pingpong.c -lpvm3
 */
#include <pvm3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG 1
#define BLOCKS 25

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void xfer_send(int tid, char *buf, int n, int enc) {
    pvm_initsend(enc);
    if (n > 0) pvm_pkbyte(buf, n, 1);
    if (pvm_send(tid, TAG) < 0) { fprintf(stderr, "pvm_send failed\n"); pvm_exit(); exit(1); }
}

static void xfer_recv(int tid, char *buf, int n) {
    if (pvm_recv(tid, TAG) < 0) { fprintf(stderr, "pvm_recv failed\n"); pvm_exit(); exit(1); }
    if (n > 0) pvm_upkbyte(buf, n, 1);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SIZE ITERS [raw|xdr|inplace] [direct|daemon] [HOST]\n", argv[0]);
        return 2;
    }
    int size = atoi(argv[1]), iters = atoi(argv[2]);
    if (size < 0 || iters < BLOCKS) {
        fprintf(stderr, "SIZE must be >= 0 and ITERS at least %d\n", BLOCKS);
        return 2;
    }
    /* inplace: NetPIPE's choice (its netpipe.h), the data sent from the
       caller's buffer instead of copied into PVM's at pack time. */
    const char *e = argc > 3 ? argv[3] : "raw";
    int enc = strcmp(e, "xdr") == 0 ? PvmDataDefault
            : strcmp(e, "inplace") == 0 ? PvmDataInPlace : PvmDataRaw;
    int route = (argc > 4 && strcmp(argv[4], "daemon") == 0) ? PvmDontRoute : PvmRouteDirect;
    char *buf = calloc(size > 0 ? size : 1, 1);
    int me = pvm_mytid();
    if (me < 0) { fprintf(stderr, "cannot enroll (is a pvmd running in $PVM_TMP?)\n"); return 1; }
    pvm_setopt(PvmRoute, route);
    int parent = pvm_parent();
    if (parent > 0) { /* the echoing child: ITERS + one warm-up round trip */
        for (int i = 0; i < iters + 1; i++) {
            xfer_recv(parent, buf, size);
            xfer_send(parent, buf, size, enc);
        }
        pvm_exit();
        return 0;
    }
    char *args[] = {argv[1], argv[2], argc > 3 ? argv[3] : "raw", argc > 4 ? argv[4] : "direct", NULL};
    int child;
    char *where = argc > 5 ? argv[5] : "";
    if (pvm_spawn(argv[0], args, *where ? PvmTaskHost : PvmTaskDefault, where, 1, &child) != 1) {
        fprintf(stderr, "pvm_spawn of %s failed (%d): give an absolute path\n", argv[0], child);
        pvm_exit();
        return 1;
    }
    xfer_send(child, buf, size, enc); /* warm-up: opens the direct link */
    xfer_recv(child, buf, size);
    double block[BLOCKS];
    int per = iters / BLOCKS;
    for (int b = 0; b < BLOCKS; b++) {
        double t0 = now_s();
        for (int i = 0; i < per; i++) {
            xfer_send(child, buf, size, enc);
            xfer_recv(child, buf, size);
        }
        block[b] = (now_s() - t0) / per / 2.0;
    }
    /* The child expects ITERS round trips: finish the remainder. */
    for (int i = per * BLOCKS; i < iters; i++) {
        xfer_send(child, buf, size, enc);
        xfer_recv(child, buf, size);
    }
    qsort(block, BLOCKS, sizeof block[0], cmp);
    double t = block[BLOCKS / 2];
    printf("%d %.3f %.1f %.3f\n", size, t * 1e6, size * 8.0 / t / 1e6, block[0] * 1e6);
    pvm_exit();
    free(buf);
    return 0;
}
