#!/usr/bin/env python3
"""Sizing with OpenSearch as the store (issue #25): the hardware table of
`sluice bench sizing`, from OpenSearch's own disk, JVM and CPU figures.

For each rate (ascending, stopping at the first one not sustained) it runs
`sluice bench run bench/cases/opensearch-ingest` — a sluice processor whose
`elasticsearch` sink writes thesis events into a fresh index of a real
OpenSearch node — and measures:
  - sluice: CPU seconds and peak RSS of the processor (from result.json);
  - OpenSearch: CPU seconds of its JVM during the run (`_nodes/stats`
    process.cpu), peak heap used and peak RSS (sampled every 0.25 s), the
    configured heap (-Xmx);
  - disk per event: the index's primary store size (`_stats/store`) after
    refresh and flush, divided by the documents in it (which must equal the
    events sent), and again after `_forcemerge?max_num_segments=1` (merges
    settled).
The index is created with one shard and no replica and OpenSearch's default
dynamic mapping (strings as `text` with a `keyword` sub-field): what a user
gets who points the sink at a stock node. A replica doubles the disk.

Usage:
  scripts/opensearch.sh start
  bench/opensearch_sizing.py [--opensearch URL] [--sluice BIN]
      [--rates 1000,5000,20000,50000] [--seconds 5] [--targets 1000,10000,100000]
      [--out target/bench/opensearch-sizing]
Prints the Markdown table; rows in OUT/sizing.json.
"""
import argparse
from benchlib import rss_bytes as rss
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CASE = os.path.join(ROOT, "bench", "cases", "opensearch-ingest")
INDEX = "sluice-sizing"


def req(url, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    r = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=600) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        if method == "DELETE" and e.code == 404:
            return {}
        raise RuntimeError(f"{method} {url}: {e.code} {e.read()[:300]!r}") from e


def node_stats(url):
    n = next(iter(req(f"{url}/_nodes/_local/stats/process,jvm")["nodes"].values()))
    return n["process"]["cpu"]["total_in_millis"] / 1000.0, n["jvm"]["mem"]["heap_used_in_bytes"], n["jvm"]["mem"]["heap_max_in_bytes"]


def node_pid(url):
    n = next(iter(req(f"{url}/_nodes/_local/process")["nodes"].values()))
    return n["process"]["id"]


class Sampler(threading.Thread):
    """Peak heap used and peak RSS of the OpenSearch JVM while a run lasts."""

    def __init__(self, url, pid):
        super().__init__(daemon=True)
        self.url, self.pid = url, pid
        self.peak_heap = self.peak_rss = 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                _, heap, _ = node_stats(self.url)
                self.peak_heap = max(self.peak_heap, heap)
            except Exception:  # a sample lost is not a figure lost
                pass
            self.peak_rss = max(self.peak_rss, rss(self.pid))
            self.done.wait(0.25)


def index_figures(url):
    req(f"{url}/{INDEX}/_refresh", "POST")
    req(f"{url}/{INDEX}/_flush", "POST")
    s = req(f"{url}/{INDEX}/_stats/store,docs,segments")["_all"]["primaries"]
    return s["docs"]["count"], s["store"]["size_in_bytes"], s["segments"]["count"]


def one_rate(a, rate):
    url = a.opensearch
    req(f"{url}/{INDEX}", "DELETE")
    req(f"{url}/{INDEX}", "PUT", {"settings": {"number_of_shards": 1, "number_of_replicas": 0}})
    count = max(1, round(rate * a.seconds))
    out = os.path.join(a.out, f"rate-{int(rate)}")
    pid = node_pid(url)
    cpu0, _, heap_max = node_stats(url)
    sampler = Sampler(url, pid)
    sampler.start()
    cmd = [a.sluice, "bench", "run", CASE, "--rate", str(rate), "--count", str(count), "--out", out,
           "--var", f"opensearch={url}", "--var", f"index={INDEX}"]
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0
    cpu1, _, _ = node_stats(url)
    sampler.done.set()
    sampler.join()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    with open(os.path.join(out, "result.json")) as f:
        r = json.load(f)
    sent = r["generator"]["sent"]
    docs, store, segments = index_figures(url)
    req(f"{url}/{INDEX}/_forcemerge?max_num_segments=1", "POST")
    docs_m, store_m, _ = index_figures(url)
    procs = [x for x in r["processes"] if x["role"] not in ("bench", "haproxy", "nginx", "pen", "kafka")]
    sluice_cpu = sum(x["cpu_s"] for x in procs)
    row = {
        "rate": rate,
        "sent": sent,
        "docs": docs,
        "achieved": r["summary"]["throughput_mean"],
        "wall_s": r["wall_s"],
        "sluice_cpu_s": sluice_cpu,
        "sluice_cores": sum(x["cores"] for x in procs),
        "sluice_peak_rss": max((x["peak_rss_bytes"] for x in procs), default=0),
        "jvm_cpu_s": cpu1 - cpu0,
        "jvm_cores": (cpu1 - cpu0) / max(wall, 1e-9),
        "jvm_heap_max": heap_max,
        "jvm_peak_heap": sampler.peak_heap,
        "jvm_peak_rss": sampler.peak_rss,
        "store_bytes": store,
        "segments": segments,
        "bytes_per_event": store / max(docs, 1),
        "store_bytes_merged": store_m,
        "bytes_per_event_merged": store_m / max(docs_m, 1),
        "sustained": bool(
            r["quiescent"]
            and r["summary"]["lost"] == 0
            and docs == sent
            and r["generator"]["achieved_rate"] >= 0.9 * rate
            and r["wall_s"] - r["generator"]["seconds"] <= max(2.0, 0.2 * a.seconds)
        ),
    }
    print(
        f"opensearch sizing: offered {rate:,.0f}/s, {docs:,} of {sent:,} documents, "
        f"sluice {row['sluice_cores']:.2f} + JVM {row['jvm_cores']:.2f} cores, "
        f"{row['bytes_per_event']:.1f} B/event ({row['bytes_per_event_merged']:.1f} merged), sustained: {row['sustained']}",
        file=sys.stderr,
        flush=True,
    )
    return row


def human(b):
    for u in ["B", "KiB", "MiB", "GiB", "TiB"]:
        if b < 1024 or u == "TiB":
            return f"{b:.1f} {u}"
        b /= 1024


def cores_for(rows, n):
    """Cores (sluice + JVM) for n events/s: interpolated between the measured
    rates around n, the lowest rate's own use below, per event above."""
    pts = sorted(rows, key=lambda r: r["rate"])
    tot = lambda r: r["sluice_cores"] + r["jvm_cores"]  # noqa: E731
    lo, hi = pts[0], pts[-1]
    if n <= lo["rate"]:
        return tot(lo), f"measured at {lo['rate']:,.0f}/s"
    if n >= hi["rate"]:
        per_event = (hi["sluice_cpu_s"] + hi["jvm_cpu_s"]) / hi["sent"]
        return per_event * n, f"{'measured' if n == hi['rate'] else 'per event'} at {hi['rate']:,.0f}/s"
    for x, y in zip(pts, pts[1:]):
        if x["rate"] <= n <= y["rate"]:
            t = (n - x["rate"]) / (y["rate"] - x["rate"])
            return tot(x) + t * (tot(y) - tot(x)), f"between {x['rate']:,.0f}/s and {y['rate']:,.0f}/s"
    raise AssertionError("unreachable")


def fixed_cores(rows):
    """Where the line through the two lowest sustained rates meets 0 events/s
    (sluice + JVM cores), clamped at 0; None with fewer than two rates."""
    pts = sorted((r["achieved"], r["sluice_cores"] + r["jvm_cores"]) for r in rows)
    if len(pts) < 2 or pts[1][0] <= pts[0][0]:
        return None
    (x0, y0), (x1, y1) = pts[0], pts[1]
    return max(0.0, y0 - (y1 - y0) / (x1 - x0) * x0)


def table(rows, targets):
    ok = [r for r in rows if r["sustained"]]
    if not ok:
        return "no sustained rate\n"
    best = max(ok, key=lambda r: r["rate"])
    fixed = fixed_cores(ok)
    fixed = "–" if fixed is None else f"{fixed:.2f} cores"
    mib = 1 << 20
    o = [
        "| events/s | cores, sluice + OpenSearch (+30 %) | CPU figure | fixed cost | RAM: sluice peak RSS + JVM peak RSS (heap max) | disk per day (OpenSearch primary store, flushed) | after force-merge |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in targets:
        c, how = cores_for(ok, n)
        o.append(
            f"| {n:,.0f} | {c * 1.3:.2f} | {how} | {fixed} | {best['sluice_peak_rss'] / mib:.0f} MiB + {best['jvm_peak_rss'] / mib:.0f} MiB "
            f"({best['jvm_heap_max'] / mib:.0f} MiB) | {human(best['bytes_per_event'] * n * 86400)} ({best['bytes_per_event']:.1f} B/event) "
            f"| {human(best['bytes_per_event_merged'] * n * 86400)} ({best['bytes_per_event_merged']:.1f} B/event) |"
        )
    o.append("")
    o.append("Measured per rate:")
    for r in rows:
        o.append(
            f"- at {r['rate']:,.0f}/s: {r['docs']:,} of {r['sent']:,} documents; sluice {r['sluice_cores']:.2f} cores, "
            f"{r['sluice_cpu_s'] / r['sent'] * 1e6:.1f} µs/event, {r['sluice_peak_rss'] / mib:.0f} MiB; OpenSearch {r['jvm_cores']:.2f} cores, "
            f"{r['jvm_cpu_s'] / r['sent'] * 1e6:.1f} µs/event, heap peak {r['jvm_peak_heap'] / mib:.0f} of {r['jvm_heap_max'] / mib:.0f} MiB, "
            f"RSS {r['jvm_peak_rss'] / mib:.0f} MiB; {r['bytes_per_event']:.1f} B/event in {r['segments']} segments "
            f"({r['bytes_per_event_merged']:.1f} merged to one)"
            + ("" if r["sustained"] else " (not sustained)")
        )
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opensearch", default=None, help="node URL (default: scripts/opensearch.sh url)")
    ap.add_argument("--sluice", default=os.path.join(ROOT, "target", "release", "sluice"))
    ap.add_argument("--rates", default="1000,5000,20000,50000")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--targets", default="1000,10000,100000")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench", "opensearch-sizing"))
    a = ap.parse_args()
    if a.opensearch is None:
        a.opensearch = subprocess.run([os.path.join(ROOT, "scripts", "opensearch.sh"), "url"], capture_output=True, text=True, check=True).stdout.strip()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for rate in sorted(float(x) for x in a.rates.split(",")):
        row = one_rate(a, rate)
        rows.append(row)
        if not row["sustained"]:
            break
    req(f"{a.opensearch}/{INDEX}", "DELETE")
    with open(os.path.join(a.out, "sizing.json"), "w") as f:
        json.dump(rows, f, indent=2)
    print(table(rows, [float(x) for x in a.targets.split(",")]), end="")


if __name__ == "__main__":
    main()
