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
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: server IFACE ITERS SIZE | client IFACE PEER-MAC ITERS SIZE\n");
    return 2;
  }
  int client = strcmp(argv[1], "client") == 0;
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
  if (!a.sll_ifindex || bind(fd, (struct sockaddr *)&a, sizeof a)) { perror("bind"); return 1; }
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  unsigned char buf[2048];
  int frame = 14 + size < 60 ? 60 : 14 + size;
  if (!client) {
    for (int i = 0; i < iters; i++) {
      struct sockaddr_ll from;
      socklen_t fl = sizeof from;
      ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
      if (n < 0) return 3;
      if (from.sll_pkttype == PACKET_OUTGOING) { i--; continue; }
      memcpy(a.sll_addr, from.sll_addr, 6);
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
    for (;;) {
      struct sockaddr_ll from;
      socklen_t fl = sizeof from;
      if (recvfrom(fd, in, sizeof in, 0, (struct sockaddr *)&from, &fl) < 0) return 3;
      if (from.sll_pkttype != PACKET_OUTGOING) break;
    }
    rtt[i] = now_ns() - t0;
  }
  qsort(rtt, iters, sizeof(long), cmp);
  printf("%ld\n", rtt[iters / 2] / 2);
  return 0;
}
