/* Plain C AF_PACKET ping-pong: the kernel's floor for raw frames, the
 * reference bench/lean_vs_c.sh measures wulf's raw and xdp against
 * (issue 34). One blocking sendto and one blocking recv per message and
 * side, no protocol, no loss recovery.
 *
 *   server IFACE ITERS SIZE           answers every frame to its sender
 *   client IFACE PEER-MAC ITERS SIZE  prints the median one-way ns (RTT/2)
 *
 * EtherType 0x88B6 (not wulf's 0x88B5): never mistaken for wulf's frames.
 * Every receive has a 2 s timeout: a lost frame ends the run (exit 3). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETYPE 0x88B6

static int cmp(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* LEAN_RING=1: receive through a TPACKET_V2 ring and ppoll, as wulf raw
 * does, instead of recvfrom: what the ring itself costs in the kernel. */
static unsigned char *ring;
static unsigned ring_next, ring_slots;
#define RING_SLOT 2048
static long wait_ms = -1;
static int abort_fd = -1;
/* LEAN_EPOLL=1: the ring's wait is epoll_wait on a set made once (the
 * socket, and the abort pipe with LEAN_RING=2) instead of ppoll. */
static int epoll_fd = -1;
/* LEAN_TRY=1 (no ring): a non-blocking recv first, the blocking recvfrom
 * only when it found nothing (what a link whose protocol looks before it
 * waits pays). */
static int try_first, use_mmsg;
static long rcvtimeo_ms = 2000;

static int ring_setup(int fd) {
  int v = TPACKET_V2;
  /* LEAN_RING_BLOCKS: blocks of 64 KiB (default 64: 4 MiB, wulf's). */
  unsigned blocks = getenv("LEAN_RING_BLOCKS") ? atoi(getenv("LEAN_RING_BLOCKS")) : 64;
  struct tpacket_req req = {65536, blocks, RING_SLOT, blocks * (65536 / RING_SLOT)};
  if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) ||
      setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req)) return -1;
  ring = mmap(NULL, 65536 * (size_t)blocks, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ring_slots = req.tp_frame_nr;
  return ring == MAP_FAILED ? -1 : 0;
}

/* One frame into out (whole, Ethernet header first): its length, or -1. */
static ssize_t rx(int fd, unsigned char *out, size_t cap) {
  long deadline = 0;
  if (!ring) {
    for (;;) {
      struct sockaddr_ll from;
      socklen_t fl = sizeof from;
      if (use_mmsg) {
        /* LEAN_MMSG=1: recvmmsg of up to 32 frames (wulf raw's call),
         * the try with MSG_DONTWAIT, the wait with MSG_WAITFORONE. */
        static unsigned char slots[32][2048];
        struct iovec iov[32];
        struct mmsghdr m[32];
        memset(m, 0, sizeof m);
        for (int i = 0; i < 32; i++) {
          iov[i].iov_base = slots[i];
          iov[i].iov_len = sizeof slots[i];
          m[i].msg_hdr.msg_iov = &iov[i];
          m[i].msg_hdr.msg_iovlen = 1;
        }
        int got = -1;
        if (try_first) got = recvmmsg(fd, m, 32, MSG_DONTWAIT, NULL);
        if (got <= 0) got = recvmmsg(fd, m, 32, MSG_WAITFORONE, NULL);
        if (got <= 0) {
          if (errno == EAGAIN && rcvtimeo_ms < 2000) continue;
          return -1;
        }
        size_t n = m[0].msg_len < cap ? m[0].msg_len : cap;
        memcpy(out, slots[0], n);
        return (ssize_t)n;
      }
      if (try_first) {
        ssize_t n = recv(fd, out, cap, MSG_DONTWAIT);
        if (n >= 0) return n;
      }
      if (wait_ms >= 0) {
        struct pollfd p = {fd, POLLIN, 0};
        struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};
        if (ppoll(&p, 1, &ts, NULL) <= 0) return -1;
      }
      ssize_t n = recvfrom(fd, out, cap, 0, (struct sockaddr *)&from, &fl);
      /* A short LEAN_RCVTIMEO_MS ends a wait early: look again, for at
       * most 2 s in all (as the ring's naps). */
      if (n < 0 && errno == EAGAIN && rcvtimeo_ms < 2000) {
        if (!deadline) deadline = now_ns() + 2000000000L;
        if (now_ns() < deadline) continue;
      }
      if (n < 0 || from.sll_pkttype != PACKET_OUTGOING) return n;
    }
  }
  for (;;) {
    struct tpacket2_hdr *h = (void *)(ring + (size_t)ring_next * RING_SLOT);
    if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) {
      size_t n = h->tp_snaplen < cap ? h->tp_snaplen : cap;
      memcpy(out, (unsigned char *)h + h->tp_mac, n);
      __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
      ring_next = (ring_next + 1) % ring_slots;
      return (ssize_t)n;
    }
    /* LEAN_RING=2: a second descriptor in the wait (wulf's abort pipe). */
    struct pollfd p[2] = {{fd, POLLIN, 0}, {abort_fd, POLLIN, 0}};
    long ms = wait_ms >= 0 ? wait_ms : 2000;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    /* A timeout is only the end of a nap (as wulf's, whose naps end at its
     * resend timer): look again, for at most 2 s in all. */
    if (!deadline) deadline = now_ns() + 2000000000L;
    int rc;
    if (epoll_fd >= 0) {
      struct epoll_event ev[2];
      rc = epoll_wait(epoll_fd, ev, 2, (int)ms);
    } else {
      rc = ppoll(p, abort_fd >= 0 ? 2 : 1, &ts, NULL);
    }
    if (rc < 0 || (rc == 0 && now_ns() > deadline)) return -1;
  }
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: server IFACE ITERS SIZE | client IFACE PEER-MAC ITERS SIZE\n");
    return 2;
  }
  int client = strcmp(argv[1], "client") == 0;
  /* LEAN_SLACK_NS: this thread's timer slack (wulf's links take 4 ms). */
  if (getenv("LEAN_SLACK_NS")) prctl(PR_SET_TIMERSLACK, atol(getenv("LEAN_SLACK_NS")), 0, 0, 0);
  const char *w = getenv("LEAN_PPOLL_MS");
  wait_ms = w ? atol(w) : -1;
  int iters = atoi(argv[client ? 4 : 3]);
  int size = atoi(argv[client ? 5 : 4]);
  if (size < 1 || size > 1486 || iters < 1) {
    fprintf(stderr, "size 1..1486 and iters >= 1\n");
    return 2;
  }
  int fd = socket(AF_PACKET, SOCK_RAW, htons(ETYPE));
  if (fd < 0) { perror("socket"); return 1; }
  struct sockaddr_ll a = {0};
  a.sll_family = AF_PACKET;
  a.sll_protocol = htons(ETYPE);
  a.sll_ifindex = if_nametoindex(argv[2]);
  a.sll_halen = 6;
  if (getenv("LEAN_RING") && ring_setup(fd)) { perror("ring"); return 1; }
  if (getenv("LEAN_RING") && atoi(getenv("LEAN_RING")) == 2) {
    int pfd[2];
    if (pipe(pfd)) { perror("pipe"); return 1; }
    abort_fd = pfd[0];
  }
  try_first = getenv("LEAN_TRY") != NULL;
  use_mmsg = getenv("LEAN_MMSG") != NULL;
  if (getenv("LEAN_EPOLL")) {
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_fd = epoll_create1(0);
    ev.data.fd = fd;
    if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev)) { perror("epoll"); return 1; }
    ev.data.fd = abort_fd;
    if (abort_fd >= 0 && epoll_ctl(epoll_fd, EPOLL_CTL_ADD, abort_fd, &ev)) { perror("epoll"); return 1; }
  }
  if (!a.sll_ifindex || bind(fd, (struct sockaddr *)&a, sizeof a)) { perror("bind"); return 1; }
  /* LEAN_RCVTIMEO_MS: the receive timeout (default 2 s); a short one is
   * what a link that wakes to look at its abort pipe would set. */
  rcvtimeo_ms = getenv("LEAN_RCVTIMEO_MS") ? atol(getenv("LEAN_RCVTIMEO_MS")) : 2000;
  struct timeval tv = {rcvtimeo_ms / 1000, (rcvtimeo_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  unsigned char buf[2048];
  /* LEAN_NOPAD=1: frames shorter than 60 bytes (wulf raw sends 30 + its
   * payload bytes, unpadded). */
  int frame = (14 + size < 60 && !getenv("LEAN_NOPAD")) ? 60 : 14 + size;
  if (!client) {
    for (int i = 0; i < iters; i++) {
      ssize_t n = rx(fd, buf, sizeof buf);
      if (n < 0) return 3;
      memcpy(a.sll_addr, buf + 6, 6);
      if (sendto(fd, buf, n, 0, (struct sockaddr *)&a, sizeof a) < 0) { perror("sendto"); return 1; }
    }
    return 0;
  }
  if (sscanf(argv[3], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &a.sll_addr[0], &a.sll_addr[1],
             &a.sll_addr[2], &a.sll_addr[3], &a.sll_addr[4], &a.sll_addr[5]) != 6) {
    fprintf(stderr, "bad MAC\n");
    return 2;
  }
  memset(buf, 0x5a, sizeof buf);
  /* SOCK_RAW sends whole frames: destination, source (filled by us), type. */
  memcpy(buf, a.sll_addr, 6);
  memset(buf + 6, 0, 6);
  buf[12] = ETYPE >> 8;
  buf[13] = ETYPE & 0xff;
  long *rtt = malloc(sizeof(long) * iters);
  unsigned char in[2048];
  for (int i = 0; i < iters; i++) {
    long t0 = now_ns();
    if (sendto(fd, buf, frame, 0, (struct sockaddr *)&a, sizeof a) < 0) { perror("sendto"); return 1; }
    if (rx(fd, in, sizeof in) < 0) return 3;
    rtt[i] = now_ns() - t0;
  }
  qsort(rtt, iters, sizeof(long), cmp);
  printf("%ld\n", rtt[iters / 2] / 2);
  return 0;
}
