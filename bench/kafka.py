#!/usr/bin/env python3
"""Kafka benchmarks for BENCHMARKS.md (issue #7): throughput of sluice's
kafka sink and source next to sluice's own TCP ndjson path, measured in the
same run, and the per-processor share of pull-based distribution with 2 and 4
processors in one consumer group (the thesis's "message queue" rows).

Needs the broker of scripts/kafka.sh (started here if it is not running) and
a release binary with the kafka feature (SLUICE_BIN, default
$CARGO_TARGET_DIR/release/sluice).

usage: bench/kafka.py throughput [--events N]
       bench/kafka.py share [--events N] [--rate R] [--processors 2,4]
Prints JSON lines; --md adds Markdown table rows.

`share` is superseded by the bench cases `thesis-kafka-2` / `thesis-kafka-4`
(`sluice bench run`, ADR 0041): the same rows counted exactly at collectors,
with latency and CPU, in the same run as the push rows.
"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SLUICE_BIN", os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "sluice"))
BROKER = "127.0.0.1:19092"
from benchlib import cpu_seconds as proc_cpu, free_port, node_stats as stats, toml


def plugin(st, pipeline, kind, i=0):
    return st["pipelines"][pipeline]["plugins"][kind][i]


def start(tmp, name, body):
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(body)
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([BIN, "run", path], stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "SLUICE_LOG": "warn"})
    CHILDREN.append(p)
    return p


def wait_api(api, proc, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            return stats(api)
        except Exception:
            if proc.poll() is not None:
                raise SystemExit(f"sluice exited: {proc.returncode}")
            time.sleep(0.1)
    raise SystemExit("api never answered")


def stop(p):
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()


def create_topic(name, partitions):
    subprocess.run([os.path.join(ROOT, "scripts/kafka.sh"), "create", name, str(partitions)], check=True, stdout=subprocess.DEVNULL)


def gen(port, count, rate):
    out = subprocess.run([BIN, "bench", "gen", "--target", f"tcp://127.0.0.1:{port}", "--template", "thesis",
                          "--count", str(count), "--rate", str(rate)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)  # one JSON document, pretty-printed


def wait_count(api, pick, want, timeout=300):
    end = time.time() + timeout
    first = None
    while time.time() < end:
        n = pick(stats(api))
        if n > 0 and first is None:
            first = time.time()
        if n >= want:
            return first, time.time()
        time.sleep(0.05)
    raise SystemExit(f"timeout: {pick(stats(api))} of {want}")


MAIN = {"workers": 2, "batch_size": 512, "batch_delay": "10ms"}
BLACKHOLE = {"out": {"type": "blackhole"}}


def node(data, api, main, sources, sinks):
    """A node with its API on `api`: pipeline `main` (keys `main`), its
    `sources` and `sinks` by id."""
    tables = {"node": {"data_dir": data}, "api": {"address": f"127.0.0.1:{api}"}, "pipelines.main": main}
    tables.update({f"pipelines.main.sources.{k}": v for k, v in sources.items()})
    tables.update({f"pipelines.main.sinks.{k}": v for k, v in sinks.items()})
    return toml(tables)


def tcp_in(port):
    """The ndjson `tcp` source `in` on `port` (identity acme / agent-1)."""
    return {"in": {"type": "tcp", "address": f"127.0.0.1:{port}", "format": "ndjson", "group": "acme", "host": "agent-1"}}


def kafka_in(topic, group, **more):
    """The `kafka` source consuming `topic` in consumer group `group`."""
    return {"kafka": {"type": "kafka", "brokers": BROKER, "topics": [topic], "group_id": group, "trust_identity": True, **more}}


def throughput(n, md):
    tmp = tempfile.mkdtemp(prefix="sluice-kafka-bench-")
    rows = []
    # 1. TCP ndjson: bench gen -> tcp source -> blackhole.
    api, port = free_port(), free_port()
    p = start(tmp, "tcp", node(tmp + "/d1", api, MAIN, tcp_in(port), BLACKHOLE))
    wait_api(api, p)
    c0 = proc_cpu(p.pid); t0 = time.time()
    gen(port, n, 0)
    wait_count(api, lambda s: plugin(s, "main", "sinks")["events"]["out"], n)
    dt = time.time() - t0; cpu = proc_cpu(p.pid) - c0
    stop(p)
    rows.append({"case": "tcp ndjson -> blackhole (sluice's own path)", "events": n, "seconds": round(dt, 2), "events_per_s": round(n / dt), "sluice_cpu_s": round(cpu, 2)})
    # 1b. sluice's native agent protocol: bench gen -> tcp source -> sluice
    # sink (lz4) -> sluice source -> blackhole; done when the receiver's sink
    # has everything (CPU: both sluice processes).
    api, port, rapi, rport = free_port(), free_port(), free_port(), free_port()
    agents = {
        "agents": {"type": "sluice", "address": f"127.0.0.1:{rport}"},
        "agents.tokens.bench": {"token": "bench-token-0123456789abcdef", "group": "acme"},
    }
    r = start(tmp, "receiver", node(tmp + "/d1r", rapi, MAIN, agents, BLACKHOLE))
    wait_api(rapi, r)
    out = {"type": "sluice", "receivers": [f"127.0.0.1:{rport}"], "token": "bench-token-0123456789abcdef",
           "group": "acme", "compression": "lz4"}
    p = start(tmp, "sender", node(tmp + "/d1s", api, MAIN, tcp_in(port), {"out": out}))
    wait_api(api, p)
    c0 = proc_cpu(p.pid) + proc_cpu(r.pid); t0 = time.time()
    gen(port, n, 0)
    wait_count(rapi, lambda s: plugin(s, "main", "sinks")["events"]["out"], n)
    dt = time.time() - t0; cpu = proc_cpu(p.pid) + proc_cpu(r.pid) - c0
    stop(p); stop(r)
    rows.append({"case": "tcp ndjson -> sluice sink (agent protocol, lz4) -> sluice source -> blackhole", "events": n, "seconds": round(dt, 2), "events_per_s": round(n / dt), "sluice_cpu_s": round(cpu, 2)})
    # 2. Kafka produce: bench gen -> tcp source -> kafka sink; done when Kafka acknowledged all.
    topic = f"bench-{int(time.time())}"
    create_topic(topic, 8)
    api, port = free_port(), free_port()
    kafka_out = {"kafka": {"type": "kafka", "brokers": BROKER, "topic": topic, "compression": "lz4", "linger": "5ms"}}
    p = start(tmp, "agent", node(tmp + "/d2", api, MAIN, tcp_in(port), kafka_out))
    wait_api(api, p)
    c0 = proc_cpu(p.pid); t0 = time.time()
    gen(port, n, 0)
    wait_count(api, lambda s: plugin(s, "main", "sinks")["counters"].get("acked_events", 0), n)
    dt = time.time() - t0; cpu = proc_cpu(p.pid) - c0
    stop(p)
    rows.append({"case": "tcp ndjson -> kafka sink (acks=all, idempotent, lz4)", "events": n, "seconds": round(dt, 2), "events_per_s": round(n / dt), "sluice_cpu_s": round(cpu, 2)})
    # 3. Kafka consume: kafka source (new group, earliest) -> blackhole; timed from the first event.
    api = free_port()
    p = start(tmp, "proc", node(tmp + "/d3", api, MAIN, kafka_in(topic, f"bench-{topic}", batch_size=1000), BLACKHOLE))
    wait_api(api, p)
    c0 = proc_cpu(p.pid)
    first, done = wait_count(api, lambda s: plugin(s, "main", "sinks")["events"]["out"], n)
    dt = done - first; cpu = proc_cpu(p.pid) - c0
    stop(p)
    rows.append({"case": "kafka source (group, commits after acks) -> blackhole", "events": n, "seconds": round(dt, 2), "events_per_s": round(n / dt), "sluice_cpu_s": round(cpu, 2)})
    for r in rows:
        print(json.dumps(r))
        if md:
            print(f"| {r['case']} | {r['events']} | {r['seconds']} | {r['events_per_s']:,} | {r['sluice_cpu_s']} |")


def share(n, rate, counts, md):
    tmp = tempfile.mkdtemp(prefix="sluice-kafka-share-")
    for k in counts:
        topic = f"share{k}-{int(time.time())}"
        create_topic(topic, 8)
        procs = []
        for i in range(k):
            api = free_port()
            main = {"workers": 1, "batch_size": 256, "batch_delay": "10ms"}
            p = start(tmp, f"p{k}-{i}", node(f"{tmp}/p{k}-{i}", api, main, kafka_in(topic, f"share-{topic}"), BLACKHOLE))
            wait_api(api, p)
            procs.append((p, api))
        time.sleep(8)  # let the group settle (cooperative rebalances)
        aapi, aport = free_port(), free_port()
        kafka_out = {"kafka": {"type": "kafka", "brokers": BROKER, "topic": topic}}
        agent = start(tmp, f"agent{k}", node(f"{tmp}/a{k}", aapi, MAIN, tcp_in(aport), kafka_out))
        wait_api(aapi, agent)
        g = subprocess.Popen([BIN, "bench", "gen", "--target", f"tcp://127.0.0.1:{aport}", "--template", "thesis",
                              "--count", str(n), "--rate", str(rate)], stdout=subprocess.PIPE, text=True)
        # Per-second counts at each processor.
        series = [[] for _ in procs]
        last = [0] * len(procs)
        t0 = time.time()
        while True:
            time.sleep(1.0)
            tot = 0
            for i, (_, api) in enumerate(procs):
                c = plugin(stats(api), "main", "sinks")["events"]["out"]
                series[i].append(c - last[i]); last[i] = c; tot += c
            if tot >= n or time.time() - t0 > n / max(rate, 1) + 120:
                break
        g.wait()
        elapsed = time.time() - t0
        stop(agent)
        for p, _ in procs:
            stop(p)
        totals = last
        mean = sum(totals) / len(totals)
        cv = (sum((x - mean) ** 2 for x in totals) / len(totals)) ** 0.5 / mean if mean else 0
        # Per-second shares: coefficient of variation across processors, averaged over busy seconds.
        cvs = []
        for sec in range(len(series[0])):
            xs = [s[sec] for s in series]
            m = sum(xs) / len(xs)
            if m >= rate / len(xs) / 2:
                cvs.append((sum((x - m) ** 2 for x in xs) / len(xs)) ** 0.5 / m)
        row = {"processors": k, "events": n, "rate": rate, "received": sum(totals),
               "shares_pct": [round(100 * x / max(sum(totals), 1), 1) for x in totals],
               "cv_totals": round(cv, 3), "cv_per_second_mean": round(sum(cvs) / len(cvs), 3) if cvs else None,
               "events_per_s": round(sum(totals) / elapsed)}
        print(json.dumps(row))
        if md:
            print(f"| pull via Kafka, {k} processors | {rate}/s × {n} | {row['received']} | {' / '.join(map(str, row['shares_pct']))} | {row['cv_totals']} | {row['cv_per_second_mean']} |")


CHILDREN = []


def main():
    import atexit
    atexit.register(lambda: [c.kill() for c in CHILDREN if c.poll() is None])
    args = sys.argv[1:]
    md = "--md" in args
    def opt(name, default):
        return args[args.index(name) + 1] if name in args else default
    subprocess.run([os.path.join(ROOT, "scripts/kafka.sh"), "start"], check=True, stdout=subprocess.DEVNULL)
    if not args or args[0] == "throughput":
        throughput(int(opt("--events", 500000)), md)
    if not args or args[0] == "share":
        share(int(opt("--events", 20000)), int(opt("--rate", 1000)), [int(x) for x in opt("--processors", "2,4").split(",")], md)


if __name__ == "__main__":
    main()
