#!/usr/bin/env python3
"""Events per CPU-second of the `gelf` source over TCP next to the `tcp`
ndjson source, in one sluice process (issue #21).

Two pipelines, each source -> memory queue -> blackhole: `g` (gelf, TCP,
NUL-delimited) and `n` (tcp, ndjson). Each round sends N copies of the
thesis event (testdata/thesis/event.json) to one of them — as GELF for `g`
(message -> short_message, the other fields as `_` additional fields, the
@timestamp as epoch seconds), as the JSON line for `n` — and waits until the
pipeline's `sluice_pipeline_events_out_total` reaches the count. The
sluice process's CPU (utime+stime from /proc) over the round divides the
events. Rounds alternate gelf / ndjson; the median per source is printed.

Usage: python3 bench/gelf_vs_tcp.py [--bin target/debug/sluice] [--events 200000] [--rounds 3]
"""
import argparse
import json
import tempfile

from benchlib import DEBUG_BIN, blackhole_node, cpu_rounds, free_port, send_tcp, start_node, stop, thesis_event, wait_api


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=DEBUG_BIN)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ev, line = thesis_event()
    g = {"version": "1.1", "host": ev["host"], "short_message": ev["message"], "timestamp": 1463561074.737}
    for k, v in ev.items():
        if k not in ("message", "host", "@timestamp"):
            g["_" + k.lstrip("@")] = v
    gelf = json.dumps(g, separators=(",", ":")).encode() + b"\0"
    tmp = tempfile.mkdtemp(prefix="sluice-gelf-bench-")
    api, gp, np_ = free_port(), free_port(), free_port()
    config = blackhole_node(tmp, api, [("g", "gelf", gp, 'mode = "tcp"\n'), ("n", "tcp", np_, "")])
    p = start_node(a.bin, tmp, config)
    try:
        wait_api(api, "g")
        med = cpu_rounds(p, api, {
            "gelf": ("g", lambda: send_tcp(gp, gelf * a.events)),
            "tcp": ("n", lambda: send_tcp(np_, line * a.events)),
        }, a.rounds, a.events)
        gm, tm = med["gelf"], med["tcp"]
        print(f"median gelf {gm:,.0f} events/CPU-s, tcp ndjson {tm:,.0f} events/CPU-s, ratio gelf/tcp {gm / tm:.2f}")
        print(f"gelf payload {len(gelf)} bytes, ndjson line {len(line)} bytes")
    finally:
        stop(p)


if __name__ == "__main__":
    main()
