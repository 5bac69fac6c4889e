#!/usr/bin/env python3
"""sluice -> OpenSearch ingest at saturation (issue #20): is OpenSearch, not
sluice, the bottleneck? Runs `sluice bench run bench/cases/opensearch-ingest`
(thesis events over tcp -> persisted queue -> `elasticsearch` sink -> a
fresh index of a real node) at rate 0 (as fast as it goes) once per sink
variant, and reports events/s and the CPU seconds of sluice (the processor,
from result.json) and of the OpenSearch JVM (`_nodes/stats` process.cpu,
delta over the run), with sluice's share of the total. The target: sluice
below 25 % of the CPU.

Variants: `gzip` (the default: gzip level 1 bodies, index template) and
`plain` (compression = "none").

Usage:
  scripts/opensearch.sh start            # or a node of your own
  bench/opensearch_ingest.py [--opensearch URL] [--sluice BIN] [--count 200000]
      [--variants gzip,plain] [--out target/bench/opensearch-ingest]
Prints one line per variant and a Markdown table; rows in OUT/ingest.json.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from opensearch_sizing import node_pid, node_stats, req

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CASE = os.path.join(ROOT, "bench", "cases", "opensearch-ingest")
INDEX = "sluice-ingest-bench"
VARIANTS = {"gzip": "", "plain": 'compression = "none"'}


def run(a, variant):
    url = a.opensearch
    req(f"{url}/{INDEX}", "DELETE")
    req(f"{url}/{INDEX}", "PUT", {"settings": {"number_of_shards": 1, "number_of_replicas": 0}})
    out = os.path.join(a.out, variant)
    sink = f'type = "elasticsearch"\nendpoint = "{url}"\nindex = "{INDEX}"\n{VARIANTS[variant]}'
    node_pid(url)
    cpu0, _, _ = node_stats(url)
    cmd = [a.sluice, "bench", "run", CASE, "--rate", "0", "--count", str(a.count), "--out", out,
           "--var", f"opensearch={url}", "--var", f"index={INDEX}", "--var", f"sink={sink}"]
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0
    cpu1, _, _ = node_stats(url)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    with open(os.path.join(out, "result.json")) as f:
        r = json.load(f)
    req(f"{url}/{INDEX}/_refresh", "POST")
    docs = req(f"{url}/{INDEX}/_count")["count"]
    procs = [x for x in r["processes"] if x["role"] not in ("bench", "haproxy", "nginx", "pen", "kafka")]
    sluice_cpu = sum(x["cpu_s"] for x in procs)
    jvm_cpu = cpu1 - cpu0
    row = {
        "variant": variant,
        "sent": r["generator"]["sent"],
        "docs": docs,
        "wall_s": r["wall_s"],
        "events_per_s": docs / max(r["wall_s"], 1e-9),
        "sluice_cpu_s": sluice_cpu,
        "jvm_cpu_s": jvm_cpu,
        "sluice_share": sluice_cpu / max(sluice_cpu + jvm_cpu, 1e-9),
        "events_per_cpu_s": docs / max(sluice_cpu + jvm_cpu, 1e-9),
        "script_wall_s": wall,
    }
    print(
        f"opensearch ingest [{variant}]: {docs:,} of {row['sent']:,} documents in {row['wall_s']:.1f} s = "
        f"{row['events_per_s']:,.0f} events/s; CPU sluice {sluice_cpu:.1f} s + JVM {jvm_cpu:.1f} s, "
        f"sluice share {100 * row['sluice_share']:.1f} %",
        file=sys.stderr,
        flush=True,
    )
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opensearch", default="http://127.0.0.1:19200")
    ap.add_argument("--sluice", default=os.path.join(ROOT, "target", "release", "sluice"))
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--variants", default="gzip,plain")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench", "opensearch-ingest"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = [run(a, v) for v in a.variants.split(",")]
    with open(os.path.join(a.out, "ingest.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("| sink | documents | events/s | sluice CPU s | JVM CPU s | sluice share | events per CPU-s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['variant']} | {r['docs']:,} | {r['events_per_s']:,.0f} | {r['sluice_cpu_s']:.1f} | "
              f"{r['jvm_cpu_s']:.1f} | {100 * r['sluice_share']:.1f} % | {r['events_per_cpu_s']:,.0f} |")


if __name__ == "__main__":
    main()
