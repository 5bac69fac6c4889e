#!/usr/bin/env python3
"""Events per CPU-second of the `gelf` source over TCP next to the `tcp`
ndjson source, in one sluice process (issue #21).

Two pipelines, each source -> memory queue -> blackhole: `g` (gelf, TCP,
NUL-delimited) and `n` (tcp, ndjson). Each round sends N copies of the
thesis event (testdata/thesis/event.json) to one of them — as GELF for `g`
(message -> short_message, the other fields as `_` additional fields, the
@timestamp as epoch seconds), as the JSON line for `n` — and waits until the
pipeline's `sluice_pipeline_events_out_total` reaches the count. The
sluice process's CPU (utime+stime from /proc) over the round divides the
events. Rounds alternate gelf / ndjson; the median per source is printed.

Usage: python3 bench/gelf_vs_tcp.py [--bin target/debug/sluice] [--events 200000] [--rounds 3]
"""
import argparse
from benchlib import cpu_seconds, free_port
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def events_out(api, pipeline):
    body = urllib.request.urlopen(f"http://127.0.0.1:{api}/metrics", timeout=5).read().decode()
    key = f'sluice_pipeline_events_out_total{{pipeline="{pipeline}"}} '
    for line in body.splitlines():
        if line.startswith(key):
            return int(float(line[len(key):]))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "sluice"))
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ev = json.load(open(os.path.join(ROOT, "testdata", "thesis", "event.json")))
    line = json.dumps(ev, separators=(",", ":")).encode() + b"\n"
    g = {"version": "1.1", "host": ev["host"], "short_message": ev["message"], "timestamp": 1463561074.737}
    for k, v in ev.items():
        if k not in ("message", "host", "@timestamp"):
            g["_" + k.lstrip("@")] = v
    gelf = json.dumps(g, separators=(",", ":")).encode() + b"\0"
    tmp = tempfile.mkdtemp(prefix="sluice-gelf-bench-")
    api, gp, np_ = free_port(), free_port(), free_port()
    cfg = os.path.join(tmp, "c.toml")
    with open(cfg, "w") as f:
        f.write(f"""
[node]
data_dir = "{tmp}"
[api]
address = "127.0.0.1:{api}"
[pipelines.g.sources.in]
type = "gelf"
mode = "tcp"
address = "127.0.0.1:{gp}"
[pipelines.g.sinks.out]
type = "blackhole"
[pipelines.n.sources.in]
type = "tcp"
address = "127.0.0.1:{np_}"
[pipelines.n.sinks.out]
type = "blackhole"
""")
    p = subprocess.Popen([a.bin, "run", cfg], stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))
    try:
        deadline = time.time() + 30
        while True:
            try:
                events_out(api, "g")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        results = {"gelf": [], "tcp": []}
        sent = {"g": 0, "n": 0}
        for r in range(a.rounds):
            for name, pipe, port, payload in (("gelf", "g", gp, gelf), ("tcp", "n", np_, line)):
                data = payload * a.events
                c0, t0 = cpu_seconds(p.pid), time.time()
                with socket.create_connection(("127.0.0.1", port)) as s:
                    s.sendall(data)
                sent[pipe] += a.events
                while events_out(api, pipe) < sent[pipe]:
                    if time.time() - t0 > 300:
                        raise SystemExit(f"{name}: timed out")
                    time.sleep(0.01)
                cpu, wall = cpu_seconds(p.pid) - c0, time.time() - t0
                results[name].append(a.events / cpu)
                print(f"round {r} {name}: {a.events} events, {cpu:.2f} CPU-s, {wall:.2f} s wall, {a.events / cpu:,.0f} events/CPU-s", flush=True)
        for pipe, want in sent.items():
            got = events_out(api, pipe)
            assert got == want, f"{pipe}: {got} events out of {want}"
        gm, tm = statistics.median(results["gelf"]), statistics.median(results["tcp"])
        print(f"median gelf {gm:,.0f} events/CPU-s, tcp ndjson {tm:,.0f} events/CPU-s, ratio gelf/tcp {gm / tm:.2f}")
        print(f"gelf payload {len(gelf)} bytes, ndjson line {len(line)} bytes")
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
