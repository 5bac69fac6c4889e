#!/usr/bin/env python3
"""A single node's memory at rest (issue #23: ≤ 120 MB idle with the example
config, store open, nothing flowing).

Starts `sluice run` on a copy of examples/single-node.toml (every listener
moved to a free port, data under a temporary directory: the persisted
queue, the embedded store, the file sink), records VmRSS at start, sends
`--events` thesis events as ndjson over its `tcp` source at `--rate` per
second with `sluice bench gen`, waits until the pipeline acknowledged all of
them (the store committed them), then records VmRSS right after the
traffic and every `--every` seconds for `--idle` seconds of nothing
flowing. An idle runtime thread hands its freed memory back at most every
30 s (`lean::collect_when_idle`), so `--idle` should be at least 60.

usage: bench/idle_rss.py [--bin BIN] [--events 30000] [--rate 1000]
                         [--idle 120] [--every 30]
Prints one JSON object: the samples (seconds since the traffic ended, MB)
and the figure to compare with the target, `idle_rss_mb` (the last sample).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = benchlib.ROOT


def config_with_free_ports(text):
    """examples/single-node.toml with each distinct 127.0.0.1:PORT moved to a
    free port (the UDP and TCP syslog listeners share one, as in the file).
    Returns the text and the old → new port map."""
    ports = {}
    for old in sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", text))):
        ports[old] = benchlib.free_port()
    text = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{ports[m.group(1)]}", text)
    return text, ports


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "sluice"))
    ap.add_argument("--events", type=int, default=30_000)
    ap.add_argument("--rate", type=int, default=1_000)
    ap.add_argument("--idle", type=int, default=120)
    ap.add_argument("--every", type=int, default=30)
    a = ap.parse_args()

    with open(os.path.join(ROOT, "examples", "single-node.toml")) as f:
        text, ports = config_with_free_ports(f.read())
    api, tcp = ports["8080"], ports["5170"]
    with tempfile.TemporaryDirectory(prefix="sluice-idle-") as tmp:
        with open(os.path.join(tmp, "single-node.toml"), "w") as f:
            f.write(text)
        # cwd = tmp: data_dir "data" and the file sink's "data/events.ndjson" land there.
        p = subprocess.Popen([a.bin, "run", "single-node.toml"], cwd=tmp, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(tmp, "log"), "w"))
        try:
            benchlib.wait_port(tcp, p)
            benchlib.wait_port(api, p)
            # /metrics answers without a credential on loopback ([api] metrics_auth).
            base = benchlib.wait_api(api, "main")
            start_mb = benchlib.rss_bytes(p.pid) / 2**20
            gen = subprocess.run([a.bin, "bench", "gen", "--target", f"tcp://127.0.0.1:{tcp}", "--template", "thesis",
                                  "--count", str(a.events), "--rate", str(a.rate)],
                                 stdout=subprocess.PIPE, text=True, check=True)
            achieved = round(json.loads(gen.stdout)["achieved_rate"])
            deadline = time.time() + 120
            peak_mb = start_mb
            while benchlib.events_out(api, "main") - base < a.events:
                peak_mb = max(peak_mb, benchlib.rss_bytes(p.pid) / 2**20)
                if time.time() > deadline:
                    sys.exit(f"only {benchlib.events_out(api, 'main') - base} of {a.events} events acknowledged")
                time.sleep(0.1)
            t0 = time.time()
            samples = [(0, round(benchlib.rss_bytes(p.pid) / 2**20, 1))]
            while time.time() - t0 < a.idle:
                time.sleep(min(a.every, a.idle - (time.time() - t0)))
                samples.append((round(time.time() - t0), round(benchlib.rss_bytes(p.pid) / 2**20, 1)))
            print(json.dumps({
                "bin": a.bin, "config": "examples/single-node.toml", "events": a.events, "achieved_rate": achieved,
                "rate": a.rate, "start_rss_mb": round(start_mb, 1), "peak_rss_mb": round(peak_mb, 1),
                "idle_samples_s_mb": samples, "idle_rss_mb": samples[-1][1], "target_mb": 120,
            }))
        finally:
            benchlib.stop(p)


if __name__ == "__main__":
    main()
