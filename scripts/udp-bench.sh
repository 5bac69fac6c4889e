#!/usr/bin/env bash
# udp-bench.sh - syslog over UDP at a fixed rate into sluice (syslog_udp -> blackhole)
# or into rsyslog (imudp -> omfile), reporting received and kernel-dropped datagrams.
#
# usage: scripts/udp-bench.sh sluice|rsyslog RATE SECS [WORKERS]
#   WORKERS: the syslog_udp source's `workers` with an 8 MiB receive buffer,
#          or `default` (the default): neither key set - what a user runs
#          (workers = cores, at most 8; the kernel's default SO_RCVBUF).
#   needs: a release build (CARGO_TARGET_DIR/release/sluice and examples/udp_blast:
#          cargo build --release -p sluice && cargo build --release -p sluice-components --example udp_blast)
#          rsyslog unpacked by scripts/syslog-clients.sh install.
#   SLUICE_BIN=PATH runs that sluice binary instead of the target's (A/B runs).
#   BUSY=1 keeps one core busy with another process (`yes > /dev/null`)
#          for the whole run: the "while other work runs" condition.
# Kernel drops come from /proc/net/udp (drops column of the receiving socket's port).
set -euo pipefail
WHO=${1:-sluice}; RATE=${2:-100000}; SECS=${3:-10}; WORKERS=${4:-default}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=${CARGO_TARGET_DIR:-$ROOT/target}/release
PORT=${PORT:-25514}; API=${API:-127.0.0.1:29600}
W=$(mktemp -d)
BUSY_PID=""
if [ "${BUSY:-0}" = 1 ]; then yes > /dev/null & BUSY_PID=$!; fi
trap 'kill $PID $BUSY_PID 2>/dev/null || true; wait $PID 2>/dev/null || true; [ -n "${KEEP:-}" ] && cat "$W/log"; rm -rf "$W"' EXIT
hexport=$(printf '%04X' "$PORT")
drops() { awk -v p=":$hexport" 'NR>1 && $2 ~ p"$" {print $NF}' /proc/net/udp | head -1; }

if [ "$WHO" = sluice ]; then
  TUNING=""
  [ "$WORKERS" = default ] || TUNING=$(printf 'workers = %s\nreceive_buffer_bytes = "8MiB"' "$WORKERS")
  cat > "$W/s.toml" <<EOF
[node]
data_dir = "$W/data"
[api]
address = "$API"
[pipelines.main]
workers = 1
[pipelines.main.sources.udp]
type = "syslog_udp"
address = "127.0.0.1:$PORT"
$TUNING
[pipelines.main.sinks.b]
type = "blackhole"
EOF
  SLUICE_LOG=info "${SLUICE_BIN:-$T/sluice}" run "$W/s.toml" 2> "$W/log" & PID=$!
else
  R=$ROOT/.cache/services/syslog/root
  cat > "$W/r.conf" <<EOF
global(workDirectory="$W")
module(load="imudp")
input(type="imudp" address="127.0.0.1" port="$PORT" rcvbufSize="8m")
template(name="raw" type="string" string="%rawmsg%\n")
action(type="omfile" file="$W/out.log" template="raw" asyncWriting="on" ioBufferSize="256k")
EOF
  "$R/usr/sbin/rsyslogd" -n -f "$W/r.conf" -i "$W/pid" -M "$(echo "$R"/usr/lib/*/rsyslog)" 2> "$W/log" & PID=$!
fi
sleep 1.5
d0=$(drops || echo 0)
"$T/examples/udp_blast" "127.0.0.1:$PORT" "$RATE" "$SECS"
sleep 2
d1=$(drops || echo 0)
if [ "$WHO" = sluice ]; then
  curl -s "http://$API/_node/stats" > "$W/stats.json"
  python3 - "$W/stats.json" <<'EOF'
import json,sys
s=json.load(open(sys.argv[1]))
def walk(o):
    if isinstance(o,dict):
        if o.get("type")=="syslog_udp" or o.get("id")=="udp": print("syslog_udp:", json.dumps(o))
        for v in o.values(): walk(v)
    elif isinstance(o,list):
        for v in o: walk(v)
walk(s)
EOF
  grep -m1 "syslog_udp source listening" "$W/log" || true
else
  echo "rsyslog received: $(wc -l < "$W/out.log")"
fi
echo "kernel drops (/proc/net/udp) during run: $((d1 - d0))"
