"""Helpers the bench scripts share: a free loopback port and a process's
CPU seconds and resident memory read from /proc (imported by scripts run as
`python3 bench/<script>.py`, whose directory is on sys.path)."""
import os
import socket


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
