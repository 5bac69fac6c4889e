#!/usr/bin/env python3
"""The embedded store next to OpenSearch, one run (issue #20): which store
to run, and when to switch.

Indexing: the same N thesis events (default 2,000,000), offered as fast as
they go (`sluice bench run`, rate 0, one tcp connection, persisted queue,
the same processor template) through

  - `bench/cases/store-ingest`: tcp -> queue -> `store` sink (embedded);
  - `bench/cases/opensearch-ingest`: tcp -> queue -> `elasticsearch` sink
    (gzip bodies, the sink's index template) -> a fresh index of a real
    OpenSearch node (one shard, no replica);

and for each: events/s, CPU seconds (sluice's processor; plus the
OpenSearch JVM's, from `_nodes/stats` process.cpu over the run), events per
CPU-second (all CPU counted), sluice's share of the CPU, bytes on disk per
event (the store directory; OpenSearch's primary store after refresh and
flush), and peak RSS (sluice; the JVM sampled every 0.25 s). Every event
must be stored: a missing one is an error.

Search: p50 / p99 per query class from a `bench/search.py --json FILE`
run (e.g. over 10,000,000 events), the median over its sets, for `new`
(the store, result cache off) and `opensearch` (request cache off).

Usage:
  scripts/opensearch.sh start
  bench/store_vs_opensearch.py --opensearch URL [--sluice BIN] [--count 2000000]
      [--search-json FILE] [--out target/bench/store-vs-opensearch]
Prints Markdown tables; rows in OUT/indexing.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import opensearch_sizing as osz
from opensearch_sizing import Sampler, node_pid, node_stats, req
from search import pct

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
INDEX = "sluice-store-vs-opensearch"
osz.INDEX = INDEX


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def bench_run(a, case, out, extra):
    cmd = [a.sluice, "bench", "run", os.path.join(ROOT, "bench", "cases", case), "--rate", "0",
           "--count", str(a.count), "--out", out] + extra
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    with open(os.path.join(out, "result.json")) as f:
        r = json.load(f)
    procs = [x for x in r["processes"] if x["role"] == "processor"]
    return r, sum(x["cpu_s"] for x in procs), max(x["peak_rss_bytes"] for x in procs)


def store_dir(out):
    """The `store` sink's directory under a `bench run` output."""
    for root, dirs, _ in os.walk(out):
        if os.path.basename(root) == "store" and any(d.isdigit() or d.startswith("20") for d in dirs):
            return root
    raise RuntimeError(f"no store directory under {out}")


def embedded(a):
    out = os.path.join(a.out, "embedded")
    r, cpu, rss = bench_run(a, "store-ingest", out, [])
    sent, s = r["generator"]["sent"], r["summary"]
    if s["lost"] != 0 or not r["quiescent"]:
        raise RuntimeError(f"embedded: lost {s['lost']}, quiescent {r['quiescent']}")
    size = du(store_dir(out))
    return {"system": "embedded store", "sent": sent, "stored": sent, "wall_s": r["wall_s"],
            "sluice_cpu_s": cpu, "jvm_cpu_s": 0.0, "bytes": size, "sluice_rss": rss, "jvm_rss": 0}


def opensearch(a):
    url = a.opensearch
    req(f"{url}/{INDEX}", "DELETE")
    req(f"{url}/{INDEX}", "PUT", {"settings": {"number_of_shards": 1, "number_of_replicas": 0}})
    out = os.path.join(a.out, "opensearch")
    sink = f'type = "elasticsearch"\nendpoint = "{url}"\nindex = "{INDEX}"'
    sampler = Sampler(url, node_pid(url))
    cpu0, _, _ = node_stats(url)
    sampler.start()
    r, cpu, rss = bench_run(a, "opensearch-ingest", out,
                            ["--var", f"opensearch={url}", "--var", f"index={INDEX}", "--var", f"sink={sink}"])
    cpu1, _, _ = node_stats(url)
    sampler.done.set()
    sampler.join()
    docs, size, _ = osz.index_figures(url)
    sent = r["generator"]["sent"]
    if docs != sent:
        raise RuntimeError(f"opensearch holds {docs} of {sent} documents")
    return {"system": "OpenSearch 2.19 (sluice elasticsearch sink)", "sent": sent, "stored": docs,
            "wall_s": r["wall_s"], "sluice_cpu_s": cpu, "jvm_cpu_s": cpu1 - cpu0, "bytes": size,
            "sluice_rss": rss, "jvm_rss": sampler.peak_rss}


def indexing_table(rows):
    mib = 2**20
    o = ["| store | events | events/s | CPU s: sluice + JVM | events per CPU-s | sluice's CPU share | bytes on disk per event | peak RSS: sluice + JVM |",
         "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cpu = r["sluice_cpu_s"] + r["jvm_cpu_s"]
        o.append(f"| {r['system']} | {r['stored']:,} | {r['stored'] / max(r['wall_s'], 1e-9):,.0f} | "
                 f"{r['sluice_cpu_s']:.1f} + {r['jvm_cpu_s']:.1f} | {r['stored'] / max(cpu, 1e-9):,.0f} | "
                 f"{100 * r['sluice_cpu_s'] / max(cpu, 1e-9):.0f} % | {r['bytes'] / max(r['stored'], 1):.1f} | "
                 f"{r['sluice_rss'] / mib:.0f} + {r['jvm_rss'] / mib:.0f} MiB |")
    if len(rows) == 2:
        e, s = rows
        ecpu, scpu = e["sluice_cpu_s"] + e["jvm_cpu_s"], s["sluice_cpu_s"] + s["jvm_cpu_s"]
        o.append("")
        o.append(f"embedded / OpenSearch: {(e['stored'] / e['wall_s']) / (s['stored'] / s['wall_s']):.1f}× events/s, "
                 f"{(e['stored'] / ecpu) / (s['stored'] / scpu):.1f}× events per CPU-s, "
                 f"{(e['bytes'] / e['stored']) / (s['bytes'] / s['stored']):.2f}× the bytes per event")
    return "\n".join(o)


def search_table(path):
    with open(path) as f:
        sets = json.load(f)

    def med(q, system, p):
        return statistics.median(pct(m[q]["times_ms"][system], p) for m in sets)

    o = ["| query class | hits / total | embedded p50 / p99 ms | OpenSearch p50 / p99 ms | p99 ratio |",
         "|---|---:|---:|---:|---:|"]
    for q, r in sets[0].items():
        e50, e99, o50, o99 = med(q, "new", .5), med(q, "new", .99), med(q, "opensearch", .5), med(q, "opensearch", .99)
        o.append(f"| {q} | {r['total']:,} | {e50:.1f} / {e99:.1f} | {o50:.1f} / {o99:.1f} | {e99 / max(o99, 1e-9):.2f}× |")
    return "\n".join(o)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opensearch", default="http://127.0.0.1:19200")
    ap.add_argument("--sluice", default=os.path.join(ROOT, "target", "release", "sluice"))
    ap.add_argument("--count", type=int, default=2_000_000)
    ap.add_argument("--search-json")
    ap.add_argument("--skip-indexing", action="store_true", help="only the search table")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench", "store-vs-opensearch"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if not a.skip_indexing:
        print(f"# load average before: {os.getloadavg()}", file=sys.stderr, flush=True)
        rows = []
        for f in (embedded, opensearch):
            t0 = time.time()
            rows.append(f(a))
            print(f"# {rows[-1]['system']}: {rows[-1]['stored']:,} events in {time.time() - t0:.0f} s, "
                  f"load average {os.getloadavg()}", file=sys.stderr, flush=True)
        with open(os.path.join(a.out, "indexing.json"), "w") as f:
            json.dump(rows, f, indent=1)
        print(indexing_table(rows))
    if a.search_json:
        print()
        print(search_table(a.search_json))


if __name__ == "__main__":
    main()
