#!/usr/bin/env python3
"""Soak `wulf serve` with hostile clients while a well-behaved one sweeps.

Usage: bench/serve_soak.py [WULF] [CLIENTS] [CONCURRENT]
       (defaults: target/release/wulf, 1000, 20)

Recreates the real attack on the default server (`wulf serve` with a shared
secret and nothing else: its own 10 s handshake limit):

* HOLDERS idle connections (default 40) that hold handshake places for the
  whole soak and reconnect the moment they are dropped, each from its own
  address among ADDRESSES loopback addresses (default 64, 127.0.2.1 up):
  the lockout of issue 45, where every address holding one place let the
  newest (the client just admitted) be ended;
* CLIENTS hostile clients, CONCURRENT at a time, each bounded to a few
  seconds, from random addresses of the same ADDRESSES: garbage, slowloris
  (one byte every 0.4 s), vanishing mid-handshake, a wrong secret, no
  secret, authenticated clients asking for oversized messages, huge
  timeouts and local-only transports, short idle reconnecters and floods
  of 50 connections at once.

Between them a good client from 127.0.0.1 runs short sweeps, retrying while
the server is busy or refuses it. Gates (each printed with its figure):
every good sweep in at most 3 attempts; the server's RSS at most 64 MiB
above its start; its threads at most 64 at any sample and back to the start
count at the end; no descriptor leak (the start count at the end, once
every handshake deadline has passed).

WULF_SOAK_ADDRESSES and WULF_SOAK_HOLDERS change the spread and the
holders; WULF_SOAK_SERVER_ARGS adds options to the server's command line:
with `--allow 127.0.2.0/24` the good client is locked out, and the soak
must say FAIL (a check of the soak itself).
"""
import hashlib
import hmac
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

WULF = sys.argv[1] if len(sys.argv) > 1 else "target/release/wulf"
CLIENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
CONCURRENT = int(sys.argv[3]) if len(sys.argv) > 3 else 20
SECRET = "soak-secret-" + os.urandom(8).hex()
HOST = "127.0.0.1"


def proof(role, own, other):
    msg = b"".join(p.encode() + b"\0" for p in (role, own, other))
    return hmac.new(SECRET.encode(), msg, hashlib.sha256).hexdigest()


def proc_stats(pid):
    status = open(f"/proc/{pid}/status").read()
    rss = int(next(l.split()[1] for l in status.splitlines() if l.startswith("VmRSS")))
    threads = int(next(l.split()[1] for l in status.splitlines() if l.startswith("Threads")))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, threads, fds


ADDRESSES = int(os.environ.get("WULF_SOAK_ADDRESSES", "64"))
HOLDERS = int(os.environ.get("WULF_SOAK_HOLDERS", "40"))
HOSTILE_SOURCES = [f"127.0.{2 + k // 250}.{1 + k % 250}" for k in range(ADDRESSES)]
MAX_ATTEMPTS = 3
MAX_RSS_GROWTH_KB = 64 * 1024
MAX_THREADS = 64
HANDSHAKE_LIMIT_S = 10  # the server's default --max-handshake


def conn(port, source=None):
    s = socket.create_connection((HOST, port), timeout=5,
                                 source_address=(source or random.choice(HOSTILE_SOURCES), 0))
    s.settimeout(5)
    return s


def line(f):
    text = f.readline()
    return json.loads(text) if text else None


def handshake(s, secret_ok=True, with_proof=True):
    f = s.makefile("rw")
    hello = line(f)
    if hello is None:
        return None, None
    f.write(json.dumps(hello) + "\n"); f.flush()
    ch = line(f)
    nonce = os.urandom(8).hex()
    p = None
    if with_proof:
        p = proof("wulf-client", nonce, ch["nonce"]) if secret_ok else "00" * 32
    f.write(json.dumps({"cmd": "auth", "nonce": nonce, "proof": p}) + "\n"); f.flush()
    return f, line(f)


def setup(f, transport="tcp", max_bytes=1024, timeout_ms=10000):
    f.write(json.dumps({"cmd": "setup", "transport": transport,
                        "channel": {"sndbuf_bytes": None, "rcvbuf_bytes": None, "nodelay": True,
                                    "ipv6": False, "timeout_ms": timeout_ms},
                        "max_bytes": max_bytes, "nocache": False, "offset_bytes": 0,
                        "cpu": None}) + "\n")
    f.flush()
    return line(f)


def hostile(port, kind):
    try:
        s = conn(port)
        if kind == "garbage":
            s.sendall(os.urandom(random.randint(1, 4096)))
        elif kind == "slowloris":
            for _ in range(8):
                s.sendall(b"{")
                time.sleep(0.4)
        elif kind == "vanish":
            s.recv(100)
        elif kind == "wrong-secret":
            handshake(s, secret_ok=False)
        elif kind == "no-secret":
            handshake(s, with_proof=False)
        elif kind == "oversize":
            f, w = handshake(s)
            if w and w.get("reply") == "welcome":
                setup(f, max_bytes=1 << 40)
        elif kind == "huge-timeout":
            f, w = handshake(s)
            if w and w.get("reply") == "welcome":
                setup(f, timeout_ms=10**12)
        elif kind == "idle-reconnect":
            # Hold a place; when dropped, come back at once (bounded: 4 s).
            end = time.time() + 4
            while time.time() < end:
                s.settimeout(max(0.05, end - time.time()))
                try:
                    if s.recv(4096) == b"":
                        s.close()
                        s = conn(port)
                except socket.timeout:
                    break
        elif kind == "flood":
            many = [conn(port) for _ in range(50)]
            time.sleep(0.5)
            for m in many:
                m.close()
        elif kind == "local-only":
            f, w = handshake(s)
            if w and w.get("reply") == "welcome":
                r = setup(f, transport="shm")
                # Loopback clients may use shm: vanish while it waits.
                _ = r
        s.close()
    except Exception:  # a hostile client's own failure (its connection ended) is no finding
        pass


def holder(port, source, stop):
    """Hold a handshake place idle until `stop`, reconnecting at once when
    dropped (bounded: the soak's end)."""
    while not stop.is_set():
        try:
            s = conn(port, source)
            s.settimeout(0.2)
            while not stop.is_set():
                try:
                    if s.recv(4096) == b"":
                        break
                except socket.timeout:
                    continue
            s.close()
        except Exception:  # refused or reset: come back at once, as the attacker does
            time.sleep(0.01)


def main():
    d = tempfile.mkdtemp()
    secret_file = os.path.join(d, "secret")
    with open(secret_file, "w") as fh:
        fh.write(SECRET + "\n")
    os.chmod(secret_file, 0o600)
    server = subprocess.Popen([WULF, "serve", "--bind", HOST, "--port", "0", "--announce",
                               "--secret-file", secret_file]
                              + os.environ.get("WULF_SOAK_SERVER_ARGS", "").split(),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(server.stdout.readline().split()[1])
    time.sleep(0.3)
    start = proc_stats(server.pid)
    samples = [(0,) + start]
    kinds = ["garbage", "slowloris", "vanish", "wrong-secret", "no-secret", "oversize",
             "huge-timeout", "local-only", "idle-reconnect", "flood"]
    good = {"ok": 0, "failed": 0, "attempts": 0, "most": 0, "errors": []}
    stop = threading.Event()

    def good_client():
        while not stop.is_set():
            for attempt in range(60):
                good["attempts"] += 1
                o = subprocess.run([WULF, "sweep", "tcp", "--peer", f"{HOST}:{port}",
                                    "--sizes", "1,1Ki", "--budget", "300ms", "--quiet",
                                    "--timeout", "5s", "--secret-file", secret_file],
                                   capture_output=True, text=True)
                if o.returncode == 0:
                    good["ok"] += 1
                    good["most"] = max(good["most"], attempt + 1)
                    break
                if ("busy" in o.stderr or "closed the connection before greeting" in o.stderr
                        or "refused this connection" in o.stderr):
                    time.sleep(0.2)
                    continue
                good["failed"] += 1
                good["errors"].append(o.stderr.strip()[-200:])
                break
            else:
                good["failed"] += 1
                good["errors"].append("never admitted in 60 attempts")

    holding = threading.Event()
    holders = [threading.Thread(target=holder, args=(port, HOSTILE_SOURCES[k % ADDRESSES], holding))
               for k in range(HOLDERS)]
    for h in holders:
        h.start()
    time.sleep(0.5)
    gt = threading.Thread(target=good_client)
    gt.start()
    t0 = time.time()
    sem = threading.Semaphore(CONCURRENT)
    threads = []
    for i in range(CLIENTS):
        sem.acquire()
        kind = kinds[i % len(kinds)]

        def run(k=kind):
            try:
                hostile(port, k)
            finally:
                sem.release()
        t = threading.Thread(target=run)
        t.start()
        threads.append(t)
        if (i + 1) % 100 == 0:
            samples.append((i + 1,) + proc_stats(server.pid))
    for t in threads:
        t.join()
    stop.set()
    gt.join()
    holding.set()
    for h in holders:
        h.join()
    time.sleep(HANDSHAKE_LIMIT_S + 1)  # every handshake deadline has passed
    end = proc_stats(server.pid)
    samples.append((CLIENTS, ) + end)
    wall = time.time() - t0
    server.kill()
    server.wait()
    print(f"{CLIENTS} hostile clients ({CONCURRENT} at a time, {len(kinds)} kinds) and "
          f"{HOLDERS} reconnecting holders, from {ADDRESSES} addresses, in {wall:.1f} s")
    print(f"good sweeps: {good['ok']} completed, {good['failed']} failed, "
          f"{good['attempts']} attempts, at most {good['most']} for one sweep")
    for e in good["errors"][:5]:
        print("  error:", e)
    print("clients  rss_kB  threads  fds")
    for c, rss, th, fds in samples:
        print(f"{c:7d} {rss:7d} {th:8d} {fds:4d}")
    most_rss = max(x[1] for x in samples)
    most_threads = max(x[2] for x in samples)
    gates = [
        ("good sweeps completed, none failed", good["ok"] > 0 and good["failed"] == 0,
         f"{good['ok']} ok, {good['failed']} failed"),
        (f"attempts per sweep <= {MAX_ATTEMPTS}", good["most"] <= MAX_ATTEMPTS, f"{good['most']}"),
        (f"rss growth <= {MAX_RSS_GROWTH_KB} kB", most_rss - start[0] <= MAX_RSS_GROWTH_KB,
         f"{most_rss - start[0]} kB (start {start[0]}, most {most_rss})"),
        (f"threads <= {MAX_THREADS}, back to start", most_threads <= MAX_THREADS and end[1] == start[1],
         f"most {most_threads}, start {start[1]}, end {end[1]}"),
        ("fds back to start", end[2] == start[2], f"start {start[2]}, end {end[2]}"),
    ]
    for name, passed, figure in gates:
        print(f"{'ok  ' if passed else 'FAIL'} {name}: {figure}")
    ok = all(g[1] for g in gates)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


main()
