"""Helpers the bench scripts share: a free loopback port, a process's CPU
seconds and resident memory read from /proc, the thesis event, a sluice node
of blackhole pipelines started and stopped, waiting for a port, and the
events-per-CPU-second rounds of the protocol benches (imported by scripts run
as `python3 bench/<script>.py`, whose directory is on sys.path)."""
import json
import os
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEBUG_BIN = os.path.join(ROOT, "target", "debug", "sluice")


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cpu_seconds(pid):
    """utime + stime of `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid):
    """VmRSS of `pid` in bytes (0 when the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def events_out(api, pipeline):
    """`sluice_pipeline_events_out_total` of `pipeline` from the node's /metrics."""
    import urllib.request
    body = urllib.request.urlopen(f"http://127.0.0.1:{api}/metrics", timeout=5).read().decode()
    key = f'sluice_pipeline_events_out_total{{pipeline="{pipeline}"}} '
    for line in body.splitlines():
        if line.startswith(key):
            return int(float(line[len(key):]))
    return 0


def wait_api(api, pipeline, timeout=30):
    """Waits until the node's /metrics answers."""
    import time
    deadline = time.time() + timeout
    while True:
        try:
            return events_out(api, pipeline)
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def node_stats(api, timeout=5):
    """The node's /_node/stats as JSON."""
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{api}/_node/stats", timeout=timeout) as r:
        return json.load(r)


def thesis_event():
    """The thesis event (testdata/thesis/event.json) and its ndjson line."""
    with open(os.path.join(ROOT, "testdata", "thesis", "event.json")) as f:
        ev = json.load(f)
    return ev, json.dumps(ev, separators=(",", ":")).encode() + b"\n"


def wait_port(port, proc=None, timeout=30):
    """Waits until 127.0.0.1:`port` accepts; exits if `proc` died or time ran out."""
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"sluice exited: {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"port {port} never opened")


def toml_value(v):
    """A TOML value: a string quoted, a bool lower-case, a list bracketed, a
    dict an inline table, a number as is."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    return str(v)


def toml(tables):
    """A config from `{table: {key: value}}` (`[[name]]` for a table whose
    name starts with `[`), in order."""
    out = []
    for name, keys in tables.items():
        out.append(f"[{name}]")
        out.extend(f"{k} = {toml_value(v)}" for k, v in keys.items())
    return "\n".join(out) + "\n"


ALL = {"group": "*", "subgroup": "*", "host": "*"}


def blackhole_node(tmp, api, sources):
    """The config of a node with its API on `api` and one pipeline per
    `(pipeline, type, port, extra)` in `sources`: that source (`in`, on
    127.0.0.1:port, `extra` TOML lines) into a `blackhole` sink."""
    text = f'\n[node]\ndata_dir = "{tmp}"\n[api]\naddress = "127.0.0.1:{api}"\n'
    for pipe, kind, port, extra in sources:
        text += f'[pipelines.{pipe}.sources.in]\ntype = "{kind}"\naddress = "127.0.0.1:{port}"\n{extra}'
        text += f'[pipelines.{pipe}.sinks.out]\ntype = "blackhole"\n'
    return text


def start_node(bin_, tmp, config):
    """Writes `config` to `tmp`/c.toml and starts `sluice run` on it, its log in `tmp`/log."""
    cfg = os.path.join(tmp, "c.toml")
    with open(cfg, "w") as f:
        f.write(config)
    return subprocess.Popen([bin_, "run", cfg], stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))


def stop(p):
    """SIGTERM, then waits for the process."""
    p.terminate()
    p.wait()


def cpu_rounds(p, api, senders, rounds, events):
    """`rounds` rounds over `senders` (`{name: (pipeline, send)}`): each
    `send()` delivers `events` events, then waits until the pipeline's
    events-out counter reaches what was sent; the node's CPU over the round
    divides the events. Asserts every pipeline's final count and returns
    the median events per CPU-second of each sender."""
    results = {k: [] for k in senders}
    sent = {pipe: 0 for pipe, _ in senders.values()}
    for r in range(rounds):
        for name, (pipe, send) in senders.items():
            c0, t0 = cpu_seconds(p.pid), time.time()
            send()
            sent[pipe] += events
            while events_out(api, pipe) < sent[pipe]:
                if time.time() - t0 > 300:
                    raise SystemExit(f"{name}: timed out")
                time.sleep(0.01)
            cpu, wall = cpu_seconds(p.pid) - c0, time.time() - t0
            results[name].append(events / cpu)
            print(f"round {r} {name}: {events} events, {cpu:.2f} CPU-s, {wall:.2f} s wall, {events / cpu:,.0f} events/CPU-s", flush=True)
    for pipe, want in sent.items():
        got = events_out(api, pipe)
        assert got == want, f"{pipe}: {got} events out of {want}"
    return {k: statistics.median(v) for k, v in results.items()}


def send_tcp(port, data):
    """`data` on one TCP connection, closed after."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
