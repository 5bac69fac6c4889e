#!/usr/bin/env python3
"""Dispatcher vs TCP load balancers in front of the same four processors
(issue #8; the thesis's stages 3 and 5, REFERENCE.md §1 and §3).

Front ends, each in front of the same 4 `sluice run` processors (tcp ndjson
source + `sluice` source with a relay token → memory queue → `cost` filter
capping each processor → file sink):

  sluice-dispatcher  `sluice dispatcher`: tcp ndjson source → per-batch
                     `least_loaded` `sluice` sink to the processors' agent ports
  haproxy-leastconn  HAProxy 2.6, mode tcp, balance leastconn
  haproxy-rr         HAProxy 2.6, mode tcp, balance roundrobin
  nginx-stream       nginx 1.22 stream module, round robin
  pen                pen 0.34 -r (round robin)

Load: `sluice bench gen` (the thesis's 395-byte event with run id and
sequence number) with C connections (the thesis's generators), at the
thesis's rate (1,000/s, 20,000 events) and at saturation (rate 0). Each
processor's output is read back: delivered, lost, duplicates, per-processor
share and its coefficient of variation, throughput (events / time until the
last one arrived). The tcp senders do not get acknowledgements, so these are
the events that made it, not a guarantee.

usage: SLUICE_BIN=... python3 bench/dispatcher.py [--quick] > results.json
needs haproxy, nginx (+ libnginx-mod-stream) and pen (scripts/loadbalancers.sh;
apt-get install haproxy nginx libnginx-mod-stream pen).
"""

import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, toml, wait_port

BIN = os.environ.get("SLUICE_BIN", "target/release/sluice")
RELAY = "bench-relay-token-0123456789abcdef"
COST = os.environ.get("PROC_COST", "500us")  # per event: ≈ 2,000 events/s per processor


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, args, log):
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(log, "w"), env={**os.environ, "SLUICE_LOG": "warn"})
        self.procs.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    def stop_all(self):
        for p in self.procs:
            self.stop(p)


def processor(d, procs, i):
    tcp, agent = free_port(), free_port()
    out = os.path.join(d, f"p{i}.ndjson")
    cfg = os.path.join(d, f"p{i}.toml")
    open(cfg, "w").write(toml({
        "node": {"data_dir": f"{d}/p{i}-data", "shutdown_timeout": "5s"},
        "api": {"address": ""},
        "pipelines.main": {"workers": 1, "batch_size": 256, "batch_delay": "10ms"},
        "pipelines.main.queue": {"type": "memory", "max_events": 8192},
        "pipelines.main.sources.tcp": {"type": "tcp", "address": f"127.0.0.1:{tcp}", "format": "ndjson"},
        "pipelines.main.sources.agents": {"type": "sluice", "address": f"127.0.0.1:{agent}"},
        "pipelines.main.sources.agents.tokens.dispatchers": {"token": RELAY, "group": "bench", "relay": True},
        "[pipelines.main.filters]": {"type": "cost", "sleep_per_event": COST},
        "pipelines.main.sinks.out": {"type": "file", "path": out},
    }))
    p = procs.start([BIN, "run", cfg], os.path.join(d, f"p{i}.log"))
    wait_port(tcp, p)
    wait_port(agent, p)
    return {"tcp": tcp, "agent": agent, "out": out}


def front_sluice(d, procs, backends):
    port = free_port()
    cfg = os.path.join(d, "dispatcher.toml")
    open(cfg, "w").write(toml({
        "node": {"data_dir": f"{d}/disp-data", "shutdown_timeout": "5s"},
        "api": {"address": ""},
        "pipelines.dispatch": {"workers": 1, "batch_size": 256, "batch_delay": "5ms"},
        "pipelines.dispatch.queue": {"type": "memory", "max_events": 16384},
        "pipelines.dispatch.sources.tcp": {"type": "tcp", "address": f"127.0.0.1:{port}", "format": "ndjson"},
        "pipelines.dispatch.sinks.processors": {
            "type": "sluice", "receivers": [f"127.0.0.1:{b['agent']}" for b in backends],
            "algorithm": "least_loaded", "token": RELAY, "group": "bench", "compression": "lz4",
        },
    }))
    p = procs.start([BIN, "dispatcher", "--config", cfg], os.path.join(d, "dispatcher.log"))
    wait_port(port, p)
    return port, p


def front_haproxy(d, procs, backends, balance):
    port = free_port()
    cfg = os.path.join(d, f"haproxy-{balance}.cfg")
    servers = "".join(f"  server b{i} 127.0.0.1:{b['tcp']}\n" for i, b in enumerate(backends))
    open(cfg, "w").write(f"""global
  maxconn 2000
defaults
  mode tcp
  timeout connect 2s
  timeout client 60s
  timeout server 60s
frontend fe
  bind 127.0.0.1:{port}
  default_backend be
backend be
  balance {balance}
{servers}""")
    p = procs.start(["haproxy", "-db", "-f", cfg], os.path.join(d, f"haproxy-{balance}.log"))
    wait_port(port, p)
    return port, p


def front_nginx(d, procs, backends):
    port = free_port()
    cfg = os.path.join(d, "nginx.conf")
    servers = "".join(f"    server 127.0.0.1:{b['tcp']};\n" for b in backends)
    open(cfg, "w").write(f"""load_module /usr/lib/nginx/modules/ngx_stream_module.so;
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/nginx-error.log warn;
events {{ worker_connections 1024; }}
stream {{
  upstream be {{
{servers}  }}
  server {{ listen 127.0.0.1:{port}; proxy_pass be; }}
}}
""")
    p = procs.start(["nginx", "-e", f"{d}/nginx-error.log", "-c", cfg], os.path.join(d, "nginx.log"))
    wait_port(port, p)
    return port, p


def front_pen(d, procs, backends):
    port = free_port()
    args = ["pen", "-r", "-f", f"127.0.0.1:{port}"] + [f"127.0.0.1:{b['tcp']}" for b in backends]
    p = procs.start(args, os.path.join(d, "pen.log"))
    wait_port(port, p)
    return port, p


SEQ = re.compile(rb'"seq":(\d+)')


def count(backends, run):
    tag = f'"run":"{run}"'.encode()
    per, seen = [], {}
    for b in backends:
        n = 0
        try:
            with open(b["out"], "rb") as f:
                for line in f:
                    if tag in line:
                        m = SEQ.search(line)
                        if m:
                            n += 1
                            s = int(m.group(1))
                            seen[s] = seen.get(s, 0) + 1
        except FileNotFoundError:
            pass
        per.append(n)
    return per, seen


def run_case(name, port, backends, total, rate, conns):
    started = time.time()
    g = subprocess.run([BIN, "bench", "gen", "--target", f"tcp://127.0.0.1:{port}", "--template", "thesis",
                        "--count", str(total), "--rate", str(rate), "--connections", str(conns)],
                       capture_output=True, text=True)
    if g.returncode != 0:
        return {"case": name, "error": g.stderr.strip()[-300:]}
    gen = json.loads(g.stdout)  # one JSON document, pretty-printed
    run = gen["run"]
    last, last_n, stable_since = started, -1, time.time()
    while True:
        per, seen = count(backends, run)
        n = len(seen)
        if n != last_n:
            last_n, last, stable_since = n, time.time(), time.time()
        if n >= total or time.time() - stable_since > 5:
            break
        time.sleep(0.1)
    elapsed = last - started
    mean = statistics.mean(per)
    cv = statistics.pstdev(per) / mean if mean else 0.0
    return {
        "case": name, "connections": conns, "offered_rate": rate, "events": total,
        "delivered": len(seen), "lost": total - len(seen), "duplicates": sum(c - 1 for c in seen.values()),
        "throughput": round(len(seen) / elapsed) if elapsed > 0 else 0,
        "seconds": round(elapsed, 2), "sender_seconds": gen["seconds"],
        "shares_pct": [round(100 * p / max(1, sum(per)), 1) for p in per], "cv": round(cv, 3),
    }


def main():
    quick = "--quick" in sys.argv
    d = tempfile.mkdtemp(prefix="sluice-bench-dispatch-")
    procs = Procs()
    results = []
    try:
        backends = [processor(d, procs, i) for i in range(4)]
        fronts = [
            ("sluice-dispatcher", lambda: front_sluice(d, procs, backends)),
            ("haproxy-leastconn", lambda: front_haproxy(d, procs, backends, "leastconn")),
            ("haproxy-rr", lambda: front_haproxy(d, procs, backends, "roundrobin")),
            ("nginx-stream", lambda: front_nginx(d, procs, backends)),
            ("pen", lambda: front_pen(d, procs, backends)),
        ]
        loads = [(20000, 1000), (60000, 0)] if not quick else [(5000, 1000), (20000, 0)]
        for name, start in fronts:
            port, p = start()
            for conns in (2, 8):
                for total, rate in loads:
                    r = run_case(name, port, backends, total, rate, conns)
                    print(json.dumps(r), flush=True)
                    results.append(r)
                    time.sleep(1)
            procs.stop(p)
    finally:
        procs.stop_all()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
