#!/usr/bin/env python3
"""Duplicates after kill -9: the single-node layout (persisted queue, a file
sink and the embedded store) takes EVENTS sequence-numbered events over
HTTP (`POST /ndjson`, BATCH events per request, acknowledged once queued),
is killed with SIGKILL as soon as KILL_AT events were acknowledged,
restarted, and sent the rest (the request in flight at the kill included).
Then every sequence number is counted in the file sink's output and in the
store (read back through the search API): missing and duplicated events.

Usage:
  bench/crash_duplicates.py [--bin target/release/sluice] [--events 200000]
      [--kill-at 100000] [--rate 0|EVENTS_PER_S] [--batch 1000] [--json OUT]

--rate 0 sends as fast as the node acknowledges (burst). Prints one JSON
object; BENCHMARKS.md ("Crash duplicates") quotes it.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from benchlib import ALL, free_port, toml, wait_port

TOKEN = "crash-bench-ingest-token-0123456789"
ADMIN = "crash-bench-admin-token-0123456789"


def config(d, api, ingest, token=True):
    tables = {
        "node": {"data_dir": f"{d}/data"},
        "api": {"address": f"127.0.0.1:{api}"},
        "api.tokens.admin": {"token": ADMIN, "allowed": [ALL]},
        "pipelines.main": {"batch_size": 128, "batch_delay": "50ms"},
        "pipelines.main.queue": {"type": "persisted", "max_bytes": "1GiB", "fsync": "1s"},
        "pipelines.main.sources.http": {"type": "http", "address": f"127.0.0.1:{ingest}"},
    }
    if token:
        tables["pipelines.main.sources.http.tokens.bench"] = {"token": TOKEN, "group": "bench"}
    tables["pipelines.main.sinks.events"] = {"type": "file", "path": f"{d}/data/events.ndjson"}
    tables["pipelines.main.sinks.store"] = {"type": "store"}
    return toml(tables)


def start(args, cfg, log):
    env = dict(os.environ, SLUICE_LOG="info")
    return subprocess.Popen([args.bin, "run", cfg], stdout=subprocess.DEVNULL, stderr=open(log, "ab"), env=env)


def post(port, body):
    """POST /ndjson; the status code, 0 when the connection failed."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/ndjson",
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-ndjson", "Authorization": f"Bearer {TOKEN}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def batch_body(b, size):
    return "".join(f'{{"message":"crash {n}","seq":{n}}}\n' for n in range(b * size, (b + 1) * size)).encode()


def send(port, batches, args, acked, stop_after=None, on_ack=None):
    """Sends batches (indexes) in order at the rate; marks acknowledged ones.
    Stops at the first failure, or once `stop_after` events are acknowledged."""
    t0 = time.time()
    sent = 0
    for b in batches:
        if args.rate > 0:
            due = t0 + sent / args.rate
            if due > time.time():
                time.sleep(due - time.time())
        if post(port, batch_body(b, args.batch)) != 200:
            return False
        acked[b] = True
        sent += args.batch
        if on_ack:
            on_ack()
        if stop_after is not None and sum(acked) * args.batch >= stop_after:
            return True
    return True


def file_seqs(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            i = line.find('"seq":')
            if i >= 0:
                out.append(int(line[i + 6:].split(",")[0].split("}")[0]))
    return out


def api_get(api, path):
    req = urllib.request.Request(f"http://127.0.0.1:{api}{path}", headers={"Authorization": f"Bearer {ADMIN}"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def store_total(api):
    return api_get(api, "/api/v1/search?query=crash&from=now-1d&size=1")["total"]


def store_seqs(api):
    out = []
    after = None
    while True:
        q = "/api/v1/search?query=crash&from=now-1d&size=1000&fields=seq"
        if after:
            q += "&search_after=" + urllib.parse.quote(after)
        r = api_get(api, q)
        for h in r["hits"]:
            out.append(int(h["event"]["seq"]))
        after = r.get("next")
        if not after:
            return out


def account(seqs, total):
    seen = {}
    for s in seqs:
        seen[s] = seen.get(s, 0) + 1
    return {
        "lines": len(seqs),
        "unique": len(seen),
        "missing": sum(1 for n in range(total) if n not in seen),
        "duplicates": sum(c - 1 for c in seen.values()),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/sluice")
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--kill-at", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=0.0, help="events/s; 0 = as fast as acknowledged")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    ap.add_argument("--no-token", action="store_true", help="for a sluice older than ingest tokens (issue #18)")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    d = tempfile.mkdtemp(prefix="sluice-crash-")
    api, ingest = free_port(), free_port()
    cfg = os.path.join(d, "c.toml")
    with open(cfg, "w") as f:
        f.write(config(d, api, ingest, token=not args.no_token))
    log = os.path.join(d, "log")
    out = os.path.join(d, "data", "events.ndjson")
    nb = args.events // args.batch
    acked = [False] * nb

    proc = start(args, cfg, log)
    wait_port(ingest, proc, 60)
    wait_port(api, proc, 60)
    send(ingest, range(nb), args, acked, stop_after=args.kill_at)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    acked_at_kill = sum(acked) * args.batch
    file_at_kill = len(file_seqs(out))

    proc = start(args, cfg, log)
    wait_port(ingest, proc, 60)
    wait_port(api, proc, 60)
    if not send(ingest, [b for b in range(nb) if not acked[b]], args, acked):
        sys.exit("a request failed after the restart")
    # Wait until both sinks hold every event and nothing changes for 3 s.
    last, stable_since, deadline = None, time.time(), time.time() + 600
    while time.time() < deadline:
        now = (len(file_seqs(out)), store_total(api))
        if now != last:
            last, stable_since = now, time.time()
        elif now[0] >= args.events and now[1] >= args.events and time.time() - stable_since >= 3:
            break
        time.sleep(0.5)
    result = {
        "events": args.events,
        "rate": args.rate or "burst",
        "batch": args.batch,
        "acked_at_kill": acked_at_kill,
        "file_lines_at_kill": file_at_kill,
        "file": account(file_seqs(out), args.events),
        "store": account(store_seqs(api), args.events),
    }
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.keep:
        print(f"kept {d}", file=sys.stderr)
    else:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
