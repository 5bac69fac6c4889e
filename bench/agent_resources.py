#!/usr/bin/env python3
"""Agent resources while shipping files (issue #4: RSS <= 30 MB and <= 25 % of
one core at 20,000 events/s of 200-byte lines).

Starts a release `sluice run` processor (`sluice` source -> blackhole) and a
`sluice agent` whose `file` source follows a log file, persisted queue (the
disk spool of examples/agent.toml) and `sluice` sink with zstd. A writer in
this script appends 200-byte lines at a fixed rate (in 10 ms slices) for
`--seconds`; the agent's RSS (VmRSS, sampled every 0.5 s, and VmHWM) and CPU
(utime+stime from /proc) over the writing window are reported, and the run
checks that the processor received exactly every line.

usage: bench/agent_resources.py [--rate 20000] [--seconds 60] [--queue persisted|memory]
Prints one JSON object.
"""
import argparse, json, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The process, port and stats helpers are the agent protocol benchmark's.
from agent_protocol import BIN, TOKEN, free_port, proc_cpu, stats, wait_port


def proc_mem(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) / 1024
    return out


def line(seq):
    head = f"2026-11-22T10:00:00.000Z host-17 app[4242]: seq={seq:010d} user=alice action=login status=ok path=/api/v1/items/"
    return (head + "x" * (199 - len(head)) + "\n").encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=20_000)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--queue", choices=["persisted", "memory"], default="persisted")
    args = ap.parse_args()
    total = args.rate * args.seconds
    with tempfile.TemporaryDirectory() as tmp:
        port, papi, aapi = free_port(), free_port(), free_port()
        logs = os.path.join(tmp, "logs"); os.makedirs(logs)
        log = os.path.join(logs, "app.log")
        open(log, "w").close()
        proc_cfg = os.path.join(tmp, "proc.toml")
        open(proc_cfg, "w").write(f"""
[node]
data_dir = "{tmp}/proc-data"
[api]
address = "127.0.0.1:{papi}"
[pipelines.main]
workers = 1
[pipelines.main.sources.agents]
type = "sluice"
address = "127.0.0.1:{port}"
[pipelines.main.sources.agents.tokens.bench]
token = "{TOKEN}"
group = "bench"
[pipelines.main.sinks.out]
type = "blackhole"
""")
        queue = '[pipelines.ship.queue]\ntype = "persisted"\nmax_bytes = "512MiB"\nfsync = "1s"\n' if args.queue == "persisted" else ""
        agent_cfg = os.path.join(tmp, "agent.toml")
        open(agent_cfg, "w").write(f"""
[node]
data_dir = "{tmp}/agent-data"
[api]
address = "127.0.0.1:{aapi}"
[pipelines.ship]
batch_size = 512
batch_delay = "200ms"
workers = 1
{queue}
[pipelines.ship.sources.files]
type = "file"
include = ["{logs}/*.log"]
group = "bench"
[pipelines.ship.sinks.out]
type = "sluice"
receivers = ["127.0.0.1:{port}"]
token = "{TOKEN}"
group = "bench"
compression = "zstd"
""")
        procs = []
        try:
            p = subprocess.Popen([BIN, "run", proc_cfg], stderr=open(os.path.join(tmp, "proc.log"), "w"))
            procs.append(p)
            wait_port(port); wait_port(papi)
            a = subprocess.Popen([BIN, "agent", "--config", agent_cfg], stderr=open(os.path.join(tmp, "agent.log"), "w"))
            procs.append(a)
            wait_port(aapi)
            time.sleep(1)
            idle = proc_mem(a.pid)
            cpu0, t0 = proc_cpu(a.pid), time.time()
            rss, anon = [], []
            seq, next_sample = 0, t0
            with open(log, "ab", buffering=0) as f:
                while seq < total:
                    due = min(total, int((time.time() - t0) * args.rate) + args.rate // 100)
                    if due > seq:
                        f.write(b"".join(line(s) for s in range(seq, due)))
                        seq = due
                    now = time.time()
                    if now >= next_sample:
                        m = proc_mem(a.pid)
                        rss.append(m["VmRSS"]); anon.append(m["RssAnon"]); next_sample = now + 0.5
                    time.sleep(0.01)
            wrote_s = time.time() - t0
            while True:
                got = stats(papi)["pipelines"]["main"]["plugins"]["sources"][0]["events"]["out"]
                if got >= total or time.time() - t0 > wrote_s + 120:
                    break
                time.sleep(0.05)
            cpu = proc_cpu(a.pid) - cpu0
            wall = time.time() - t0
            mem = proc_mem(a.pid)
            rss.sort(); anon.sort()
            print(json.dumps({
                "rate": args.rate, "seconds": args.seconds, "queue": args.queue, "lines": total, "received": got,
                "lost": total - got if got < total else 0,
                "agent_cpu_s": round(cpu, 2), "agent_core_pct": round(100 * cpu / wall, 1),
                "agent_rss_idle_mb": round(idle["VmRSS"], 1), "agent_rss_idle_file_mb": round(idle["RssFile"], 1),
                "agent_rss_anon_p50_mb": round(anon[len(anon) // 2], 1), "agent_rss_anon_max_mb": round(anon[-1], 1),
                "agent_rss_p50_mb": round(rss[len(rss) // 2], 1), "agent_rss_max_mb": round(rss[-1], 1),
                "agent_hwm_mb": round(mem["VmHWM"], 1),
                "agent_us_per_event": round(1e6 * cpu / total, 2),
                "load_avg": os.getloadavg()[0],
            }), flush=True)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()


if __name__ == "__main__":
    main()
