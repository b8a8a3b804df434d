/* A plain C UCX tag ping-pong, the probe for what `ucx(X)`'s receive path
 * costs per message against ucx_perftest tag_lat's (issue 47; nothing of
 * wulf's): two processes (fork, one pinned to CPU 0, one to CPU 1), the
 * worker addresses exchanged over a socketpair, then ITERS round trips of
 * SIZE bytes with ucp_tag_send_nbx / ucp_tag_recv_nbx and
 * ucp_worker_progress, in one of two receive styles:
 *
 *   perftest: a completion callback that counts, immediate completion
 *             allowed, the wait polling the counter (tag_lat's loop);
 *   wulf:     UCP_OP_ATTR_FLAG_NO_IMM_CMPL with recv_info, the wait
 *             calling ucp_tag_recv_request_test after every progress and
 *             the CPU's pause hint after a progress that found nothing,
 *             then ucp_request_free (src/transport/ucx/worker.rs, `--wait
 *             spin`);
 *   nopause:  wulf's without the pause hint.
 *
 * and a worker thread mode (single: ucx_perftest's with one thread;
 * serialized: wulf's). Each round trip is timed alone (two clock reads,
 * as wulf's tails); prints the median one-way time in ns with the clock's
 * own median cost (back-to-back reads) taken off, and the mean.
 *
 *   ucx_pingpong perftest|wulf|nopause single|serialized SIZE ITERS
 *
 * Build: cc -O2 -o ucx_pingpong bench/ucx_pingpong.c -lucp -lucs
 * UCX_TLS picks the transports as for ucx_perftest.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#define TAG 0x1337ULL

static int wulf_style, pause_hint;
static volatile int recvs_done;

static unsigned long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return (x > y) - (x < y);
}

static void die(const char *what) {
    fprintf(stderr, "ucx_pingpong: %s failed\n", what);
    exit(1);
}

static void recv_cb(void *req, ucs_status_t st, const ucp_tag_recv_info_t *info, void *user) {
    (void)st; (void)info; (void)user;
    recvs_done++;
    ucp_request_free(req);
}

static void send_msg(ucp_worker_h w, ucp_ep_h ep, char *buf, size_t n) {
    ucp_request_param_t p;
    memset(&p, 0, sizeof p);
    void *r = ucp_tag_send_nbx(ep, buf, n, TAG, &p);
    if (UCS_PTR_IS_ERR(r)) die("ucp_tag_send_nbx");
    if (r == NULL) return;
    while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(w);
    ucp_request_free(r);
}

static void recv_msg(ucp_worker_h w, char *buf, size_t n) {
    ucp_request_param_t p;
    memset(&p, 0, sizeof p);
    if (wulf_style) {
        ucp_tag_recv_info_t info;
        info.length = (size_t)-1;
        p.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        p.recv_info.tag_info = &info;
        void *r = ucp_tag_recv_nbx(w, buf, n, TAG, (ucp_tag_t)-1, &p);
        if (UCS_PTR_IS_ERR(r) || r == NULL) die("ucp_tag_recv_nbx");
        for (;;) {
            unsigned progressed = ucp_worker_progress(w);
            if (ucp_tag_recv_request_test(r, &info) != UCS_INPROGRESS) break;
            if (!progressed && pause_hint) __builtin_ia32_pause();
        }
        ucp_request_free(r);
        if (info.length != n) die("length");
        return;
    }
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    p.cb.recv = recv_cb;
    int want = recvs_done + 1;
    void *r = ucp_tag_recv_nbx(w, buf, n, TAG, (ucp_tag_t)-1, &p);
    if (UCS_PTR_IS_ERR(r)) die("ucp_tag_recv_nbx");
    if (r == NULL) return; /* completed at once: no callback */
    while (recvs_done < want) ucp_worker_progress(w);
}

/* Write then read a length-prefixed address over the socketpair end. */
static void *swap_address(int fd, void *mine, size_t len, size_t *peer_len) {
    if (write(fd, &len, sizeof len) != sizeof len || write(fd, mine, len) != (ssize_t)len)
        die("write address");
    if (read(fd, peer_len, sizeof *peer_len) != sizeof *peer_len) die("read address");
    char *peer = malloc(*peer_len);
    size_t got = 0;
    while (got < *peer_len) {
        ssize_t k = read(fd, peer + got, *peer_len - got);
        if (k <= 0) die("read address");
        got += k;
    }
    return peer;
}

static void run(int fd, int side, int serialized, size_t size, int iters) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(side, &cpus);
    sched_setaffinity(0, sizeof cpus, &cpus);
    ucp_params_t cp;
    memset(&cp, 0, sizeof cp);
    cp.field_mask = UCP_PARAM_FIELD_FEATURES;
    cp.features = UCP_FEATURE_TAG;
    ucp_context_h ctx;
    if (ucp_init(&cp, NULL, &ctx) != UCS_OK) die("ucp_init");
    ucp_worker_params_t wp;
    memset(&wp, 0, sizeof wp);
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = serialized ? UCS_THREAD_MODE_SERIALIZED : UCS_THREAD_MODE_SINGLE;
    ucp_worker_h w;
    if (ucp_worker_create(ctx, &wp, &w) != UCS_OK) die("ucp_worker_create");
    ucp_address_t *addr;
    size_t alen, plen;
    if (ucp_worker_get_address(w, &addr, &alen) != UCS_OK) die("ucp_worker_get_address");
    void *peer = swap_address(fd, addr, alen, &plen);
    ucp_ep_params_t ep_params;
    memset(&ep_params, 0, sizeof ep_params);
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = peer;
    ucp_ep_h ep;
    if (ucp_ep_create(w, &ep_params, &ep) != UCS_OK) die("ucp_ep_create");
    char *buf = calloc(size > 0 ? size : 1, 1);
    unsigned long long *rt = calloc(iters, sizeof *rt), *clk = calloc(iters, sizeof *clk);
    int warm = iters / 10 + 100;
    for (int i = -warm; i < iters; i++) {
        if (side == 0) {
            unsigned long long t0 = now_ns();
            send_msg(w, ep, buf, size);
            recv_msg(w, buf, size);
            unsigned long long t1 = now_ns();
            if (i >= 0) rt[i] = t1 - t0;
        } else {
            recv_msg(w, buf, size);
            send_msg(w, ep, buf, size);
        }
    }
    if (side == 0) {
        for (int i = 0; i < iters; i++) {
            unsigned long long a = now_ns();
            clk[i] = now_ns() - a;
        }
        double sum = 0;
        for (int i = 0; i < iters; i++) sum += rt[i];
        qsort(rt, iters, sizeof *rt, cmp);
        qsort(clk, iters, sizeof *clk, cmp);
        double median = (rt[iters / 2] - (double)clk[iters / 2]) / 2.0;
        printf("%.1f %.1f\n", median, sum / iters / 2.0);
    }
    /* Both sides done before either end goes (a byte each way). */
    char c = 0;
    if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1) die("final sync");
    ucp_ep_destroy(ep);
    ucp_worker_release_address(w, addr);
    ucp_worker_destroy(w);
    ucp_cleanup(ctx);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s perftest|wulf|nopause single|serialized SIZE ITERS\n", argv[0]);
        return 2;
    }
    wulf_style = strcmp(argv[1], "perftest") != 0;
    pause_hint = strcmp(argv[1], "wulf") == 0;
    int serialized = strcmp(argv[2], "serialized") == 0;
    long size = atol(argv[3]), iters = atol(argv[4]);
    if (size < 0 || iters < 100) {
        fprintf(stderr, "SIZE must be >= 0 and ITERS at least 100\n");
        return 2;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        close(sv[0]);
        run(sv[1], 1, serialized, size, iters);
        return 0;
    }
    close(sv[1]);
    run(sv[0], 0, serialized, size, iters);
    int status;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
