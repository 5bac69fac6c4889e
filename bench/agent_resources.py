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

The agent's pipeline is examples/agent.toml's (batch_size 512, batch_delay
200ms, default workers, `least_loaded`, window 4, zstd) with only the `file`
source. `--set section.key=value` adds or overrides a key of the agent's
`pipeline`, `queue`, `source` or `sink` table (value in TOML syntax), to try
settings without rebuilding; `--env K=V` sets the agent's environment;
`--smaps` prints where the resident memory of the highest sample was (per
mapping, anon vs file-backed, threads by name) to stderr.

usage: bench/agent_resources.py [--rate 20000] [--seconds 60] [--queue persisted|memory]
                                [--set sink.compression_level=3] [--env MIMALLOC_PURGE_DELAY=0] [--smaps]
Prints one JSON object.
"""
import collections
import argparse, json, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The process, port and stats helpers are the agent protocol benchmark's.
from agent_protocol import BIN, TOKEN, free_port, proc_cpu, processor_config, stats, wait_port


def proc_mem(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) / 1024
    return out


def smaps_summary(pid):
    """Resident kB per mapping (largest first), the rollup and threads by name."""
    per, cur = collections.Counter(), None
    with open(f"/proc/{pid}/smaps") as f:
        for l in f:
            p = l.split()
            if p and "-" in p[0] and not p[0].endswith(":"):
                cur = p[5] if len(p) > 5 else "[anon]"
            elif p and p[0] == "Rss:":
                per[cur] += int(p[1])
    roll = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for l in f:
            p = l.split()
            if len(p) >= 3 and p[2] == "kB":
                roll[p[0].rstrip(":")] = int(p[1])
    tasks = os.listdir(f"/proc/{pid}/task")
    names = collections.Counter()
    for t in tasks:
        try:
            names[open(f"/proc/{pid}/task/{t}/comm").read().strip()] += 1
        except OSError:
            pass
    return {"rollup_kb": {k: roll.get(k) for k in ("Rss", "Anonymous", "LazyFree", "Private_Dirty", "Shared_Clean")},
            "top_mappings_kb": per.most_common(8), "threads": len(tasks), "thread_names": dict(names)}


def toml_tables(sets):
    """`section.key=value` pairs by section."""
    out = collections.defaultdict(dict)
    for s in sets:
        k, _, v = s.partition("=")
        sec, _, key = k.partition(".")
        if sec not in ("pipeline", "queue", "source", "sink") or not key or not v:
            sys.exit(f"--set {s}: expected pipeline|queue|source|sink.key=value")
        out[sec][key] = v
    return out


def render(defaults, overrides):
    keys = dict(defaults)
    keys.update(overrides)
    return "".join(f"{k} = {v}\n" for k, v in keys.items())


def line(seq):
    head = f"2026-11-22T10:00:00.000Z host-17 app[4242]: seq={seq:010d} user=alice action=login status=ok path=/api/v1/items/"
    return (head + "x" * (199 - len(head)) + "\n").encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=20_000)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--queue", choices=["persisted", "memory"], default="persisted")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--smaps", action="store_true")
    ap.add_argument("--wrap", default="", help="a command prefix for the agent, e.g. 'heaptrack -o /tmp/agent'")
    args = ap.parse_args()
    sets = toml_tables(args.set)
    total = args.rate * args.seconds
    with tempfile.TemporaryDirectory() as tmp:
        port, papi, aapi = free_port(), free_port(), free_port()
        logs = os.path.join(tmp, "logs"); os.makedirs(logs)
        log = os.path.join(logs, "app.log")
        open(log, "w").close()
        proc_cfg = os.path.join(tmp, "proc.toml")
        open(proc_cfg, "w").write(processor_config(tmp, papi, port, {"workers": 1}))
        queue = {"type": '"persisted"', "max_bytes": '"512MiB"', "fsync": '"1s"'} if args.queue == "persisted" else {"type": '"memory"'}
        agent_cfg = os.path.join(tmp, "agent.toml")
        open(agent_cfg, "w").write(f"""
[node]
data_dir = "{tmp}/agent-data"
[api]
address = "127.0.0.1:{aapi}"
[pipelines.ship]
{render({"batch_size": "512", "batch_delay": '"200ms"'}, sets["pipeline"])}
[pipelines.ship.queue]
{render(queue, sets["queue"])}
[pipelines.ship.sources.files]
{render({"type": '"file"', "include": f'["{logs}/*.log"]', "group": '"bench"'}, sets["source"])}
[pipelines.ship.sinks.out]
{render({"type": '"sluice"', "receivers": f'["127.0.0.1:{port}"]', "algorithm": '"least_loaded"', "token": f'"{TOKEN}"', "group": '"bench"', "compression": '"zstd"', "window": "4"}, sets["sink"])}
""")
        env = dict(os.environ)
        for kv in args.env:
            k, _, v = kv.partition("=")
            env[k] = v
        procs = []
        try:
            p = subprocess.Popen([BIN, "run", proc_cfg], stderr=open(os.path.join(tmp, "proc.log"), "w"))
            procs.append(p)
            wait_port(port); wait_port(papi)
            a = subprocess.Popen(args.wrap.split() + [BIN, "agent", "--config", agent_cfg], env=env, stderr=open(os.path.join(tmp, "agent.log"), "w"))
            procs.append(a)
            wait_port(aapi)
            time.sleep(1)
            idle = proc_mem(a.pid)
            idle_threads = len(os.listdir(f"/proc/{a.pid}/task"))
            cpu0, t0 = proc_cpu(a.pid), time.time()
            rss, anon, filed, peak = [], [], [], (0, None)
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
                        rss.append(m["VmRSS"]); anon.append(m["RssAnon"]); filed.append(m["RssFile"]); next_sample = now + 0.5
                        if args.smaps and m["VmRSS"] > peak[0]:
                            peak = (m["VmRSS"], smaps_summary(a.pid))
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
            if args.smaps:
                print(json.dumps({"anon_mb_every_0_5s": [round(x) for x in anon]}), file=sys.stderr, flush=True)
            rss.sort(); anon.sort(); filed.sort()
            if args.smaps:
                print(json.dumps({"peak_rss_mb": round(peak[0], 1), **(peak[1] or {})}), file=sys.stderr, flush=True)
            print(json.dumps({
                "rate": args.rate, "seconds": args.seconds, "queue": args.queue, "lines": total, "received": got,
                "lost": total - got if got < total else 0,
                "agent_cpu_s": round(cpu, 2), "agent_core_pct": round(100 * cpu / wall, 1),
                "agent_rss_idle_mb": round(idle["VmRSS"], 1), "agent_rss_idle_file_mb": round(idle["RssFile"], 1),
                "agent_threads_idle": idle_threads,
                "agent_rss_file_p50_mb": round(filed[len(filed) // 2], 1), "agent_rss_file_max_mb": round(filed[-1], 1),
                "agent_rss_anon_p50_mb": round(anon[len(anon) // 2], 1), "agent_rss_anon_max_mb": round(anon[-1], 1),
                "agent_rss_p50_mb": round(rss[len(rss) // 2], 1), "agent_rss_max_mb": round(rss[-1], 1),
                "agent_hwm_mb": round(mem["VmHWM"], 1),
                "agent_us_per_event": round(1e6 * cpu / total, 2),
                "load_avg": os.getloadavg()[0],
                "settings": args.set + args.env,
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
