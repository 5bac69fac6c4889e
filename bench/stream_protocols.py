#!/usr/bin/env python3
"""Events per CPU-second of the `beats` (Lumberjack v2) and `fluent_forward`
sources next to the `tcp` ndjson source, in one sluice process (issue #21).

Three pipelines, each source -> memory queue -> blackhole. Each round sends
N copies of the thesis event (testdata/thesis/event.json) to one of them
with an in-script encoder (not the Go clients: their own CPU would share the
two cores with sluice): to `beats` as windows of W JSON data frames
(`--compress` wraps each window in one zlib frame), reading each window's
ACK before the next (as Beats do); to `fluent_forward` as PackedForward
messages of W records with a `chunk`, reading each `{"ack": ...}`; to
`tcp` as ndjson lines in one stream. The sluice process's CPU (utime+stime
from /proc) over the round divides the events; the median per source is
printed. A memory queue acknowledges when the blackhole took the batch, so
the ACK round trip is in the measurement.

Usage: python3 bench/stream_protocols.py [--bin target/debug/sluice] [--events 200000] [--window 1000] [--rounds 3] [--compress]
"""
import argparse
import socket
import struct
import tempfile
import zlib

from benchlib import DEBUG_BIN, blackhole_node, cpu_rounds, free_port, send_tcp, start_node, stop, thesis_event, wait_api


def mp(v):
    """A minimal msgpack encoder (str, int, dict, list, bytes, ext time)."""
    if isinstance(v, bool):
        return b"\xc3" if v else b"\xc2"
    if v is None:
        return b"\xc0"
    if isinstance(v, int):
        return struct.pack(">Bq", 0xd3, v)
    if isinstance(v, float):
        return struct.pack(">Bd", 0xcb, v)
    if isinstance(v, str):
        b = v.encode()
        return struct.pack(">BI", 0xdb, len(b)) + b
    if isinstance(v, bytes):
        return struct.pack(">BI", 0xc6, len(v)) + v
    if isinstance(v, list):
        return struct.pack(">BI", 0xdd, len(v)) + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        return struct.pack(">BI", 0xdf, len(v)) + b"".join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(v)


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise SystemExit("connection closed")
        b += chunk
    return b


def send_beats(port, doc, n, window, compress):
    frames = b"".join(b"2J" + struct.pack(">II", i + 1, len(doc)) + doc for i in range(window))
    with socket.create_connection(("127.0.0.1", port)) as s:
        sent = 0
        while sent < n:
            w = min(window, n - sent)
            body = frames if w == window else b"".join(b"2J" + struct.pack(">II", i + 1, len(doc)) + doc for i in range(w))
            if compress:
                z = zlib.compress(body, 3)
                body = b"2C" + struct.pack(">I", len(z)) + z
            s.sendall(b"2W" + struct.pack(">I", w) + body)
            ack = recv_exact(s, 6)
            assert ack == b"2A" + struct.pack(">I", w), ack
            sent += w


def send_forward(port, record, n, window):
    entry = b"\x92" + b"\xd7\x00" + struct.pack(">II", 1463561074, 737000000) + mp(record)
    with socket.create_connection(("127.0.0.1", port)) as s:
        sent, k = 0, 0
        while sent < n:
            w = min(window, n - sent)
            chunk = f"c{k}"
            s.sendall(mp(["bench", entry * w, {"chunk": chunk, "size": w}]))
            # {"ack": chunk} as rmpv writes it: fixmap, fixstr "ack", fixstr chunk.
            head = recv_exact(s, 6)
            assert head[:5] == b"\x81\xa3ack" and head[5] & 0xe0 == 0xa0, head
            assert recv_exact(s, head[5] & 0x1f) == chunk.encode()
            sent += w
            k += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=DEBUG_BIN)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compress", action="store_true")
    a = ap.parse_args()
    ev, line = thesis_event()
    doc = line[:-1]
    tmp = tempfile.mkdtemp(prefix="sluice-stream-bench-")
    api, bp, fp, tp = free_port(), free_port(), free_port(), free_port()
    config = blackhole_node(tmp, api, [("b", "beats", bp, ""), ("f", "fluent_forward", fp, ""), ("n", "tcp", tp, "")])
    p = start_node(a.bin, tmp, config)
    try:
        wait_api(api, "b")
        med = cpu_rounds(p, api, {
            "beats": ("b", lambda: send_beats(bp, doc, a.events, a.window, a.compress)),
            "fluent_forward": ("f", lambda: send_forward(fp, ev, a.events, a.window)),
            "tcp": ("n", lambda: send_tcp(tp, line * a.events)),
        }, a.rounds, a.events)
        t = med["tcp"]
        print(" ".join(f"median {k} {v:,.0f} events/CPU-s (x{v / t:.2f} of tcp)" for k, v in med.items()))
        print(f"window {a.window}, compress {a.compress}, ndjson line {len(line)} bytes")
    finally:
        stop(p)


if __name__ == "__main__":
    main()
