#!/usr/bin/env python3
"""Events per CPU-second of the HTTP ingest sources (`splunk_hec`, `loki`
JSON and snappy protobuf, `otlp` OTLP/HTTP protobuf and JSON) next to the `tcp` ndjson source, in one sluice
process (issue #21).

One pipeline per source, each source -> memory queue -> blackhole, all
with `auth = "none"` (the token check is one constant-time compare per
request). Each round sends N copies of the thesis event
(testdata/thesis/event.json) to one source: for `splunk_hec` as HEC event
objects (`event` = the thesis object without `@timestamp`, `time` in epoch
seconds), concatenated, `--batch` per request; for `loki` as one stream
whose labels are the event's string fields and whose values are
[ns, message], `--batch` per request, as JSON and as a snappy protobuf
(literal-only snappy, written here); for `otlp` as one resource and scope
whose records have the message as body, the time, a severity and the
event's other string fields as attributes, `--batch` per request, as
protobuf and as OTLP/JSON, and the same protobuf request over OTLP/gRPC
(`LogsService/Export`, one unary call per batch on one HTTP/2 channel) when
the Python running this has `grpcio` (the project venv has it:
`$(scripts/python-env.sh) bench/http_protocols.py`; without it that case
is left out, saying so); for `tcp` as the JSON line on one
connection. It waits until the pipeline's `sluice_pipeline_events_out_total`
reaches the count; the sluice process's CPU (utime+stime from /proc) over
the round divides the events. The median per source is printed.

Usage: python3 bench/http_protocols.py [--bin target/debug/sluice] [--events 100000] [--batch 500] [--rounds 3]
       (with the venv's python for the OTLP/gRPC case)
"""
import argparse
import http.client
import json
import tempfile

from benchlib import DEBUG_BIN, blackhole_node, cpu_rounds, free_port, send_tcp, start_node, stop, thesis_event, wait_api


def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def pb(field, b):
    return bytes([(field << 3) | 2]) + varint(len(b)) + b


def snappy_literal(b):
    out = varint(len(b))
    for i in range(0, len(b), 65536):
        c = b[i:i + 65536]
        out += bytes([62 << 2]) + (len(c) - 1).to_bytes(3, "little") + c
    return out


def bodies(ev, batch):
    ts_s = 1463561074.737
    ns = 1463561074737000000
    hec_ev = {k: v for k, v in ev.items() if k != "@timestamp"}
    hec = ("".join(json.dumps({"time": ts_s, "host": ev["host"], "event": hec_ev}, separators=(",", ":")) for _ in range(batch))).encode()
    labels = {k.lstrip("@"): v for k, v in ev.items() if isinstance(v, str) and k not in ("message", "@timestamp")}
    loki_json = json.dumps({"streams": [{"stream": labels, "values": [[str(ns), ev["message"]]] * batch}]}, separators=(",", ":")).encode()
    label_text = "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
    entry = pb(1, b"\x08" + varint(ns // 10**9) + b"\x10" + varint(ns % 10**9)) + pb(2, ev["message"].encode())
    stream = pb(1, label_text.encode()) + b"".join(pb(2, entry) for _ in range(batch))
    loki_pb = snappy_literal(pb(1, stream))
    return hec, loki_json, loki_pb


def otlp_bodies(ev, batch):
    ns = 1463561074737000000
    attrs = {k.lstrip("@"): v for k, v in ev.items() if isinstance(v, str) and k not in ("message", "@timestamp")}

    def kv(k, v):
        return pb(1, k.encode()) + pb(2, pb(1, v.encode()))

    record = b"\x09" + ns.to_bytes(8, "little") + b"\x10\x09" + pb(3, b"INFO") + pb(5, pb(1, ev["message"].encode()))
    record += b"".join(pb(6, kv(k, v)) for k, v in attrs.items())
    scope = pb(1, pb(1, b"bench")) + b"".join(pb(2, record) for _ in range(batch))
    otlp_pb = pb(1, pb(1, pb(1, kv("service.name", "bench"))) + pb(2, scope))
    rec = {"timeUnixNano": str(ns), "severityNumber": 9, "severityText": "INFO", "body": {"stringValue": ev["message"]},
           "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}
    body = {"resourceLogs": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bench"}}]},
                              "scopeLogs": [{"scope": {"name": "bench"}, "logRecords": [rec] * batch}]}]}
    return otlp_pb, json.dumps(body, separators=(",", ":")).encode()


def post_all(name, port, path, headers, payload, requests):
    """`requests` POSTs of `payload` on one connection, each answered 200 or 204."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for _ in range(requests):
        conn.request("POST", path, body=payload, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status not in (200, 204):
            raise SystemExit(f"{name}: {resp.status} {body[:200]!r}")
    conn.close()


GRPC_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


def grpc_export_all(port, request, n):
    """`n` unary `Export` calls with the serialized request on one channel;
    each must answer OK (no partial success is expected for these records)."""
    import grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        export = ch.unary_unary(GRPC_EXPORT)  # bytes in, bytes out
        for _ in range(n):
            answer = export(request, timeout=30)
            assert answer == b"", f"otlp_grpc: partial success answer {answer!r}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=DEBUG_BIN)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    assert a.events % a.batch == 0, "--events must be a multiple of --batch"
    ev, line = thesis_event()
    hec, loki_json, loki_pb = bodies(ev, a.batch)
    otlp_pb, otlp_json = otlp_bodies(ev, a.batch)
    tmp = tempfile.mkdtemp(prefix="sluice-http-bench-")
    api, hp, lp, np_, op, gp = free_port(), free_port(), free_port(), free_port(), free_port(), free_port()
    none = 'auth = "none"\n'
    otlp = none + f'grpc_address = "127.0.0.1:{gp}"\n'
    config = blackhole_node(
        tmp, api, [("h", "splunk_hec", hp, none), ("l", "loki", lp, none), ("o", "otlp", op, otlp), ("n", "tcp", np_, "")]
    )
    p = start_node(a.bin, tmp, config)
    cases = [
        ("splunk_hec", "h", hp, "/services/collector/event", {"Content-Type": "application/json"}, hec),
        ("loki_json", "l", lp, "/loki/api/v1/push", {"Content-Type": "application/json"}, loki_json),
        ("loki_protobuf", "l", lp, "/loki/api/v1/push", {"Content-Type": "application/x-protobuf"}, loki_pb),
        ("otlp_protobuf", "o", op, "/v1/logs", {"Content-Type": "application/x-protobuf"}, otlp_pb),
        ("otlp_json", "o", op, "/v1/logs", {"Content-Type": "application/json"}, otlp_json),
        ("tcp", "n", np_, None, None, line),
    ]
    try:
        import grpc  # noqa: F401 (the venv's grpcio)

        cases.insert(-1, ("otlp_grpc", "o", gp, GRPC_EXPORT, None, otlp_pb))
    except ImportError:
        print("otlp_grpc left out: this Python has no grpcio (run with the venv's python: scripts/python-env.sh)")

    def sender(name, port, path, headers, payload):
        if path is None:
            return lambda: send_tcp(port, payload * a.events)
        if path == GRPC_EXPORT:
            return lambda: grpc_export_all(port, payload, a.events // a.batch)
        return lambda: post_all(name, port, path, headers, payload, a.events // a.batch)

    try:
        wait_api(api, "h")
        med = cpu_rounds(p, api, {c[0]: (c[1], sender(c[0], *c[2:])) for c in cases}, a.rounds, a.events)
        tm = med["tcp"]
        for name, _, _, _, _, payload in cases:
            m = med[name]
            size = len(payload) / (1 if name == "tcp" else a.batch)
            print(f"median {name}: {m:,.0f} events/CPU-s, ratio to tcp ndjson {m / tm:.2f}, {size:.0f} bytes/event on the wire")
    finally:
        stop(p)


if __name__ == "__main__":
    main()
