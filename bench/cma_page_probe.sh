#!/usr/bin/env bash
# The cost of one more page in a process_vm_readv copy, measured without
# wulf (issue 28): cma's steps at page boundaries are named "cma page"
# (src/transport/cma.rs, analysis::causes), and this checks that the step
# is the system call's own. A parent forks a child holding a page-aligned
# buffer; the parent reads SIZE bytes of it with process_vm_readv, in
# blocks of ITER calls (the sizes interleaved in each block), and prints
# the fastest and the median block's time per call for each size: on a
# busy machine the fastest block is the call's own cost. 4096 B span one
# page, 4099 B two, and so on.
#
# usage: bench/cma_page_probe.sh [SIZES] [ITER] [BLOCKS]
#   SIZES  comma-separated byte counts (default 4000,4096,4099,8192,8195)
# Needs cc; reading a child needs the usual ptrace permission (a parent
# may read its child under Yama scope 1).
set -euo pipefail
sizes=${1:-4000,4096,4099,8192,8195}
iter=${2:-20000}
blocks=${3:-31}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/probe.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    long iter = atol(argv[1]), blocks = atol(argv[2]);
    size_t max = 1 << 20;
    char *src;
    if (posix_memalign((void **)&src, 4096, max)) return 1;
    memset(src, 7, max);
    pid_t child = fork();
    if (child == 0) { pause(); _exit(0); }
    char *dst;
    if (posix_memalign((void **)&dst, 4096, max)) return 1;
    memset(dst, 1, max);
    int sizes = argc - 3;
    /* Sizes interleaved within each block, so that drift and other load
       reach every size alike. */
    double *t = calloc((size_t)(blocks * sizes), sizeof(double));
    for (long b = -1; b < blocks; b++) {   /* b = -1: warm-up */
        for (int a = 0; a < sizes; a++) {
            size_t n = strtoul(argv[a + 3], 0, 10);
            struct iovec l = { dst, n }, r = { src, n };
            double t0 = now();
            for (long i = 0; i < iter; i++)
                if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)n) {
                    perror("process_vm_readv"); kill(child, SIGKILL); return 1;
                }
            if (b >= 0) t[a * blocks + b] = (now() - t0) / iter;
        }
    }
    printf("%10s %8s %12s %12s\n", "bytes", "pages", "min ns/call", "median ns");
    for (int a = 0; a < sizes; a++) {
        size_t n = strtoul(argv[a + 3], 0, 10);
        double *ts = t + a * blocks;
        qsort(ts, blocks, sizeof(double), cmp);
        printf("%10zu %8zu %12.0f %12.0f\n", n, (n + 4095) / 4096, ts[0], ts[blocks / 2]);
    }
    kill(child, SIGKILL);
    waitpid(child, 0, 0);
    return 0;
}
C
cc -O2 -o "$dir/probe" "$dir/probe.c"
# shellcheck disable=SC2086
"$dir/probe" "$iter" "$blocks" ${sizes//,/ }
