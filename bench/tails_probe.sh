#!/usr/bin/env bash
# Benchmark (not a test): `wulf sweep --tails` against an independent probe.
# A Python TCP loopback ping-pong of 8-byte messages times each round trip
# alone (time.perf_counter_ns) and prints half its p50 and p99; wulf's tail
# pass prints the same figures of its own single round trips. Interleaved
# ROUNDS times (default 3). They should agree within the machine's noise
# (the tail histogram once saturated every sample: p50 1 ns).
# Usage: bench/tails_probe.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
WULF=${WULF:-target/release/wulf}
[ -x "$WULF" ] || cargo build --release --quiet
probe=$(mktemp --suffix .py)
trap 'rm -f "$probe"' EXIT
cat >"$probe" <<'PY'
import socket, threading, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
def echo():
    c, _ = srv.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(8)
        if not d: break
        c.sendall(d)
threading.Thread(target=echo, daemon=True).start()
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
msg = b"x" * 8; rts = []
for _ in range(200): s.sendall(msg); s.recv(8)
for _ in range(3000):
    t = time.perf_counter_ns(); s.sendall(msg); s.recv(8); rts.append(time.perf_counter_ns() - t)
rts.sort()
print(f"probe  8 B: half round trip p50 {rts[len(rts)//2]/2000:.2f} us  p99 {rts[int(len(rts)*0.99)]/2000:.2f} us")
PY
for _ in $(seq 1 "$ROUNDS"); do
    python3 "$probe"
    "$WULF" sweep tcp --tails --sizes 8 --budget 0.5s | grep "tails of" | sed 's/^ */wulf   8 B: /'
done
