#!/usr/bin/env bash
# sluice's syslog test peers (adapted from the team's tried syslog-client recipe).
# syslog-clients.sh - real rsyslog (8.2302) and syslog-ng (3.38) from Debian 12 used as
# syslog CLIENTS: each runs as a plain foreground process with its own config file
# (not the system service, not /dev/log), takes messages from its own unix socket
# and forwards every message twice:
#   TCP  $SYSLOG_HOST:$SYSLOG_TCP_PORT  RFC5424, octet-counting framing ("LEN <PRI>1 ...")
#   UDP  $SYSLOG_HOST:$SYSLOG_UDP_PORT  RFC5424, one message per datagram
# rsyslog and syslog-ng-core Conflict in Debian (both "system-log-daemon"), so both
# .debs are fetched with `apt-get download` and unpacked with `dpkg-deb -x` into DIR;
# only their (conflict-free) shared-library dependencies are apt-installed.
# The system's own logging is never touched.
#
# usage: syslog-clients.sh [install|start|stop|status|send|smoke] [DIR]
#   DIR (or $SERVICES_DIR) holds debs, configs, sockets, queues; default ./.cache/services
#   env: SYSLOG_HOST (127.0.0.1), SYSLOG_TCP_PORT (16514), SYSLOG_UDP_PORT (16515)
#   send: MSG="text" syslog-clients.sh send [DIR]  -> one message through each client
#         (or yourself: logger -u DIR/syslog/rsyslog.sock -t app "text"
#                       logger -u DIR/syslog/syslog-ng.sock --rfc5424 -t app "text")
#   smoke: starts socat sinks on the two ports, sends, checks what arrived, stops sinks
#          (run it while nothing else listens on those ports).
# Reconnect: both retry a dead TCP target every 1 s (rsyslog keeps a queue,
# syslog-ng time-reopen(1)); UDP is fire-and-forget.
# Measured on a 2-core Debian 12 box: install ~6 s (download 1.4 MB + libs);
# start < 1 s; RSS rsyslogd ~4 MB, syslog-ng ~9 MB.
# Stop: syslog-clients.sh stop [DIR]   (kills DIR/syslog/*.pid)
set -euo pipefail

ACTION=${1:-start}
BASE=${2:-${SERVICES_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cache/services}}
mkdir -p "$BASE"; BASE=$(cd "$BASE" && pwd)
D=$BASE/syslog
R=$D/root                      # unpacked packages
HOST=${SYSLOG_HOST:-127.0.0.1}
TPORT=${SYSLOG_TCP_PORT:-16514}
UPORT=${SYSLOG_UDP_PORT:-16515}

alive() { [ -s "$D/$1.pid" ] && kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }

install() {
  [ -x "$R/usr/sbin/rsyslogd" ] && [ -x "$R/usr/sbin/syslog-ng" ] && return 0
  mkdir -p "$D/debs" "$R"
  (cd "$D/debs" && apt-get download rsyslog syslog-ng-core 2>/dev/null)
  local deps=()
  for deb in "$D"/debs/*.deb; do
    # first alternative of each Depends entry, version constraints dropped
    while read -r p; do [ -n "$p" ] && deps+=("$p"); done < <(dpkg-deb -f "$deb" Depends |
      tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g')
    dpkg-deb -x "$deb" "$R"
  done
  local need=()
  for p in "${deps[@]}" socat bsdutils; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
  if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
  fi
}

configure() {
  mkdir -p "$D/rsyslog-work" "$D/syslog-ng-var"
  cat > "$D/rsyslog.conf" <<EOF
global(workDirectory="$D/rsyslog-work" maxMessageSize="64k")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="$D/rsyslog.sock" CreatePath="on")
# RSYSLOG_SyslogProtocol23Format = RFC5424: <PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG
action(type="omfwd" target="$HOST" port="$TPORT" protocol="tcp" TCP_Framing="octet-counted"
       template="RSYSLOG_SyslogProtocol23Format"
       action.resumeRetryCount="-1" action.resumeInterval="1"
       queue.type="LinkedList" queue.size="100000" queue.filename="fwd_tcp" queue.saveOnShutdown="on")
action(type="omfwd" target="$HOST" port="$UPORT" protocol="udp"
       template="RSYSLOG_SyslogProtocol23Format")
EOF
  cat > "$D/syslog-ng.conf" <<EOF
@version: 3.38
options { keep-hostname(yes); time-reopen(1); stats_freq(0); };
source s_app { unix-dgram("$D/syslog-ng.sock" flags(syslog-protocol)); };
# syslog() driver = RFC5424 (IETF syslog); over TCP it frames with octet counting
destination d_tcp { syslog("$HOST" transport("tcp") port($TPORT)); };
destination d_udp { syslog("$HOST" transport("udp") port($UPORT)); };
log { source(s_app); destination(d_tcp); destination(d_udp); };
EOF
}

start() {
  install; configure
  if ! alive rsyslog; then
    rm -f "$D/rsyslog.sock"
    nohup "$R/usr/sbin/rsyslogd" -n -f "$D/rsyslog.conf" -i "$D/rsyslogd.internal.pid" \
      -M "$(echo "$R"/usr/lib/*/rsyslog)" > "$D/rsyslog.log" 2>&1 < /dev/null &
    echo $! > "$D/rsyslog.pid"
  fi
  if ! alive syslog-ng; then
    rm -f "$D/syslog-ng.sock"
    LD_LIBRARY_PATH="$R/usr/lib/syslog-ng" nohup "$R/usr/sbin/syslog-ng" -F -f "$D/syslog-ng.conf" \
      --module-path="$R/usr/lib/syslog-ng/3.38" -p "$D/syslog-ng.internal.pid" \
      -R "$D/syslog-ng-var/persist" -c "$D/syslog-ng.ctl" > "$D/syslog-ng.log" 2>&1 < /dev/null &
    echo $! > "$D/syslog-ng.pid"
  fi
  for _ in $(seq 1 50); do [ -S "$D/rsyslog.sock" ] && [ -S "$D/syslog-ng.sock" ] && break; sleep 0.1; done
  for n in rsyslog syslog-ng; do alive $n || { echo "$n failed:"; cat "$D/$n.log"; return 1; }; done
  echo "rsyslog (sock $D/rsyslog.sock) and syslog-ng (sock $D/syslog-ng.sock) forward to tcp $HOST:$TPORT, udp $HOST:$UPORT"
}

stop() {
  [ -d "$D" ] || return 0
  for f in "$D"/rsyslog.pid "$D"/syslog-ng.pid "$D"/sink-*.pid; do
    [ -e "$f" ] || continue
    local p; p=$(cat "$f" 2>/dev/null || true)
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill "$p"; fi
    rm -f "$f"
  done
  echo "syslog clients stopped"
}

send() {
  local m=${MSG:-hello from $(hostname) $(date +%s)}
  logger -u "$D/rsyslog.sock" -t rsyslog-client -p user.notice "via rsyslog: $m"
  logger -u "$D/syslog-ng.sock" --rfc5424 -t syslogng-client -p user.notice "via syslog-ng: $m"
}

kill_sinks() { # the socat sinks and their per-connection children
  local f p
  for f in "$D"/sink-*.pid; do
    [ -e "$f" ] || continue; p=$(cat "$f")
    pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; rm -f "$f"
  done
}

smoke() {
  mkdir -p "$D"; kill_sinks; trap kill_sinks EXIT
  rm -f "$D/sink-tcp.out" "$D/sink-udp.out"
  nohup socat -u TCP-LISTEN:"$TPORT",bind=127.0.0.1,fork,reuseaddr OPEN:"$D/sink-tcp.out",creat,append >/dev/null 2>&1 &
  echo $! > "$D/sink-tcp.pid"
  nohup socat -u UDP-RECV:"$UPORT",bind=127.0.0.1 OPEN:"$D/sink-udp.out",creat,append >/dev/null 2>&1 &
  echo $! > "$D/sink-udp.pid"
  sleep 0.5
  start
  MSG="smoke-$$" send
  for _ in $(seq 1 40); do
    [ "$(grep -o "smoke-$$" "$D/sink-tcp.out" 2>/dev/null | wc -l)" -ge 2 ] &&
    [ "$(grep -o "smoke-$$" "$D/sink-udp.out" 2>/dev/null | wc -l)" -ge 2 ] && break
    sleep 0.25
  done
  echo "--- TCP bytes (octet-counted RFC5424):"; cat -A "$D/sink-tcp.out" | cut -c1-200
  echo "--- UDP bytes:"; cat -A "$D/sink-udp.out" | cut -c1-200
  kill_sinks
  [ "$(grep -o "smoke-$$" "$D/sink-tcp.out" | wc -l)" -ge 2 ] && [ "$(grep -o "smoke-$$" "$D/sink-udp.out" | wc -l)" -ge 2 ] \
    && echo "syslog clients smoke OK" || { echo "syslog clients smoke FAILED"; return 1; }
}

case "$ACTION" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) for n in rsyslog syslog-ng; do alive $n && echo "$n running" || echo "$n stopped"; done ;;
  send) send ;;
  smoke) smoke ;;
  *) echo "usage: $0 [install|start|stop|status|send|smoke] [DIR]"; exit 2 ;;
esac
