#!/usr/bin/env bash
# loadbalancers.sh - real TCP load balancers from Debian packages in front of
# sluice processors, for `sluice bench run` cases (issue #6). Each runs as a
# plain process with its own config under DIR/lb (no system service).
# Adapted from the team's tried load-balancer recipes.
#
#   HAProxy (mode tcp; HAPROXY_BALANCE=roundrobin|leastconn)   HAPROXY_PORT (18080)
#   nginx stream (NGINX_BALANCE=round_robin|least_conn)        NGINX_PORT   (18081)
#   pen (-r: round robin per connection)                       PEN_PORT     (18082)
#
# Backends: LB_BACKENDS="127.0.0.1:5141 127.0.0.1:5142" (required for start).
# LB_ONLY=haproxy|nginx|pen starts only that one (default: all three).
#
# usage: loadbalancers.sh install|start|stop|status [DIR]
#   DIR (or $SERVICES_DIR) holds configs, pids, logs; default ./.cache/services
# Idempotent: install skips installed packages; start leaves a running
# balancer alone (stop first to change its config); stop kills every pid in
# DIR/lb/*.pid it started.
set -euo pipefail

ACTION=${1:-start}
BASE=${2:-${SERVICES_DIR:-./.cache/services}}
mkdir -p "$BASE"; BASE=$(cd "$BASE" && pwd)
D=$BASE/lb
HAPROXY_PORT=${HAPROXY_PORT:-18080}
HAPROXY_BALANCE=${HAPROXY_BALANCE:-roundrobin}
NGINX_PORT=${NGINX_PORT:-18081}
NGINX_BALANCE=${NGINX_BALANCE:-round_robin}
PEN_PORT=${PEN_PORT:-18082}
ONLY=${LB_ONLY:-haproxy nginx pen}

# shellcheck source=scripts/service-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"

alive() { [ -s "$D/$1.pid" ] && kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }
want() { [[ " $ONLY " == *" $1 "* ]]; }

install() {
  apt_install_missing haproxy nginx libnginx-mod-stream pen
}

start() {
  [ -n "${LB_BACKENDS:-}" ] || { echo "loadbalancers.sh: set LB_BACKENDS" >&2; return 2; }
  install; mkdir -p "$D"
  local i=0 hs="" ns="" ps=""
  for b in $LB_BACKENDS; do i=$((i+1)); hs+="  server b$i $b check inter 1s fall 2 rise 1"$'\n'; ns+="    server $b max_fails=1 fail_timeout=2s;"$'\n'; ps+=" $b"; done

  if want haproxy && ! alive haproxy; then
    case $HAPROXY_BALANCE in roundrobin|leastconn) ;; *) echo "HAPROXY_BALANCE: roundrobin or leastconn" >&2; return 2;; esac
    cat > "$D/haproxy.cfg" <<EOF
global
  maxconn 4000
defaults
  mode tcp
  timeout connect 2s
  timeout client 600s
  timeout server 600s
frontend fe_tcp
  bind 127.0.0.1:$HAPROXY_PORT
  default_backend be_tcp
backend be_tcp
  balance $HAPROXY_BALANCE
$hs
EOF
    haproxy -c -q -f "$D/haproxy.cfg"
    haproxy -D -p "$D/haproxy.pid" -f "$D/haproxy.cfg"
  fi

  if want nginx && ! alive nginx; then
    local algo=""
    case $NGINX_BALANCE in round_robin) ;; least_conn) algo="    least_conn;"$'\n';; *) echo "NGINX_BALANCE: round_robin or least_conn" >&2; return 2;; esac
    cat > "$D/nginx.conf" <<EOF
load_module /usr/lib/nginx/modules/ngx_stream_module.so;
worker_processes 1;
daemon on;
pid $D/nginx.pid;
error_log $D/nginx-error.log warn;
events { worker_connections 4096; }
stream {
  upstream be_tcp {
$algo$ns  }
  server { listen 127.0.0.1:$NGINX_PORT; proxy_pass be_tcp; proxy_timeout 600s; }
}
EOF
    nginx -q -t -e "$D/nginx-error.log" -c "$D/nginx.conf"
    nginx -e "$D/nginx-error.log" -c "$D/nginx.conf"
  fi

  if want pen && ! alive pen; then
    # -r: plain round robin (default is sticky by client address); -f: foreground
    nohup pen -r -f "127.0.0.1:$PEN_PORT"$ps > "$D/pen.log" 2>&1 < /dev/null &
    echo $! > "$D/pen.pid"
  fi
  # the pid files appear once the daemons are up
  for _ in $(seq 50); do
    local ok=1
    for n in haproxy nginx pen; do want $n && ! alive $n && ok=0; done
    [ $ok = 1 ] && break
    sleep 0.1
  done
  for n in haproxy nginx pen; do
    want $n || continue
    alive $n || { echo "$n failed to start"; cat "$D/$n"*.log 2>/dev/null; return 1; }
  done
  echo "started:$(for n in haproxy nginx pen; do want $n && printf ' %s' $n; done) -> $LB_BACKENDS"
}

stop() {
  [ -d "$D" ] || return 0
  for f in "$D"/*.pid; do
    [ -e "$f" ] || continue
    local p; p=$(cat "$f" 2>/dev/null || true)
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill "$p"; fi
    rm -f "$f"
  done
  echo "load balancers stopped"
}

case "$ACTION" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) for n in haproxy nginx pen; do alive $n && echo "$n running" || echo "$n stopped"; done ;;
  *) echo "usage: $0 install|start|stop|status [DIR]"; exit 2 ;;
esac
