#!/usr/bin/env python3
"""Search latency, sluice's embedded store next to OpenSearch (issue #26).

A seeded data set of 2,000,020 Apache-like events over 24 hours (fields
`host` 200 values, `path` 5,000 values (Zipf-like), `status`, `method`,
`user_agent`, `bytes`, `duration_ms`, `message`; 20 of the events carry a
unique token) is loaded

  - into one sluice node through the real binary's ingest (`POST /ndjson`
    on the API port -> memory queue -> `store` sink), then the loader is
    stopped and every sluice binary under test is started on that same
    store directory (read only: nothing is appended while measuring);
  - into OpenSearch (one shard, no replica, explicit keyword mapping,
    `_bulk` of 5,000, refreshed, not force-merged).

Then the six queries of issue #23, sorts by a number and by a string field
and two filters on a string field are sent over HTTP from one keep-alive
connection per system, `--warmup` times and then `--runs` times each,
the systems alternated request by request; p50 / p99 per system and query.
Every system must answer each query identically (hit count, hit
timestamps in order, buckets and `other`); a difference is an error.

OpenSearch is asked with `request_cache=false` (its request cache off)
unless the system is named `opensearch-cache` (`request_cache=true`: the
second identical aggregation is answered from its cache; searches that
return hits are never cached by OpenSearch). A sluice binary named with
the suffix `-cache` runs with the store's result cache on (the default
size); the others with `result_cache_bytes = 0`.

usage:
  bench/search.py [--opensearch URL] [--sluice NAME=BIN ...] [--data DIR]
                  [--reuse] [--runs 30] [--warmup 3] [--sets 1] [--events N]
                  [--bulk-connections 2]
                  [--json FILE]

  --opensearch URL   an OpenSearch node (e.g. from scripts/opensearch.sh,
                     `scripts/opensearch.sh url`); without it only sluice runs
  --sluice NAME=BIN  a sluice binary to measure (repeatable; default
                     new=target/release/sluice and new-cache=the same);
                     the first one loads the data. NAME ending in -cache:
                     the store's result cache on, else result_cache_bytes =
                     0; BIN ending in :plain (a binary from before the
                     cache): nothing added to its store sink
  --data DIR         where the store lives (kept; with --reuse the load is
                     skipped when DIR holds a loaded store and OpenSearch
                     already has the index with the full count)
  --sets N           repeat the whole alternated measurement N times and
                     print min / median / max of each system's p50 and p99

The load of OpenSearch sets `index.refresh_interval: -1` during `_bulk`
and refreshes once at the end, then waits until merging stopped. Each
document's `_id` is its place in the data set, and the bodies OpenSearch
acknowledged without a gap are saved in DIR/<index>.progress.json: with
--reuse, a load that was stopped (100 M documents take more than an hour
here) resumes after them, and nothing is stored twice.
"""
import argparse, bisect, calendar, http.client, json, os, queue, random, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time
import urllib.parse

from benchlib import ALL, toml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "sluice")

T0_MS = 1_763_769_600_000  # 2025-11-22T00:00:00Z
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
BASE_EVENTS = 2_000_000
NEEDLES = 20
SEED = 26
INDEX = "sluice-bench-26"
WORD_1PCT = "kumquat"     # in ~1 % of messages
NEEDLE = "zq7needle26"    # in exactly NEEDLES messages

METHODS = [("GET", 70), ("POST", 18), ("PUT", 6), ("DELETE", 4), ("HEAD", 2)]
STATUSES = [(200, 80), (301, 3), (304, 6), (404, 6), (500, 1), (502, 1), (503, 2), (401, 1)]
SECTIONS = ["api", "static", "shop", "blog", "img", "user", "search", "docs", "cart", "admin"]
AGENTS = [f"Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/{v}.0" for v in range(100, 130)] + \
         [f"curl/8.{v}.0" for v in range(20)]
WORDS = ["ok", "served", "cached", "proxied", "redirected", "compressed", "streamed", "retried", "queued",
         "throttled", "slow", "fast", "cold", "warm", "hit", "miss", "upstream", "downstream", "backend",
         "frontend", "edge", "origin", "shield", "replica", "primary", "secondary", "tertiary", "alpha", "beta",
         "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
         "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega", "red", "green", "blue",
         "cyan", "magenta", "yellow", "black", "white", "grey", "orange", "purple", "brown", "pink", "lime",
         "olive", "navy", "teal", "maroon", "silver", "gold", "bronze", "copper", "iron", "tin", "lead", "zinc",
         "nickel", "cobalt", "chrome", "argon", "neon", "xenon", "radon", "helium", "boron", "carbon", "oxygen",
         "sodium", "calcium", "sulfur", "iodine", "barium", "cerium", "osmium", "indium", "gallium", "bismuth",
         WORD_1PCT]


def weighted(rng, table):
    total = sum(w for _, w in table)
    x = rng.random() * total
    for v, w in table:
        x -= w
        if x < 0:
            return v
    return table[-1][0]


def events(n_base=BASE_EVENTS):
    """The data set, in time order: (epoch ms, document dict)."""
    rng = random.Random(SEED)
    paths = [f"/{SECTIONS[i % len(SECTIONS)]}/{i // len(SECTIONS)}/item-{i}" for i in range(5000)]
    # Zipf-like popularity (s = 0.9) with a shuffled rank, so no value ties at the top.
    order = list(range(5000))
    rng.shuffle(order)
    cum, acc = [], 0.0
    for r in range(5000):
        acc += 1.0 / (r + 1) ** 0.9
        cum.append(acc)
    total = n_base + NEEDLES
    needle_at = {k * (total // NEEDLES) + total // (2 * NEEDLES) for k in range(NEEDLES)}
    for j in range(total):
        ts = T0_MS + j * DAY_MS // total
        method = weighted(rng, METHODS)
        status = weighted(rng, STATUSES)
        path = paths[order[bisect.bisect_left(cum, rng.random() * acc)]]
        host = f"web-{rng.randrange(200):03d}"
        ua = AGENTS[rng.randrange(len(AGENTS))]
        size = rng.randrange(200, 50_000)
        dur = rng.randrange(1, 2_000)
        word = WORDS[rng.randrange(len(WORDS))]
        if j in needle_at:
            word = NEEDLE
        ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        msg = f'{ip} - - "{method} {path} HTTP/1.1" {status} {size} {dur}ms {word}'
        yield ts, {"host": host, "path": path, "status": status, "method": method, "user_agent": ua,
                   "bytes": size, "duration_ms": dur, "message": msg}


def epoch_ms(s):
    """`2025-11-22T00:00:00.043000000Z` -> epoch milliseconds."""
    frac = s[20:-1] if len(s) > 20 and s[19] == "." else ""
    return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) * 1000 + int((frac + "000")[:3])


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


# The queries: (name, sluice endpoint, sluice body, OpenSearch body)
FROM24, TO24 = T0_MS, T0_MS + DAY_MS
QUERIES = [
    ("status:500, last 1 h", "search",
     {"query": "status:500", "from": str(TO24 - HOUR_MS), "to": str(TO24), "size": 100},
     {"size": 100, "track_total_hits": True, "sort": [{"@timestamp": "desc"}],
      "query": {"bool": {"filter": [{"term": {"status": 500}},
                                    {"range": {"@timestamp": {"gte": TO24 - HOUR_MS, "lt": TO24,
                                                              "format": "epoch_millis"}}}]}}}),
    ("full text, a word in ~1 % of messages, 24 h", "search",
     {"query": WORD_1PCT, "from": str(FROM24), "to": str(TO24), "size": 100},
     {"size": 100, "track_total_hits": True, "sort": [{"@timestamp": "desc"}],
      "query": {"bool": {"must": [{"match": {"message": WORD_1PCT}}],
                         "filter": [{"range": {"@timestamp": {"gte": FROM24, "lt": TO24,
                                                              "format": "epoch_millis"}}}]}}}),
    ("date histogram, 1-minute buckets, 24 h", "aggregate",
     {"query": "", "from": str(FROM24), "to": str(TO24), "aggs": {"h": {"type": "date_histogram", "interval": "1m"}}},
     {"size": 0, "track_total_hits": True,
      "query": {"range": {"@timestamp": {"gte": FROM24, "lt": TO24, "format": "epoch_millis"}}},
      "aggs": {"h": {"date_histogram": {"field": "@timestamp", "fixed_interval": "1m", "min_doc_count": 0,
                                        "extended_bounds": {"min": FROM24, "max": TO24 - 1}}}}}),
    ("top 10 values of path (5,000 distinct), 24 h", "aggregate",
     {"query": "", "from": str(FROM24), "to": str(TO24), "aggs": {"t": {"type": "terms", "field": "path", "size": 10}}},
     {"size": 0, "track_total_hits": True,
      "query": {"range": {"@timestamp": {"gte": FROM24, "lt": TO24, "format": "epoch_millis"}}},
      "aggs": {"t": {"terms": {"field": "path", "size": 10}}}}),
    ("a unique token over all time (20 hits)", "search",
     {"query": NEEDLE, "size": 100},
     {"size": 100, "track_total_hits": True, "sort": [{"@timestamp": "desc"}],
      "query": {"match": {"message": NEEDLE}}}),
    ("newest 100 events of everything, 24 h", "search",
     {"query": "", "from": str(FROM24), "to": str(TO24), "size": 100},
     {"size": 100, "track_total_hits": True, "sort": [{"@timestamp": "desc"}],
      "query": {"range": {"@timestamp": {"gte": FROM24, "lt": TO24, "format": "epoch_millis"}}}}),
    # Filters on a string field (a `keyword` in OpenSearch; a dynamic field
    # in sluice, found by a scan of the column's ordinals, ADR 0118).
    ("method:DELETE (a string field), 24 h", "search",
     {"query": "method:DELETE", "from": str(FROM24), "to": str(TO24), "size": 100},
     {"size": 100, "track_total_hits": True, "sort": [{"@timestamp": "desc"}],
      "query": {"bool": {"filter": [{"term": {"method": "DELETE"}},
                                    {"range": {"@timestamp": {"gte": FROM24, "lt": TO24,
                                                              "format": "epoch_millis"}}}]}}}),
    ("status:200 AND method:POST, last 4 h", "search",
     {"query": "status:200 AND method:POST", "from": str(TO24 - 4 * HOUR_MS), "to": str(TO24), "size": 100},
     {"size": 100, "track_total_hits": True, "sort": [{"@timestamp": "desc"}],
      "query": {"bool": {"filter": [{"term": {"status": 200}}, {"term": {"method": "POST"}},
                                    {"range": {"@timestamp": {"gte": TO24 - 4 * HOUR_MS, "lt": TO24,
                                                              "format": "epoch_millis"}}}]}}}),
    # A click on a column's name: every matching event's value is read (no
    # segment can be skipped); ties newest first on both systems.
    ("largest 100 responses (sort by bytes), 24 h", "search",
     {"query": "", "from": str(FROM24), "to": str(TO24), "size": 100, "sort": "bytes:desc"},
     {"size": 100, "track_total_hits": True, "sort": [{"bytes": "desc"}, {"@timestamp": "desc"}],
      "query": {"range": {"@timestamp": {"gte": FROM24, "lt": TO24, "format": "epoch_millis"}}}}),
    # The same on a string column (read by its ordinals in sluice, ADR 0121).
    ("first 100 paths in order (sort by a string), 24 h", "search",
     {"query": "", "from": str(FROM24), "to": str(TO24), "size": 100, "sort": "path:asc"},
     {"size": 100, "track_total_hits": True, "sort": [{"path": "asc"}, {"@timestamp": "desc"}],
      "query": {"range": {"@timestamp": {"gte": FROM24, "lt": TO24, "format": "epoch_millis"}}}}),
]

MAPPING = {
    "settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
    "mappings": {"dynamic": "strict", "properties": {
        "@timestamp": {"type": "date"}, "host": {"type": "keyword"}, "path": {"type": "keyword"},
        "status": {"type": "integer"}, "method": {"type": "keyword"}, "user_agent": {"type": "keyword"},
        "bytes": {"type": "long"}, "duration_ms": {"type": "long"}, "message": {"type": "text"}}},
}


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


class Client:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, url, token=None):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.token = token
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)

    def request(self, method, path, body=None, ctype="application/json"):
        headers = {"Content-Type": ctype, "Connection": "keep-alive"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        for attempt in range(2):
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                raw = r.read()
                dt = time.perf_counter() - t0
                return r.status, raw, dt
            except (http.client.HTTPException, ConnectionError, OSError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)

    def json(self, method, path, body=None, ok=(200, 201)):
        status, raw, _ = self.request(method, path, body)
        if status not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {raw[:500]!r}")
        return json.loads(raw) if raw else None


def timed(system, q, path, body):
    """(seconds, raw body) of query `q` POSTed to `path` of `system`."""
    status, raw, dt = system.client.request("POST", path, body)
    if status != 200:
        raise RuntimeError(f"{system.name} {q[0]}: HTTP {status}: {raw[:300]!r}")
    return dt, raw


# ---------------------------------------------------------------- sluice

def sluice_config(data, store, api, cache):
    # cache: True (the default result cache), False (result_cache_bytes = 0),
    # None (a binary that predates the option: nothing added).
    sink = {"type": "store", "path": store}
    if cache is False:
        sink["result_cache_bytes"] = 0
    return toml({
        "node": {"data_dir": data},
        "api": {"address": api},
        "api.tokens.bench": {"token": "bench-token-0123456789abcdef", "allowed": [ALL]},
        "pipelines.main": {"batch_size": 1024, "batch_delay": "5ms"},
        "pipelines.main.queue": {"type": "memory", "max_events": 65536},
        # The loader on loopback: no ingest token (ingest is authenticated by default).
        "pipelines.main.sources.http": {"type": "http", "address": "api", "auth": "none", "max_body_bytes": "64MiB"},
        "pipelines.main.sinks.store": sink,
    })


class Sluice:
    def __init__(self, name, binary, store, workdir, cache):
        self.name, self.binary, self.store = name, binary, store
        self.dir = os.path.join(workdir, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.api = f"127.0.0.1:{free_port()}"
        self.cfg = os.path.join(self.dir, "sluice.toml")
        with open(self.cfg, "w") as f:
            f.write(sluice_config(os.path.join(self.dir, "data"), store, self.api, cache))
        self.log = open(os.path.join(self.dir, "sluice.log"), "wb")
        self.proc = subprocess.Popen([binary, "run", self.cfg], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(tuple(self.api.rsplit(":", 1)), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{name}: sluice did not start, see {self.log.name}")
                time.sleep(0.1)
        self.client = Client(f"http://{self.api}", "bench-token-0123456789abcdef")

    def count(self):
        return self.client.json("POST", "/api/v1/search", {"query": "", "size": 1})["total"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def query(self, q):
        return timed(self, q, f"/api/v1/{q[1]}", q[2])

    @staticmethod
    def normalise(q, raw):
        r = json.loads(raw)
        if q[1] == "search":
            return {"total": r["total"], "hits": [epoch_ms(h["event"]["@timestamp"]) for h in r["hits"]]}
        agg = list(r["aggs"].values())[0]
        out = {"total": r["total"], "buckets": [(b["key"], b["count"]) for b in agg["buckets"]]}
        if agg["type"] == "terms":
            out["other"] = agg["other"]
        return out


def load_sluice(binary, store, workdir, n_base):
    s = Sluice("loader", binary, store, workdir, cache=None)
    t0 = time.time()
    sent, batch = 0, []
    for ts, doc in events(n_base):
        doc = {"@timestamp": iso(ts), **doc}
        batch.append(json.dumps(doc, separators=(",", ":")))
        if len(batch) == 10_000:
            s.client.json("POST", "/ndjson", ("\n".join(batch) + "\n").encode())
            sent += len(batch); batch = []
    if batch:
        s.client.json("POST", "/ndjson", ("\n".join(batch) + "\n").encode())
        sent += len(batch)
    deadline = time.time() + 600
    while s.count() < sent:
        if time.time() > deadline:
            raise RuntimeError(f"sluice stored {s.count()} of {sent}")
        time.sleep(0.5)
    print(f"# sluice: {sent} events loaded in {time.time() - t0:.1f} s (generation included)", flush=True)
    s.stop()
    return sent


def store_segments(store):
    """Segments per partition, from each partition's meta.json."""
    out = {}
    for p in sorted(os.listdir(store)):
        m = os.path.join(store, p, "meta.json")
        if os.path.exists(m):
            with open(m) as f:
                out[p] = len(json.load(f)["segments"])
    return out


# ------------------------------------------------------------ OpenSearch

class OpenSearch:
    def __init__(self, name, url, cache):
        self.name, self.url = name, url.rstrip("/")
        self.client = Client(self.url)
        self.param = "true" if cache else "false"

    def query(self, q):
        return timed(self, q, f"/{INDEX}/_search?request_cache={self.param}", q[3])

    @staticmethod
    def normalise(q, raw):
        r = json.loads(raw)
        total = r["hits"]["total"]["value"]
        if q[1] == "search":
            # The last sort value is @timestamp (the only one, or the tiebreak of a field sort).
            return {"total": total, "hits": [h["sort"][-1] for h in r["hits"]["hits"]]}
        agg = list(r["aggregations"].values())[0]
        out = {"total": total, "buckets": [(b["key"], b["doc_count"]) for b in agg["buckets"]]}
        if "sum_other_doc_count" in agg:
            out["other"] = agg["sum_other_doc_count"]
        return out


BULK_DOCS = 10_000


def load_opensearch(url, n_base, reuse, bulk_connections=2, progress_path=None):
    """Loads the data set into INDEX. Each document's `_id` is its place in
    the data set, so a load sent twice stores nothing twice; with `reuse`
    and `progress_path` (the bodies OpenSearch acknowledged without a gap,
    written as they are acknowledged) a load that was stopped resumes after
    its last acknowledged body instead of starting again: 100 M documents
    take longer than a session."""
    c = Client(url)
    expected = n_base + NEEDLES
    status, raw, _ = c.request("GET", f"/{INDEX}/_count")
    if reuse and status == 200 and json.loads(raw)["count"] == expected:
        print(f"# opensearch: reusing {INDEX} ({expected} documents)", flush=True)
        return

    def uuid():
        return c.json("GET", f"/{INDEX}/_settings")[INDEX]["settings"]["index"]["uuid"]
    done = 0
    if reuse and status == 200 and progress_path and os.path.exists(progress_path):
        with open(progress_path) as f:
            prog = json.load(f)
        if prog.get("uuid") == uuid() and prog.get("events") == n_base:
            done = prog["done"]
            print(f"# opensearch: resuming {INDEX} after {done} acknowledged documents", flush=True)
    if done == 0:
        c.request("DELETE", f"/{INDEX}")
        c.json("PUT", f"/{INDEX}", MAPPING)
    index_uuid = uuid()
    t0 = time.time()
    # `--bulk-connections` senders, each on its own keep-alive connection:
    # OpenSearch indexes one bulk request per write thread, so one sender
    # leaves a core idle while the next body is generated.
    bodies = queue.Queue(maxsize=2 * bulk_connections)
    failed = []
    lock = threading.Lock()
    acked, mark = set(), [done // BULK_DOCS]

    def acknowledged(k):
        # Body k is in: move the mark over every body acknowledged without
        # a gap, and save it.
        with lock:
            acked.add(k)
            moved = False
            while mark[0] in acked:
                acked.discard(mark[0])
                mark[0] += 1
                moved = True
            if moved and progress_path:
                tmp = progress_path + ".tmp"
                with open(tmp, "w") as f:
                    json.dump({"uuid": index_uuid, "events": n_base,
                               "done": min(mark[0] * BULK_DOCS, expected)}, f)
                os.replace(tmp, progress_path)

    def sender():
        own = Client(url)
        while (item := bodies.get()) is not None:
            k, body = item
            if not failed:
                r = own.json("POST", f"/{INDEX}/_bulk", body)
                if r.get("errors"):
                    failed.append("bulk errors: " + json.dumps(r)[:500])
                else:
                    acknowledged(k)

    senders = [threading.Thread(target=sender) for _ in range(bulk_connections)]
    for t in senders:
        t.start()
    lines = []
    for j, (ts, doc) in enumerate(events(n_base)):
        if j < done:
            continue
        lines.append(f'{{"index":{{"_id":"{j}"}}}}')
        lines.append(json.dumps({"@timestamp": ts, **doc}, separators=(",", ":")))
        if len(lines) == 2 * BULK_DOCS or j == expected - 1:
            bodies.put((j // BULK_DOCS, ("\n".join(lines) + "\n").encode()))
            lines = []
            if failed:
                break
    for _ in senders:
        bodies.put(None)
    for t in senders:
        t.join()
    if failed:
        raise RuntimeError(failed[0])
    c.json("PUT", f"/{INDEX}/_settings", {"index": {"refresh_interval": "1s"}})
    c.json("POST", f"/{INDEX}/_refresh")
    # Let background merges settle (not a force-merge).
    while True:
        st = c.json("GET", f"/{INDEX}/_stats/merge")
        if st["_all"]["primaries"]["merges"]["current"] == 0:
            break
        time.sleep(1)
    got = c.json("GET", f"/{INDEX}/_count")["count"]
    if got != expected:
        raise RuntimeError(f"opensearch holds {got} of {expected}")
    print(f"# opensearch: {got} documents loaded in {time.time() - t0:.1f} s (generation included"
          + (f", resumed after {done}" if done else "") + ")", flush=True)


def opensearch_segments(url):
    r = Client(url).json("GET", f"/{INDEX}/_segments")
    shards = r["indices"][INDEX]["shards"]["0"]
    return sum(len(s["segments"]) for s in shards)


# ----------------------------------------------------------- measuring

def pct(v, p):
    v = sorted(v)
    k = (len(v) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def measure(systems, runs, warmup):
    """{query: {system: [seconds]}}; systems alternated request by request."""
    out = {}
    for q in QUERIES:
        answers = {}
        for s in systems:
            # At least one request: its answer is compared across systems.
            for _ in range(max(warmup, 1)):
                _, raw = s.query(q)
            answers[s.name] = s.normalise(q, raw)
        ref_name, ref = next(iter(answers.items()))
        for name, a in answers.items():
            if a != ref:
                raise RuntimeError(f"{q[0]}: {name} answers differently from {ref_name}:\n"
                                   f"{json.dumps(a)[:600]}\n{json.dumps(ref)[:600]}")
        times = {s.name: [] for s in systems}
        for r in range(runs):
            order = systems[r % len(systems):] + systems[:r % len(systems)]
            for s in order:
                dt, _ = s.query(q)
                times[s.name].append(dt)
        out[q[0]] = {"times": times, "total": ref["total"]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opensearch")
    ap.add_argument("--sluice", action="append", default=[])
    ap.add_argument("--data")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--sets", type=int, default=1)
    ap.add_argument("--events", type=int, default=BASE_EVENTS, help="base events (plus 20 with the unique token)")
    ap.add_argument("--bulk-connections", type=int, default=2, help="concurrent _bulk senders loading OpenSearch")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.events != BASE_EVENTS:
        # Another size is another index: the 2 M one stays for --reuse.
        global INDEX
        INDEX = f"{INDEX}-{a.events}"
    bins = [tuple(s.split("=", 1)) for s in a.sluice] or [("new", DEFAULT_BIN), ("new-cache", DEFAULT_BIN)]

    def cache_of(name, binary):
        if binary.endswith(":plain"):
            return None
        return name.endswith("-cache")
    work = a.data or tempfile.mkdtemp(prefix="sluice-search-bench-")
    store = os.path.join(work, "store")
    loaded = a.reuse and os.path.exists(os.path.join(work, "loaded"))
    if not loaded:
        shutil.rmtree(store, ignore_errors=True)
        load_sluice(bins[0][1].removesuffix(":plain"), store, work, a.events)
        open(os.path.join(work, "loaded"), "w").close()
    else:
        print(f"# sluice: reusing {store}", flush=True)
    print(f"# sluice segments per partition: {store_segments(store)}", flush=True)
    systems = []
    try:
        for name, binary in bins:
            systems.append(Sluice(name, binary.removesuffix(":plain"), store, work, cache=cache_of(name, binary)))
        expected = a.events + NEEDLES
        for s in systems:
            if s.count() != expected:
                raise RuntimeError(f"{s.name} sees {s.count()} events, expected {expected}")
        if a.opensearch:
            load_opensearch(a.opensearch, a.events, a.reuse, a.bulk_connections,
                            os.path.join(work, f"{INDEX}.progress.json"))
            print(f"# opensearch segments: {opensearch_segments(a.opensearch)}", flush=True)
            systems.append(OpenSearch("opensearch", a.opensearch, cache=False))
            systems.append(OpenSearch("opensearch-cache", a.opensearch, cache=True))
        print(f"# load average before: {os.getloadavg()}", flush=True)
        sets = []
        for i in range(a.sets):
            m = measure(systems, a.runs, a.warmup)
            sets.append(m)
            print(f"\n## set {i + 1} of {a.sets}, load average {os.getloadavg()}")
            print("| query | hits/total | " + " | ".join(f"{s.name} p50 / p99 ms" for s in systems) + " |")
            print("|---|---|" + "---|" * len(systems))
            for q in QUERIES:
                r = m[q[0]]
                cells = [f"{pct(r['times'][s.name], .5) * 1e3:.1f} / {pct(r['times'][s.name], .99) * 1e3:.1f}"
                         for s in systems]
                print(f"| {q[0]} | {r['total']} | " + " | ".join(cells) + " |", flush=True)
        if a.sets > 1:
            print(f"\n## min / median / max over {a.sets} sets")
            print("| query | " + " | ".join(f"{s.name} p50 | {s.name} p99" for s in systems) + " |")
            print("|---|" + "---|---|" * len(systems))
            for q in QUERIES:
                cells = []
                for s in systems:
                    for p in (.5, .99):
                        v = [pct(m[q[0]]["times"][s.name], p) * 1e3 for m in sets]
                        cells.append(f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}")
                print(f"| {q[0]} | " + " | ".join(cells) + " |")
        if a.json:
            with open(a.json, "w") as f:
                json.dump([{q: {"total": r["total"], "times_ms": {k: [x * 1e3 for x in v] for k, v in r["times"].items()}}
                            for q, r in m.items()} for m in sets], f)
    finally:
        for s in systems:
            if isinstance(s, Sluice):
                s.stop()


if __name__ == "__main__":
    main()
