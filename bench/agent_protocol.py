#!/usr/bin/env python3
"""Agent protocol benchmarks for BENCHMARKS.md.

Starts a release `sluice run` processor (`sluice` source -> blackhole, memory
queue) and a `sluice agent` (generator of the thesis event with a sequence
number -> `sluice` sink), waits until the processor's source has queued every
event, and reports wall-clock events/s, events per CPU-second of each process
(utime+stime from /proc), and the sink's wire bytes against the raw batch
encoding (compression ratio).

usage: bench/agent_protocol.py [--count N] [--codec zstd|lz4|none ...] [--lines FILE]
  --lines FILE: instead of the generator, the agent reads plain lines over TCP
  sent by `sluice bench gen --template file:FILE` (real logs, e.g. loghub's
  Apache_2k.log, for a realistic compression ratio).
Prints one JSON object per codec.
"""
import argparse, json, os, socket, subprocess, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SLUICE_BIN", os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "sluice"))
from benchlib import cpu_seconds as proc_cpu, free_port, node_stats as stats, toml, wait_port
TOKEN = "bench-token-0123456789abcdef"


def thesis_template():
    path = os.path.join(ROOT, "testdata", "thesis", "event.json")
    ev = json.load(open(path))
    ev["seq"] = 0
    text = json.dumps(ev, separators=(",", ":"))
    return text.replace('"seq":0', '"seq":{seq}')


def processor_config(tmp, api, port, main):
    """The processor: a `sluice` source taking the bench token into a
    blackhole; `main`: the `[pipelines.main]` keys."""
    return toml({
        "node": {"data_dir": f"{tmp}/proc-data"},
        "api": {"address": f"127.0.0.1:{api}"},
        "pipelines.main": main,
        "pipelines.main.sources.agents": {"type": "sluice", "address": f"127.0.0.1:{port}"},
        "pipelines.main.sources.agents.tokens.bench": {"token": TOKEN, "group": "bench"},
        "pipelines.main.sinks.out": {"type": "blackhole"},
    })


def run(codec, count, tmp, lines=None):
    port, papi, aapi, lport = free_port(), free_port(), free_port(), free_port()
    proc_cfg = os.path.join(tmp, f"proc-{codec}.toml")
    open(proc_cfg, "w").write(processor_config(tmp, papi, port, {"batch_size": 512, "workers": 1}))
    tmpl = thesis_template().replace("'", "\\'")
    if lines:
        source = f"""[pipelines.ship.sources.lines]
type = "tcp"
address = "127.0.0.1:{lport}"
format = "lines"
"""
    else:
        source = f"""[pipelines.ship.sources.gen]
type = "generator"
json = true
message = '{tmpl}'
count = {count}
batch_size = 512
"""
    agent_cfg = os.path.join(tmp, f"agent-{codec}.toml")
    open(agent_cfg, "w").write(f"""
[node]
data_dir = "{tmp}/agent-data"
[api]
address = "127.0.0.1:{aapi}"
[pipelines.ship]
batch_size = 512
workers = 1
{source}
[pipelines.ship.sinks.out]
type = "sluice"
receivers = ["127.0.0.1:{port}"]
token = "{TOKEN}"
group = "bench"
compression = "{codec}"
""")
    procs = []
    try:
        p = subprocess.Popen([BIN, "run", proc_cfg], stderr=open(os.path.join(tmp, f"proc-{codec}.log"), "w"))
        procs.append(p)
        wait_port(port); wait_port(papi)
        t0 = time.time()
        a = subprocess.Popen([BIN, "agent", "--config", agent_cfg], stderr=open(os.path.join(tmp, f"agent-{codec}.log"), "w"))
        procs.append(a)
        if lines:
            wait_port(lport)
            subprocess.run([BIN, "bench", "gen", "--target", f"tcp://127.0.0.1:{lport}", "--template", f"file:{lines}",
                            "--count", str(count)], check=True, stdout=subprocess.DEVNULL)
        while True:
            src = stats(papi)["pipelines"]["main"]["plugins"]["sources"][0]
            if src["events"]["out"] >= count:
                break
            if time.time() - t0 > 600:
                raise SystemExit(f"timeout: {src['events']['out']} of {count}")
            time.sleep(0.05)
        wall = time.time() - t0
        cpu_p, cpu_a = proc_cpu(p.pid), proc_cpu(a.pid)
        sink = stats(aapi)["pipelines"]["ship"]["plugins"]["sinks"]
        main = next(s for s in sink if s["type"] == "sluice")
        wire, raw = main["bytes"]["out"], main["counters"].get("raw_bytes", 0)
        return {
            "codec": codec, "input": os.path.basename(lines) if lines else "thesis event (generator)", "events": count, "seconds": round(wall, 2),
            "events_per_s": round(count / wall),
            "agent_cpu_s": round(cpu_a, 2), "agent_events_per_cpu_s": round(count / max(cpu_a, 1e-9)),
            "processor_cpu_s": round(cpu_p, 2), "processor_events_per_cpu_s": round(count / max(cpu_p, 1e-9)),
            "raw_bytes": raw, "wire_bytes": wire, "ratio": round(raw / max(wire, 1), 2),
            "wire_bytes_per_event": round(wire / count, 1),
        }
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--codec", action="append")
    ap.add_argument("--lines")
    args = ap.parse_args()
    for codec in args.codec or ["zstd", "lz4", "none"]:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run(codec, args.count, tmp, args.lines)), flush=True)


if __name__ == "__main__":
    main()
