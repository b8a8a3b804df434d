/* Plain C TCP ping-pong: the kernel's TCP/IP path with nothing of wulf's,
 * the reference bench/lean_vs_c.sh measures against (issue 34). Blocking
 * send and recv, TCP_NODELAY, one message of SIZE bytes each way.
 *
 *   server ADDR PORT ITERS SIZE   answers ITERS messages, then exits
 *   client ADDR PORT ITERS SIZE   prints the median one-way ns (RTT/2)
 *
 * Every receive has a 2 s timeout (exit 3): nothing hangs. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int full(int fd, char *b, int n, int out) {
  for (int d = 0; d < n;) {
    ssize_t r = out ? send(fd, b + d, n - d, 0) : recv(fd, b + d, n - d, 0);
    if (r <= 0) return -1;
    d += r;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: server|client ADDR PORT ITERS SIZE\n");
    return 2;
  }
  int client = strcmp(argv[1], "client") == 0;
  int iters = atoi(argv[4]), size = atoi(argv[5]);
  if (iters < 1 || size < 1 || size > (1 << 20)) return 2;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons(atoi(argv[3]));
  if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) return 2;
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct timeval tv = {2, 0};
  if (!client) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1)) { perror("listen"); return 1; }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int c = accept(fd, NULL, NULL);
    if (c < 0) return 3;
    fd = c;
  } else {
    int tries = 0;
    while (connect(fd, (struct sockaddr *)&a, sizeof a)) {
      if (++tries > 200) { perror("connect"); return 1; }
      close(fd);
      fd = socket(AF_INET, SOCK_STREAM, 0);
      usleep(10000);
    }
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char *buf = calloc(1, size);
  long *rtt = malloc(sizeof(long) * iters);
  for (int i = 0; i < iters; i++) {
    long t0 = now_ns();
    if (client) {
      if (full(fd, buf, size, 1) || full(fd, buf, size, 0)) return 3;
    } else {
      if (full(fd, buf, size, 0) || full(fd, buf, size, 1)) return 3;
    }
    rtt[i] = now_ns() - t0;
  }
  if (client) {
    qsort(rtt, iters, sizeof(long), cmp);
    printf("%ld\n", rtt[iters / 2] / 2);
  }
  return 0;
}
