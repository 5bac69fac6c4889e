#!/usr/bin/env python3
"""Writes the text seed corpora of fuzz/seeds/<target>/ from testdata/.

Deterministic: run it again and nothing changes. The binary agent-protocol
frames and the batch encoding (agent_protocol/*, json_event/batch-*) are
written by the protocol crate's encoder instead:
    SLUICE_WRITE_SEEDS=1 cargo test -p sluice-protocol --test fuzz_seeds
Sources (testdata/SOURCES.md): the syslog and grok test vectors, the loghub
samples, the thesis's reference event; conditions and queries are the
languages' documented examples (crates/core/src/condition.rs,
docs/specs/ui-api.md).
"""
import gzip
import json
import os
import shutil
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SEEDS = os.path.join(ROOT, "fuzz", "seeds")
TD = os.path.join(ROOT, "testdata")
TEXT_TARGETS = ["syslog_5424", "syslog_3164", "kv", "date", "octet_framing", "json_event", "condition", "grok", "query_parse", "es_bulk", "http_auth", "gelf", "lumberjack", "fluent_forward", "splunk_hec", "loki", "otlp"]


def lines(path, n=None):
    with open(os.path.join(TD, path), encoding="utf-8") as f:
        out = [l.rstrip("\n") for l in f if l.strip()]
    return out if n is None else out[:n]


def vectors(path):
    return [json.loads(l) for l in lines(path)]


def write(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def main():
    for t in TEXT_TARGETS:
        d = os.path.join(SEEDS, t)
        if os.path.isdir(d):
            for f in os.listdir(d):
                if not f.startswith("batch-"):  # written by the protocol crate's test
                    os.remove(os.path.join(d, f))
    syslog = vectors("vectors/syslog-vectors.jsonl")
    linux = lines("loghub/Linux/Linux_2k.log", 12)
    openssh = lines("loghub/OpenSSH/OpenSSH_2k.log", 12)
    apache = lines("loghub/Apache/Apache_2k.log", 12)

    for i, v in enumerate(v for v in syslog if v["format"] == "rfc5424"):
        write("syslog_5424", f"vector-{i:03}.txt", v["input"])
    rfc3164 = [v["input"] for v in syslog if v["format"] != "rfc5424"]
    for i, s in enumerate(rfc3164 + [f"<13>{l}" for l in linux[:6]] + linux[6:] + openssh[:6]):
        write("syslog_3164", f"line-{i:03}.txt", s)

    # kv: the first byte picks the option set (fuzz_targets/kv.rs).
    kv = [l for l in linux + openssh if "=" in l][:8]
    for i, l in enumerate(kv):
        write("kv", f"loghub-{i:02}.bin", bytes([i % 4]) + l.encode())
    write("kv", "query-string.bin", b"\x01a=1&b=2?c:3&d=")
    write("kv", "brackets.bin", b'\x02<key-one>="v1", [k2]=\'v 2\' k3=')

    # date: byte 0 picks FORMATS[b % 10] and the offset b * 15 min (fuzz_targets/date.rs).
    dates = [
        "2016-05-18T08:44:34.737Z",  # ISO8601, the thesis event's @timestamp
        "1463561074",  # UNIX
        "1463561074737",  # UNIX_MS
        linux[0][:15],  # RFC3164: "Jun 14 15:16:01"
        "Wed, 18 May 2016 08:44:34 +0000",  # RFC2822
        "18/May/2016:08:44:34 +0000",  # HTTPDATE
        "2016-05-18 10:44:30,045",  # yyyy-MM-dd HH:mm:ss,SSS (the thesis's "creation")
        "20160518T104430.045+0200",  # yyyyMMdd'T'HHmmss.SSSZ
        apache[0][1:25],  # EEE MMM dd HH:mm:ss yyyy: "Sun Dec 04 04:47:44 2005"
        "05/18/16 10:44:30 AM UTC",  # MM/dd/yy hh:mm:ss a ZZZ
    ]
    for i, s in enumerate(dates):
        write("date", f"format-{i}.bin", bytes([i]) + s.encode())

    # octet_framing: byte 0 is the frame limit (b % 64 + 1) and the mode (b / 64).
    framed = "".join(f"{len(v['input'].encode())} {v['input']}" for v in syslog[:8] if v["format"] == "rfc5424")
    write("octet_framing", "octet-counted-auto.bin", bytes([63]) + framed.encode())
    write("octet_framing", "octet-counted.bin", bytes([255]) + framed.encode())
    write("octet_framing", "newline.bin", bytes([191]) + ("\n".join(linux[:4]) + "\n").encode())
    write("octet_framing", "newline-auto-long.bin", bytes([0]) + ("\n".join(apache[:3]) + "\n").encode())

    with open(os.path.join(TD, "thesis", "event.json"), "rb") as f:
        write("json_event", "thesis-event.json", f.read().strip())
    for i, l in enumerate(lines("vectors/grok-vectors.jsonl", 6) + lines("vectors/syslog-vectors.jsonl", 4)):
        write("json_event", f"vector-line-{i:02}.json", l)

    conditions = [
        '[status] >= 500 and [service] == "api"',
        '"_grokparsefailure" in [tags]',
        "[message] =~ /timeout|refused/ or ![user][id]",
        '[@group] in ["acme", "globex"] and exists([trace_id])',
        '[level] == "ERROR"',
        "[codes] == [200, 404]",
        "[big] > 9223372036854775807",
        '"x" not in [status] xor [ok] nand true',
        "!([a][b] != 1.5e3) or [n][m] <= -2",
        "[message] !~ '(?i)^failed password' and [@timestamp] > 0",
    ]
    for i, c in enumerate(conditions):
        write("condition", f"doc-{i:02}.txt", c)

    # grok: "pattern\ninput" (fuzz_targets/grok.rs); the whole text is also matched
    # against COMBINEDAPACHELOG.
    gv = vectors("vectors/grok-vectors.jsonl")[:30] + vectors("vectors/grok-match-vectors.jsonl")[:10]
    for i, v in enumerate(gv):
        write("grok", f"vector-{i:03}.txt", f"{v['pattern']}\n{v['input']}")
    for i, l in enumerate(apache[:4]):
        write("grok", f"apache-error-{i}.txt", f"%{{HTTPD_ERRORLOG}}\n{l}")
    write("grok", "sshd.txt", "%{SYSLOGTIMESTAMP:ts} %{SYSLOGHOST:host} %{DATA:prog}(?:\\[%{POSINT:pid:int}\\])?: %{GREEDYDATA:msg}\n" + openssh[1])

    queries = [
        "error",
        'service:api AND status:>=500',
        "a b OR NOT c",
        "status:>10",
        '"Failed password" AND host:web-*',
        "(a OR b) AND -c",
        "latency:[10 TO 200}",
        "message:/time.?out/ OR level:error",
        "@group:acme AND @host:ubuntu-1 AND NOT tags:_grokparsefailure",
        "user.id:* AND _exists_:trace_id",
    ]
    for i, q in enumerate(queries):
        write("query_parse", f"query-{i:02}.txt", q)

    # es_bulk: Elasticsearch _bulk bodies as Filebeat, Logstash and the clients send them
    # (action line, then the source line for index/create, none for delete).
    thesis = open(os.path.join(TD, "thesis", "event.json"), encoding="utf-8").read().strip()
    thesis = json.dumps(json.loads(thesis), separators=(",", ":"))
    bulks = {
        "index-create-delete.ndjson": '{"index":{"_index":"logs"}}\n' + thesis + '\n{"create":{"_index":"logs","_id":"1"}}\n{"message":"a"}\n{"delete":{"_index":"logs","_id":"1"}}\n',
        "filebeat.ndjson": "".join('{"create":{}}\n' + json.dumps({"@timestamp": "2016-05-18T08:44:34.737Z", "message": l}) + "\n" for l in linux[:4]),
        "update.ndjson": '{"update":{"_index":"logs","_id":"7"}}\n{"doc":{"status":500}}\n',
        "no-trailing-newline.ndjson": '{"index":{}}\n{"message":"' + openssh[0].replace('"', "'") + '"}',
        "require-alias.ndjson": '{"index":{"_index":"logs","require_alias":true}}\n{"message":"x","n":123456789012345678901234567890}\n',
    }
    for name, body in bulks.items():
        write("es_bulk", name, body)

    # gelf: first byte even → one payload (plain, zlib, gzip); odd → chunk
    # datagrams, each prefixed by its length (one byte), out of order.
    gelf_msg = json.dumps({"version": "1.1", "host": "web-1", "short_message": json.loads(thesis).get("message", "x"),
                           "timestamp": 1463561074.737, "level": 3, "_user": "ann", "_id": "r1"}, separators=(",", ":")).encode()
    write("gelf", "plain.bin", b"\x00" + gelf_msg)
    write("gelf", "zlib.bin", b"\x00" + zlib.compress(gelf_msg))
    write("gelf", "gzip.bin", b"\x00" + gzip.compress(gelf_msg, mtime=0))
    write("gelf", "not-json.bin", b"\x00" + linux[0].encode())
    write("gelf", "deep.bin", b"\x00" + b'{"short_message":"x","_a":' + b"[" * 40 + b"1" + b"]" * 40 + b"}")
    z = zlib.compress(gelf_msg)
    parts = [z[i:i + 100] for i in range(0, len(z), 100)]
    chunks = [b"\x1e\x0f" + bytes(range(1, 9)) + bytes([i, len(parts)]) + part for i, part in enumerate(parts)]
    order = list(range(len(chunks)))[::-1] + [0]
    write("gelf", "chunks.bin", b"\x01" + b"".join(bytes([len(chunks[i])]) + chunks[i] for i in order))

    # lumberjack: a window of JSON frames (the thesis event with Beats
    # metadata), the same window zlib-compressed, a v1 frame, a bomb.
    import struct
    beat = json.loads(thesis)
    beat.update({"@metadata": {"beat": "winlogbeat", "type": "_doc"}, "host": {"name": "win-1"},
                 "agent": {"type": "winlogbeat"}, "winlog": {"channel": "Security", "event_id": 4624}})
    docs = [json.dumps(beat, separators=(",", ":")).encode(), b'{"message":"two"}']
    lj = b"".join(b"2J" + struct.pack(">II", i + 1, len(d)) + d for i, d in enumerate(docs))
    write("lumberjack", "json-window.bin", b"2W" + struct.pack(">I", 2) + lj)
    z = zlib.compress(lj)
    write("lumberjack", "compressed-window.bin", b"2W" + struct.pack(">I", 2) + b"2C" + struct.pack(">I", len(z)) + z)
    write("lumberjack", "v1.bin", b"1W" + struct.pack(">I", 1))
    bomb = zlib.compress(b"2J" + struct.pack(">II", 1, 1 << 20) + b" " * (1 << 20))
    write("lumberjack", "bomb.bin", b"2W" + struct.pack(">I", 1) + b"2C" + struct.pack(">I", len(bomb)) + bomb)

    # fluent_forward: the four modes with the thesis event as record, a
    # chunk option, a gzip bomb. msgpack written here by hand (no package).
    def mp(v):
        if v is None:
            return b"\xc0"
        if isinstance(v, bool):
            return b"\xc3" if v else b"\xc2"
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
    record = json.loads(thesis)
    event_time = b"\xd7\x00" + struct.pack(">II", 1700000000, 5)
    write("fluent_forward", "message.bin", mp(["app.web", 1700000000, record, {"chunk": "c1"}]))
    write("fluent_forward", "forward.bin", mp(["app.web", [[1700000000, record], [1700000001, {"message": "two"}]]]))
    entries = b"\x92" + event_time + mp(record) + b"\x92" + event_time + mp({"message": "two"})
    write("fluent_forward", "packed.bin", mp(["app.web", entries, {"chunk": "c2"}]))
    write("fluent_forward", "compressed.bin", mp(["app.web", gzip.compress(entries, mtime=0), {"compressed": "gzip", "chunk": "c3"}]))
    write("fluent_forward", "bomb.bin", mp(["app.web", gzip.compress(b"\xc0" * (1 << 20), mtime=0), {"compressed": "gzip"}]))

    # http_auth: Authorization header values (Bearer, ApiKey raw and base64 id:key, Basic).
    auths = {
        "bearer.txt": "Bearer sluice_ingest_0123456789abcdef",
        "apikey-raw.txt": "ApiKey sluice_ingest_0123456789abcdef",
        "apikey-base64.txt": "ApiKey aWQ6a2V5LXNlY3JldA==",
        "basic.txt": "Basic ZWxhc3RpYzpjaGFuZ2VtZQ==",
        "basic-no-colon.txt": "Basic dXNlcg==",
        "lowercase.txt": "bearer   token-with-spaces-before",
    }
    for name, v in auths.items():
        write("http_auth", name, v)

    # splunk_hec: first byte even → an /event body, odd → a /raw body.
    hec = [{"event": l, "time": 1463561074.737, "host": "web-1", "sourcetype": "linux"} for l in linux[:3]]
    write("splunk_hec", "events.bin", b"\x00" + "".join(json.dumps(e) for e in hec).encode())
    write("splunk_hec", "event-object.bin", b"\x00" + json.dumps({"event": json.loads(thesis), "fields": {"env": "prod"}}).encode())
    write("splunk_hec", "truncated.bin", b"\x00" + json.dumps(hec[0]).encode()[:-3])
    write("splunk_hec", "deep.bin", b"\x00" + b'{"event":' + b"[" * 40 + b"1" + b"]" * 40 + b"}")
    # loki: first byte 0 → JSON push, 1 → snappy protobuf, 2 → a label set.
    def pbf(field, b):
        n, out = len(b), bytes([(field << 3) | 2])
        while n >= 0x80:
            out += bytes([(n & 0x7f) | 0x80]); n >>= 7
        return out + bytes([n]) + b

    def snappy_literal(b):
        n, out = len(b), b""
        while n >= 0x80:
            out += bytes([(n & 0x7f) | 0x80]); n >>= 7
        out += bytes([n])
        for i in range(0, len(b), 256):
            c = b[i:i + 256]
            out += bytes([60 << 2, len(c) - 1]) + c
        return out

    push = {"streams": [{"stream": {"job": "linux", "host": "web-1"}, "values": [[str(1463561074737000000 + i), l] for i, l in enumerate(linux[:3])] + [["1463561075000000000", json.loads(thesis).get("message", "x"), {"trace_id": "abc"}]]}]}
    write("loki", "v1.bin", b"\x00" + json.dumps(push).encode())
    write("loki", "legacy.bin", b"\x00" + json.dumps({"streams": [{"labels": '{job="old"}', "entries": [{"ts": "2016-05-18T08:44:34.737Z", "line": linux[0]}]}]}).encode())
    entry = pbf(1, b"\x08\xf2\xa6\xf3\xb8\x05\x10\x05") + pbf(2, linux[1].encode()) + pbf(3, pbf(1, b"user") + pbf(2, b"ann"))
    write("loki", "proto.bin", b"\x01" + snappy_literal(pbf(1, pbf(1, b'{job="promtail", level="info"}') + pbf(2, entry))))
    write("loki", "labels.bin", b"\x02" + b'{job="api", msg="a \\"q\\" b", _x="1"}')
    write("splunk_hec", "raw.bin", b"\x01" + "\r\n".join(linux[:4]).encode())

    # otlp: first byte even → OTLP/JSON, odd → protobuf ExportLogsServiceRequest.
    def varint(n):
        out = b""
        while n >= 0x80:
            out += bytes([(n & 0x7f) | 0x80]); n >>= 7
        return out + bytes([n])

    def pbv(field, n):
        return bytes([field << 3]) + varint(n)

    def pbl(field, b):
        return varint((field << 3) | 2) + varint(len(b)) + b

    def fixed64(field, n):
        return bytes([(field << 3) | 1]) + n.to_bytes(8, "little")

    def kv(k, v):
        return pbl(1, k.encode()) + pbl(2, pbl(1, v.encode()))

    ev = json.loads(thesis)
    msg = ev.get("message", "x")
    records = b""
    for i, l in enumerate(linux[:3] + [msg]):
        r = fixed64(1, 1463561074737000000 + i) + pbv(2, 9 + 4 * (i % 3)) + pbl(3, b"WARN") + pbl(5, pbl(1, l.encode()))
        r += pbl(6, kv("host.name", "web-1")) + pbl(9, bytes(range(1, 17))) + pbl(10, b"\xab" * 8)
        records += pbl(2, r)
    # body: AnyValue{array: [AnyValue{kvlist: {k: AnyValue{bool: true}}}]}
    nested = pbl(5, pbl(1, pbl(6, pbl(1, pbl(1, b"k") + pbl(2, pbv(2, 1))))))
    records += pbl(2, pbl(5, nested) + pbl(9, b"\x01\x02\x03"))  # a record rejected (short trace id)
    scope = pbl(1, pbl(1, b"app.pay") + pbl(2, b"1.2")) + records
    req = pbl(1, pbl(1, pbl(1, kv("service.name", "checkout"))) + pbl(2, scope))
    write("otlp", "proto.bin", b"\x01" + req)
    body = {"resourceLogs": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "checkout"}}]},
            "scopeLogs": [{"scope": {"name": "app.pay", "version": "1.2"}, "logRecords": [
                {"timeUnixNano": str(1463561074737000000 + i), "severityNumber": 13, "severityText": "WARN",
                 "body": {"stringValue": l}, "traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "abababababababab",
                 "attributes": [{"key": "n", "value": {"intValue": str(i)}}, {"key": "ok", "value": {"boolValue": True}}]}
                for i, l in enumerate(linux[3:6] + [msg])] + [
                {"body": {"kvlistValue": {"values": [{"key": "a", "value": {"arrayValue": {"values": [{"doubleValue": 1.5}, {"bytesValue": "AAE="}]}}}]}},
                 "traceId": "zz"}]}]}]}
    write("otlp", "json.bin", b"\x00" + json.dumps(body).encode())
    write("otlp", "snake.bin", b"\x00" + json.dumps({"resource_logs": [{"scope_logs": [{"log_records": [{"body": {"string_value": openssh[0]}, "observed_time_unix_nano": 1}]}]}]}).encode())


if __name__ == "__main__":
    main()
