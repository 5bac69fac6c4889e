#!/usr/bin/env bash
# keepalived.sh - two balancers (sluice dispatchers, or HAProxy) behind a
# keepalived (VRRP) virtual IP, in network namespaces on this machine (adapted
# from the team's tried keepalived recipe; nothing touches the host's
# interfaces), and the failover measurement of issue #8: what sluice's acks
# save at the switch, next to the HAProxy + keepalived study.
#
#   ns kalv-br : bridge br0
#   ns kalv-a  : 10.213.7.1  keepalived priority 150 (MASTER) + balancer A
#   ns kalv-b  : 10.213.7.2  keepalived priority 100 (BACKUP) + balancer B
#   ns kalv-c  : 10.213.7.9  agent, plain TCP sender, 2 processors (agent
#                protocol :5044, :5045; lines over TCP :5046, :5047)
#   VIP 10.213.7.100 (vrid 51, advert 1 s); the balancers listen on :5043
#   (agent protocol) and :5170 (lines over TCP)
#
#   BALANCER=sluice (default): each node runs a sluice dispatcher (agent
#     protocol in with ack = "delivered", per-batch least_loaded out; its tcp
#     source feeds the same sink)
#   BALANCER=haproxy: each node runs HAProxy (mode tcp, HAPROXY_BALANCE=
#     roundrobin|leastconn, per connection) forwarding :5043 to the
#     processors' agent-protocol ports (the agent talks to a processor through
#     it; acks come back from the processor) and :5170 to their lines ports
#
# usage: keepalived.sh [install|start|stop|status|failover] [DIR]
#   DIR (or $SERVICES_DIR): configs, pids, logs, outputs; default ./.cache/services
#   failover: two runs of $FAILOVER_EVENTS (30000) events at $FAILOVER_RATE (2000)/s through the VIP; 3 s in,
#     node A "dies" (its link goes down, its dispatcher and keepalived are
#     killed -9): (1) a sluice agent (acks, re-sends), (2) a plain TCP sender
#     that reconnects and carries on (what syslog-over-TCP does). Prints
#     recovery time and lost/duplicated events of each as one JSON line.
#     FAILOVER_WATCH_S (30): longest wait for the output to resume after the kill.
# Binary: $SLUICE_BIN or target/release/sluice. Needs root (ip netns), which CI has.
# Idempotent: start reuses a running setup of the same BALANCER (another one is
# stopped first); stop kills what DIR's pid files name and deletes the namespaces.
set -euo pipefail

ACTION=${1:-start}
BASE=${2:-${SERVICES_DIR:-./.cache/services}}
mkdir -p "$BASE"; BASE=$(cd "$BASE" && pwd)
D=$BASE/keepalived-dispatch
NET=10.213.7
VIP=$NET.100
SLUICE=${SLUICE_BIN:-$(pwd)/target/release/sluice}
RELAY=kalv-relay-token-0123456789abcdef
AGENT=kalv-agent-token-0123456789abcdef
BALANCER=${BALANCER:-sluice}
HAPROXY_BALANCE=${HAPROXY_BALANCE:-roundrobin}
case $BALANCER in sluice|haproxy) ;; *) echo "BALANCER: sluice or haproxy" >&2; exit 2;; esac

# shellcheck source=scripts/service-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"

# render TEMPLATE OUT: scripts/keepalived/TEMPLATE with its $VARS (globals and
# the caller's locals) expanded, written to OUT
TPL=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/keepalived
render() { eval "cat > \"\$2\" <<EOF
$(cat "$TPL/$1")
EOF"; }

alive() { [ -s "$D/$1.pid" ] && kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }

install() {
  local pkgs=(keepalived iproute2 python3)
  [ "$BALANCER" = haproxy ] && pkgs+=(haproxy)
  apt_install_missing "${pkgs[@]}"
}

net_up() {
  ip netns list | grep -qw kalv-br && return 0
  ip netns add kalv-br
  ip -n kalv-br link add br0 type bridge
  ip -n kalv-br link set br0 up
  local n ip
  for n in a b c; do
    case $n in a) ip=$NET.1;; b) ip=$NET.2;; c) ip=$NET.9;; esac
    ip netns add kalv-$n
    ip link add kalv-$n-in type veth peer name kalv-$n-br
    ip link set kalv-$n-in netns kalv-$n
    ip link set kalv-$n-br netns kalv-br
    ip -n kalv-br link set kalv-$n-br master br0
    ip -n kalv-br link set kalv-$n-br up
    ip -n kalv-$n link set lo up
    ip -n kalv-$n addr add $ip/24 dev kalv-$n-in
    ip -n kalv-$n link set kalv-$n-in up
  done
}

# run NAME NS CMD... : start a background process in a namespace, pid in $D/NAME.pid
run() {
  local name=$1 ns=$2; shift 2
  alive "$name" && return 0
  nohup ip netns exec "$ns" "$@" > "$D/$name.log" 2>&1 < /dev/null &
  echo $! > "$D/$name.pid"
}

wait_tcp() { # NS HOST PORT
  for _ in $(seq 1 100); do
    ip netns exec "$1" python3 -c "import socket,sys; socket.create_connection(('$2',$3),0.2)" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$2:$3 never opened in $1"; return 1
}

processor_conf() { # NAME PORT LINES_PORT
  local name=$1 port=$2 lines_port=$3
  render processor.toml "$D/$name.toml"
}

dispatcher_conf() { # NAME
  local name=$1
  render dispatcher.toml "$D/$name.toml"
}

keepalived_conf() { # n prio
  local n=$1 prio=$2
  render keepalived.conf "$D/ka-$n.conf"
}

haproxy_conf() { # NAME
  local name=$1
  render haproxy.cfg "$D/$name.cfg"
  haproxy -c -q -f "$D/$name.cfg"
}

start_node() { # n prio
  ip -n kalv-$1 link set kalv-$1-in up
  keepalived_conf "$1" "$2"
  run ka-$1 kalv-$1 keepalived --dont-fork --log-console --vrrp -f "$D/ka-$1.conf" \
    -p "$D/ka-$1.main.pid" -r "$D/ka-$1.vrrp.pid"
  if [ "$BALANCER" = haproxy ]; then
    haproxy_conf lb-$1
    # -db: foreground, one process: the pid killed -9 is the balancer
    run lb-$1 kalv-$1 haproxy -db -f "$D/lb-$1.cfg"
  else
    dispatcher_conf lb-$1
    run lb-$1 kalv-$1 "$SLUICE" dispatcher --config "$D/lb-$1.toml"
  fi
  wait_tcp kalv-$1 127.0.0.1 5043
  wait_tcp kalv-$1 127.0.0.1 5170
}

vip_on() { ip -n kalv-$1 -4 addr show | grep -q "$VIP"; }

start() {
  [ "$(id -u)" = 0 ] || { echo "needs root"; return 1; }
  [ -x "$SLUICE" ] || { echo "no sluice binary at $SLUICE (set SLUICE_BIN)"; return 1; }
  install; mkdir -p "$D"
  if [ -s "$D/balancer" ] && [ "$(cat "$D/balancer")" != "$BALANCER" ]; then stop; fi
  net_up; echo "$BALANCER" > "$D/balancer"
  processor_conf proc-1 5044 5046; processor_conf proc-2 5045 5047
  run proc-1 kalv-c "$SLUICE" run "$D/proc-1.toml"
  run proc-2 kalv-c "$SLUICE" run "$D/proc-2.toml"
  wait_tcp kalv-c $NET.9 5044; wait_tcp kalv-c $NET.9 5045
  wait_tcp kalv-c $NET.9 5046; wait_tcp kalv-c $NET.9 5047
  start_node a 150; start_node b 100
  for _ in $(seq 1 60); do
    vip_on a && { echo "VIP $VIP on node a"; return 0; }
    sleep 0.25
  done
  echo "node a never took the VIP"; tail "$D"/ka-*.log; return 1
}

stop() {
  local f p pids=()
  if [ -d "$D" ]; then
    for f in "$D"/*.pid; do
      [ -e "$f" ] || continue
      p=$(cat "$f" 2>/dev/null || true)
      if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill "$p" 2>/dev/null || true; pids+=("$p"); fi
      rm -f "$f"
    done
  fi
  for _ in $(seq 1 40); do
    local left=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
    [ $left = 0 ] && break; sleep 0.25
  done
  for n in a b c br; do ip netns del kalv-$n 2>/dev/null || true; done
  rm -f "$D/balancer"
  echo "keepalived balancer net stopped"
}

# Node a "dies": its link goes down, its balancer and keepalived are killed -9.
kill_a() {
  local x f
  ip -n kalv-a link set kalv-a-in down
  for x in lb-a ka-a; do
    if alive $x; then kill -9 "$(cat "$D/$x.pid")" 2>/dev/null || true; fi
    rm -f "$D/$x.pid"
  done
  # keepalived's own children (VRRP process) by their pid files
  for f in "$D"/ka-a.main.pid "$D"/ka-a.vrrp.pid; do
    [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; rm -f "$f"
  done
}

# count TAG N: unique, duplicates, missing among the processors' outputs; and the time series
count() {
  python3 - "$1" "$2" "$D/proc-1.ndjson" "$D/proc-2.ndjson" <<'PY'
import json, re, sys
tag, n = sys.argv[1], int(sys.argv[2])
seen = {}
pat = re.compile(r'"message":"' + re.escape(tag) + r' (\d+)"')
for p in sys.argv[3:]:
    try:
        for line in open(p):
            m = pat.search(line)
            if m:
                s = int(m.group(1)); seen[s] = seen.get(s, 0) + 1
    except FileNotFoundError:
        pass
print(json.dumps({"unique": len(seen), "duplicates": sum(c - 1 for c in seen.values()),
                  "lost": n - len([s for s in seen if s < n])}))
PY
}

# watch TAG SECONDS: prints the longest gap (ms) in the processors' output growth after the kill
watch_gap() { # TAG KILL_AT_EPOCH_MS OUTFILE
  python3 - "$1" "$2" "$3" "${FAILOVER_WATCH_S:-30}" "$D/proc-1.ndjson" "$D/proc-2.ndjson" <<'PY' &
import os, sys, time
tag, kill_ms, out, watch = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
files = sys.argv[5:]
def size():
    return sum(os.path.getsize(f) for f in files if os.path.exists(f))
# wait for the kill
while time.time() * 1000 < kill_ms:
    time.sleep(0.005)
base = size(); t0 = time.time()
# recovery: the first growth after output stalled following the kill
last = base; last_change = t0; stalled = False; rec = None
while time.time() - t0 < watch:
    s = size()
    now = time.time()
    if s != last:
        if now - last_change > 0.2 and rec is None:
            rec = now - t0
        last = s; last_change = now
    time.sleep(0.01)
    if rec is not None and now - t0 > rec + 1:
        break
open(out, "w").write(str(int((rec if rec is not None else 0) * 1000)))
PY
}

failover() {
  local n=${1:-30000} rate=${2:-2000}
  if ! { alive lb-a && alive lb-b && [ "$(cat "$D/balancer" 2>/dev/null)" = "$BALANCER" ]; }; then start; fi
  rm -f "$D"/proc-*.ndjson
  # (1) sluice agent with acks
  render agent.toml "$D/agent.toml"
  rm -rf "$D/agent-data"
  local t0 kill_ms
  t0=$(date +%s%3N); kill_ms=$((t0 + 3000))
  watch_gap vip $kill_ms "$D/gap-sluice"; local gap_pid=$!
  run agent kalv-c "$SLUICE" agent --config "$D/agent.toml"
  sleep 3; kill_a; local killed; killed=$(date +%s%3N)
  for _ in $(seq 1 100); do vip_on b && break; sleep 0.1; done
  local vip_ms=$(( $(date +%s%3N) - killed )) vip_moved=false
  vip_on b && vip_moved=true
  local want=$(( n ))
  for _ in $(seq 1 600); do
    [ "$(count vip $n | python3 -c 'import json,sys; print(json.load(sys.stdin)["unique"])')" -ge "$want" ] && break
    sleep 0.2
  done
  wait "$gap_pid" || true
  local sluice_res; sluice_res=$(count vip $n)
  kill "$(cat "$D/agent.pid")" 2>/dev/null || true; rm -f "$D/agent.pid"

  # node a comes back (preempts the VIP), then (2) a plain TCP sender
  start_node a 150
  for _ in $(seq 1 100); do vip_on a && break; sleep 0.1; done
  sleep 2
  t0=$(date +%s%3N); kill_ms=$((t0 + 3000))
  watch_gap plain $kill_ms "$D/gap-plain"; gap_pid=$!
  ip netns exec kalv-c python3 - "$VIP" "$n" "$rate" > "$D/plain.json" <<'PY' &
import json, socket, sys, time
host, n, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sock, reconnects, failed_writes, t0 = None, 0, 0, time.time()
seq = 0
while seq < n:
    if sock is None:
        try:
            sock = socket.create_connection((host, 5170), 1)
            sock.settimeout(1)
        except OSError:
            time.sleep(0.1); continue
    due = t0 + seq / rate
    d = due - time.time()
    if d > 0: time.sleep(d)
    k = min(100, n - seq)
    data = "".join(f"plain {s}\n" for s in range(seq, seq + k)).encode()
    try:
        sock.sendall(data)
    except OSError:
        failed_writes += 1; reconnects += 1
        try: sock.close()
        except OSError: pass
        sock = None
    seq += k   # a sender that reconnects and carries on
print(json.dumps({"sent": n, "reconnects": reconnects, "failed_writes": failed_writes}))
PY
  local plain_pid=$!
  sleep 3; kill_a; killed=$(date +%s%3N)
  wait $plain_pid || true
  sleep 3
  wait "$gap_pid" || true
  local plain_res; plain_res=$(count plain $n)
  echo "{\"balancer\":\"$BALANCER\",$([ "$BALANCER" = haproxy ] && echo "\"haproxy_balance\":\"$HAPROXY_BALANCE\",")\"events\":$n,\"rate\":$rate,\"vip_takeover_ms\":$vip_ms,\"vip_moved\":$vip_moved,\"sluice\":{\"result\":$sluice_res,\"recovery_ms\":$(cat "$D/gap-sluice")},\"plain_tcp\":{\"result\":$plain_res,\"client\":$(cat "$D/plain.json"),\"recovery_ms\":$(cat "$D/gap-plain")}}"
  # node a back for the next run
  start_node a 150
}

case "$ACTION" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) echo "balancer: $(cat "$D/balancer" 2>/dev/null || echo none)"
          for n in ka-a ka-b lb-a lb-b proc-1 proc-2; do alive $n && echo "$n running" || echo "$n stopped"; done
          vip_on a && echo "VIP on a"; vip_on b && echo "VIP on b"; true ;;
  failover) failover "${FAILOVER_EVENTS:-30000}" "${FAILOVER_RATE:-2000}" ;;
  *) echo "usage: $0 [install|start|stop|status|failover] [DIR]"; exit 2 ;;
esac
