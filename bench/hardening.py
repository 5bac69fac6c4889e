#!/usr/bin/env python3
"""Issue #18 figures: memory per connection and log volume at descriptor
exhaustion, for any sluice binary (compare a build of main with the branch).

connections: starts `sluice run` with a `tcp` (ndjson) and a `syslog_tcp`
source into a `store` sink (the outside tester's single node: the store's
allocator profile applies), opens N connections to one of them, sends one
line on each and keeps them open and idle, then closes them all. Reports
VmRSS before, while the N connections are open (after every event arrived),
and after they closed (after --settle seconds, then the lowest of the next
--settle seconds). --burst B makes each connection send B bytes of lines
first (so its read buffer grows) before its idle line.

descriptors: starts `sluice run` under `ulimit -n NOFILE` with a `tcp`
source, opens more connections than descriptors and holds them for
--seconds; reports the log's growth in bytes per minute while exhausted,
the process's CPU seconds in that window, and whether the API answered
after the connections closed.

usage: bench/hardening.py connections [--bin BIN] [--n 10000] [--kind tcp|syslog_tcp] [--settle 10] [--burst BYTES]
       bench/hardening.py descriptors [--bin BIN] [--nofile 256] [--extra 100] [--seconds 20]
Prints one JSON object.
"""
import argparse, json, os, resource, shutil, socket, subprocess, sys, tempfile, time, urllib.request
from benchlib import cpu_seconds, free_port, node_stats, rss_bytes, toml, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "sluice")


def rss_mb(pid):
    return rss_bytes(pid) / (1 << 20)


cpu_s = cpu_seconds


def stats(api):
    return node_stats(api, 10)


def events_in(api, sid):
    for s in stats(api)["pipelines"]["main"]["plugins"]["sources"]:
        if s["id"] == sid:
            return s["events"]["in"]
    return 0


def write_config(cfg, d, api, source, sinks, main=None):
    """One pipeline `main` (keys `main`): source `in`, the `sinks` by id."""
    tables = {"node": {"data_dir": f"{d}/data"}, "api": {"address": f"127.0.0.1:{api}"}}
    if main:
        tables["pipelines.main"] = main
    tables["pipelines.main.sources.in"] = source
    tables.update({f"pipelines.main.sinks.{k}": v for k, v in sinks.items()})
    with open(cfg, "w") as f:
        f.write(toml(tables))


def connections(a):
    d = tempfile.mkdtemp(prefix="sluice-hardening-")
    api, port = free_port(), free_port()
    cfg = os.path.join(d, "c.toml")
    write_config(cfg, d, api, {"type": a.kind, "address": f"127.0.0.1:{port}"}, {"store": {"type": "store"}},
                 {"batch_delay": "10ms"})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < a.n + 100:
        sys.exit(f"the open-file hard limit ({hard}) is below --n {a.n} + 100")
    log = open(os.path.join(d, "log"), "w")
    p = subprocess.Popen([a.bin, "run", cfg], stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_port(port, p, 60)
        wait_port(api, p, 60)
        time.sleep(3)
        before = rss_mb(p.pid)
        socks = []
        t0 = time.time()
        lines_per_conn = 1
        for i in range(a.n):
            s = socket.create_connection(("127.0.0.1", port))
            line = f'{{"message":"hello {i}"}}\n' if a.kind == "tcp" else f"<14>hello {i}\n"
            if a.burst:
                # A burst first (the read buffer grows), then the line.
                lines_per_conn = 1 + a.burst // len(line)
                s.sendall(line.encode() * (lines_per_conn - 1))
            s.sendall(line.encode())
            socks.append(s)
        end = time.time() + 300
        while events_in(api, "in") < a.n * lines_per_conn and time.time() < end:
            time.sleep(0.2)
        arrived = events_in(api, "in")
        time.sleep(2)
        during = max(rss_mb(p.pid) for _ in range(5) if not time.sleep(0.2))
        opened_s = time.time() - t0
        for s in socks:
            s.close()
        socks.clear()
        time.sleep(a.settle)
        samples = []
        for _ in range(a.settle * 2):
            samples.append(rss_mb(p.pid))
            time.sleep(0.5)
        after = min(samples)
        out = {
            "binary": a.bin, "kind": a.kind, "connections": a.n, "events_arrived": arrived,
            "rss_before_mb": round(before, 1), "rss_open_mb": round(during, 1),
            "rss_after_close_mb": round(after, 1),
            "kb_per_connection": round((during - before) * 1024 / a.n, 1),
            "open_seconds": round(opened_s, 1), "settle_s": a.settle, "burst_bytes": a.burst,
            "MIMALLOC_PURGE_DELAY": os.environ.get("MIMALLOC_PURGE_DELAY"),
        }
    finally:
        p.terminate()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
        shutil.rmtree(d, ignore_errors=True)
    print(json.dumps(out))


def descriptors(a):
    d = tempfile.mkdtemp(prefix="sluice-hardening-")
    api, port = free_port(), free_port()
    cfg = os.path.join(d, "c.toml")
    write_config(cfg, d, api, {"type": "tcp", "address": f"127.0.0.1:{port}"}, {"out": {"type": "blackhole"}})
    logpath = os.path.join(d, "log")
    log = open(logpath, "w")
    p = subprocess.Popen(["bash", "-c", f'ulimit -n {a.nofile} && exec "$0" run "$1"', a.bin, cfg],
                         stdout=subprocess.DEVNULL, stderr=log, env=dict(os.environ, SLUICE_LOG="info"))
    try:
        wait_port(port, p, 60)
        wait_port(api, p, 60)
        time.sleep(2)
        base = len(os.listdir(f"/proc/{p.pid}/fd"))
        n = a.nofile - base + a.extra
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
        time.sleep(1)
        b0, c0, t0 = os.path.getsize(logpath), cpu_s(p.pid), time.time()
        time.sleep(a.seconds)
        b1, c1, t1 = os.path.getsize(logpath), cpu_s(p.pid), time.time()
        for s in socks:
            s.close()
        recovered = None
        end = time.time() + 30
        while time.time() < end:
            try:
                stats(api)
                recovered = round(time.time() - t1, 2)
                break
            except OSError:
                time.sleep(0.2)
        minutes = (t1 - t0) / 60
        out = {
            "binary": a.bin, "nofile": a.nofile, "connections": n, "seconds": round(t1 - t0, 1),
            "log_bytes_per_minute": round((b1 - b0) / minutes), "cpu_seconds": round(c1 - c0, 2),
            "cpu_share_of_one_core": round((c1 - c0) / (t1 - t0), 3),
            "api_answered_after_close_s": recovered,
        }
    finally:
        p.terminate()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
        shutil.rmtree(d, ignore_errors=True)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("connections")
    c.add_argument("--bin", default=BIN)
    c.add_argument("--n", type=int, default=10000)
    c.add_argument("--kind", choices=["tcp", "syslog_tcp"], default="tcp")
    c.add_argument("--settle", type=int, default=10)
    c.add_argument("--burst", type=int, default=0, help="bytes each connection sends before going idle")
    f = sub.add_parser("descriptors")
    f.add_argument("--bin", default=BIN)
    f.add_argument("--nofile", type=int, default=256)
    f.add_argument("--extra", type=int, default=100)
    f.add_argument("--seconds", type=int, default=20)
    a = ap.parse_args()
    connections(a) if a.cmd == "connections" else descriptors(a)


if __name__ == "__main__":
    main()
