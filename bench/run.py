#!/usr/bin/env python3
"""Pipeline throughput benchmarks for BENCHMARKS.md.

Starts the release `sluice` with a case's config, offers load with
`sluice bench gen`, waits until the pipeline has acknowledged every event
(quiescence; a timeout reports the missing ones), and reports:
  - events per CPU-second consumed by sluice (utime+stime of the sluice
    process, read from /proc; the generator shares the machine),
  - wall-clock events/s, peak RSS of sluice.

With SLUICE_BENCH_WARMUP=N, N more events are sent first and the figures
count only what happens after the pipeline has acknowledged N (steady
state: the process's heap is already faulted in; on this VM a first touch
of fresh memory can cost 10-17 % of a 1 M-event run's CPU).

Every case runs with sluice's default pipeline settings (workers = cores,
batch_size 128, batch_delay 50 ms, memory queue of 16,384 events; issue
#23: what users run). Figures in BENCHMARKS.md dated before 2026-11-27 were
measured with workers = 2, batch_size 512, batch_delay 5 ms and a memory
queue of 65,536. To measure other settings:
  SLUICE_BENCH_MEMORY_EVENTS=N   the memory queue's max_events
  SLUICE_BENCH_PIPELINE='batch_size = 512'   lines added to [pipelines.main]

usage: bench/run.py CASE [CASE...]      (cases: see CASES below)
       bench/run.py all
Prints one JSON object per case; append --md for a Markdown table row.
"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SLUICE_BIN", os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "sluice"))
TICK = os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / TICK

def proc_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

def stats(api):
    with urllib.request.urlopen(f"http://{api}/_node/stats", timeout=5) as r:
        return json.load(r)

GROK_FILTERS = """
[[pipelines.main.filters]]
type = "grok"
match = { message = "%{COMBINEDAPACHELOG}" }
ecs_compatibility = "disabled"
[[pipelines.main.filters]]
type = "date"
match = ["timestamp", "dd/MMM/yyyy:HH:mm:ss Z"]
[[pipelines.main.filters]]
type = "mutate"
convert = { response = "integer", bytes = "integer" }
remove_field = ["timestamp"]
"""

# name: (template, format, filters, queue, count, rate, connections[, sink])
CASES = {
    "passthrough-memory": ("thesis", "ndjson", "", "memory", 2_000_000, 0, 1),
    "passthrough-persisted": ("thesis", "ndjson", "", "persisted", 2_000_000, 0, 1),
    "passthrough-persisted-2c": ("thesis", "ndjson", "", "persisted", 2_000_000, 0, 2),
    "passthrough-memory-2c": ("thesis", "ndjson", "", "memory", 2_000_000, 0, 2),
    "grok-apache": ("apache", "lines", GROK_FILTERS, "memory", 1_000_000, 0, 1),
    "rss-100k": ("thesis", "ndjson", "", "memory", 2_000_000, 100_000, 1),
    # Indexing end to end: TCP ndjson -> persisted queue -> embedded store
    # (acknowledged = committed to the index).
    "index-store": ("thesis", "ndjson", "", "persisted", 2_000_000, 0, 1, "store"),
    # The same with a memory queue: the store acknowledges only after its
    # commit, so the queue still holds every unacknowledged event.
    "index-store-memory": ("thesis", "ndjson", "", "memory", 2_000_000, 0, 1, "store"),
}

def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try: total += os.path.getsize(os.path.join(root, f))
            except OSError: pass
    return total

def config(case, port, api, data):
    template, fmt, filters, queue, _, _, _ = CASES[case][:7]
    sink = CASES[case][7] if len(CASES[case]) > 7 else "blackhole"
    sink_cfg = f'type = "store"\npath = "{data}/store"\n' + os.environ.get("SLUICE_BENCH_SINK_EXTRA", "") if sink == "store" else 'type = "blackhole"'
    mem_events = os.environ.get("SLUICE_BENCH_MEMORY_EVENTS")
    mem = f"max_events = {mem_events}\n" if mem_events else ""
    q = f'[pipelines.main.queue]\ntype = "memory"\n{mem}' if queue == "memory" else \
        '[pipelines.main.queue]\ntype = "persisted"\n' + os.environ.get("SLUICE_BENCH_QUEUE_EXTRA", "") + "\n"
    return f"""
[node]
data_dir = "{data}"
[api]
address = "{api}"
[pipelines.main]
{os.environ.get("SLUICE_BENCH_PIPELINE", "")}
{q}
[pipelines.main.sources.in]
type = "tcp"
address = "127.0.0.1:{port}"
format = "{fmt}"
{filters}
[pipelines.main.sinks.out]
{sink_cfg}
"""

def run_case(case):
    template, fmt, filters, queue, count, rate, conns = CASES[case][:7]
    port, apiport = free_port(), free_port()
    api = f"127.0.0.1:{apiport}"
    with tempfile.TemporaryDirectory(prefix=f"sluice-bench-{case}-") as d:
        cfg = os.path.join(d, "sluice.toml")
        with open(cfg, "w") as f:
            f.write(config(case, port, api, os.path.join(d, "data")))
        log = open(os.path.join(d, "log"), "w")
        p = subprocess.Popen([BIN, "run", cfg], stdout=subprocess.DEVNULL, stderr=log)
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close(); break
                except OSError:
                    time.sleep(0.05)
            warm = int(os.environ.get("SLUICE_BENCH_WARMUP", "0"))
            total = count + warm
            cpu0, t0, out0 = proc_cpu(p.pid), time.time(), 0
            gen = subprocess.Popen([BIN, "bench", "gen", "--target", f"tcp://127.0.0.1:{port}", "--template", template,
                                    "--count", str(total), "--rate", str(rate), "--connections", str(conns)],
                                   stdout=subprocess.PIPE, text=True)
            peak_rss, out, warmed = 0, 0, warm == 0
            deadline = time.time() + max(120, total / 20_000)
            while time.time() < deadline:
                peak_rss = max(peak_rss, proc_rss(p.pid))
                out = stats(api)["pipelines"]["main"]["events"]["out"]
                if not warmed and out >= warm:
                    # Measured from here: events acknowledged since, CPU since.
                    cpu0, t0, out0, warmed = proc_cpu(p.pid), time.time(), out, True
                if out >= total:
                    break
                time.sleep(0.05)
            t1, cpu1 = time.time(), proc_cpu(p.pid)
            gen_out = json.loads(gen.communicate(timeout=60)[0])
            measured = out - out0
            res = {
                "case": case, "events": total, "acknowledged": out, "missing": total - out,
                "warmup_events": warm, "measured_events": measured,
                "sluice_cpu_s": round(cpu1 - cpu0, 2), "wall_s": round(t1 - t0, 2),
                "events_per_cpu_s": round(measured / max(cpu1 - cpu0, 1e-9)),
                "events_per_s_wall": round(measured / max(t1 - t0, 1e-9)),
                "offered_rate": rate or "max", "generator_rate": round(gen_out["achieved_rate"]),
                "peak_rss_mb": round(peak_rss / 2**20, 1), "queue": queue,
            }
            store = os.path.join(d, "data", "store")
            if os.path.isdir(store):
                raw = gen_out.get("bytes", 0)
                res["store_bytes_per_event"] = round(du(store) / max(out, 1), 1)
                res["raw_bytes_per_event"] = round(raw / max(total, 1), 1)
                res["store_pct_of_raw"] = round(100 * du(store) / max(raw, 1), 1)
            return res
        finally:
            p.terminate()
            try: p.wait(timeout=30)
            except subprocess.TimeoutExpired: p.kill()

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args or args == ["all"]:
        args = list(CASES)
    for c in args:
        r = run_case(c)
        print(json.dumps(r), flush=True)

if __name__ == "__main__":
    main()
