#!/usr/bin/env python3
"""Timeline window latency of `htamerge serve`, per zoom, side by side.

    python3 bench/timeline.py DB [--htamerge build/htamerge] [--windows 30]
        [--zooms 1,10,100,1000,10000,100000] [--px 1500]
        [--mode mem: --mode sql:HTAMERGE_TIMELINE_MEMORY_MB=0 ...]

Each mode is a server started with its environment (NAME:VAR=VALUE,...).
All modes answer the same random windows (seeded), interleaved by zoom so
that load on the machine falls on every mode alike: per zoom, mode A's N
windows, then mode B's, ... One fresh connection per request (a browser
reuses one; with TCP_NODELAY this makes no difference here). Per request:
wall time as the client sees it, and the server's own CPU time (utime +
stime from /proc), the number an idle machine approaches. Prints a
markdown table; the first request of each mode (which builds the per-track
state) is reported apart. Loopback only; every request has a timeout.
"""
import argparse
import http.client
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime + stime


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Server:
    def __init__(self, htamerge, db, env):
        e = dict(os.environ)
        e.update(env)
        self.proc = subprocess.Popen([htamerge, "serve", db, "--listen", "127.0.0.1:0"],
                                     stderr=subprocess.PIPE, env=e, text=True)
        deadline = time.time() + 30
        self.port = None
        while time.time() < deadline and self.port is None:
            line = self.proc.stderr.readline()
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if m:
                self.port = int(m.group(1))
        if self.port is None:
            self.stop()
            sys.exit("timeline.py: server did not start")

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        t = time.perf_counter()
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        dt = time.perf_counter() - t
        c.close()
        if r.status != 200:
            sys.exit(f"timeline.py: {path}: HTTP {r.status} {body[:200]!r}")
        return dt, body

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--htamerge", default="build/htamerge")
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--zooms", default="1,10,100,1000,10000,100000")
    ap.add_argument("--px", type=int, default=1500)
    ap.add_argument("--mode", action="append", default=[])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    modes = a.mode or ["mem:", "sql:HTAMERGE_TIMELINE_MEMORY_MB=0"]
    tick = os.sysconf("SC_CLK_TCK")
    servers = {}
    first = {}
    for m in modes:
        name, _, envs = m.partition(":")
        env = dict(kv.split("=", 1) for kv in envs.split(",") if kv)
        s = Server(a.htamerge, a.db, env)
        servers[name] = s
        _, body = s.get("/api/run")
        span = int(re.search(rb'"span_ns":(\d+)', body).group(1))
        c0 = cpu_ticks(s.proc.pid)
        dt, _ = s.get(f"/api/timeline?t0=0&t1={span}&px={a.px}")
        first[name] = (dt, (cpu_ticks(s.proc.pid) - c0) / tick, rss_kb(s.proc.pid))
    rnd = random.Random(a.seed)
    rows = []
    for z in [int(x) for x in a.zooms.split(",")]:
        w = max(1, span // z)
        wins = [rnd.randrange(0, span - w + 1) for _ in range(a.windows)]
        for name, s in servers.items():
            walls, cpus, sent = [], [], []
            for i, t0 in enumerate(wins):
                c0 = cpu_ticks(s.proc.pid)   # nonce: no answer comes from the server's cache
                dt, body = s.get(f"/api/timeline?t0={t0}&t1={t0 + w}&px={a.px}&nonce={z}.{i}")
                cpus.append((cpu_ticks(s.proc.pid) - c0) / tick)
                walls.append(dt)
                sent.append(body.count(b"],[") + 1)
            rows.append((z, name, statistics.mean(cpus) * 1e3, pct(walls, 50) * 1e3, pct(walls, 95) * 1e3,
                         statistics.mean(sent), len(body)))
    print(f"db: {a.db}, px={a.px}, {a.windows} random windows per zoom, fresh connection per request, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| zoom (window = span/z) | mode | server CPU ms (mean) | wall p50 ms | wall p95 ms | ~rows sent | bytes (last) |")
    print("|---|---|---|---|---|---|---|")
    for z, name, cpu, p50, p95, n, nbytes in rows:
        print(f"| 1/{z} | {name} | {cpu:.1f} | {p50:.1f} | {p95:.1f} | {n:.0f} | {nbytes} |")
    print("\n| mode | first request (builds tracks): wall s | CPU s | server RSS after it, MB | RSS at end, MB |")
    print("|---|---|---|---|---|")
    for name, s in servers.items():
        dt, cpu, rss = first[name]
        print(f"| {name} | {dt:.2f} | {cpu:.2f} | {rss / 1024:.0f} | {rss_kb(s.proc.pid) / 1024:.0f} |")
    for s in servers.values():
        s.stop()


if __name__ == "__main__":
    main()
