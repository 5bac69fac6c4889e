#!/usr/bin/env bash
# A real rsyslog (8.2302 from Debian 12, unpacked under .cache/ by
# scripts/syslog-clients.sh, plus rsyslog-gnutls for TLS) used as a syslog
# RECEIVER for sluice's syslog outputs: each instance runs in the foreground
# with its own config, work directory and pid file, and writes the MSG part
# of every message it receives, one per line, to a file per transport.
#
# usage:
#   rsyslog-receiver.sh install
#   rsyslog-receiver.sh start DIR TCP_PORT UDP_PORT           plain: imtcp + imudp
#        -> DIR/tcp.out, DIR/udp.out
#   rsyslog-receiver.sh start-tls DIR TLS_PORT CERT KEY       RFC 5425: imtcp with gtls
#        -> DIR/tls.out
#   rsyslog-receiver.sh stop DIR                              kills DIR/*.pid
# Octet-counted framing (RFC 6587) is detected by imtcp on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT_BASE=$(pwd)/.cache/services/syslog
R=$ROOT_BASE/root

install() {
  scripts/syslog-clients.sh install >/dev/null
  if ! ls "$R"/usr/lib/*/rsyslog/lmnsd_gtls.so >/dev/null 2>&1; then
    mkdir -p "$ROOT_BASE/debs"
    (cd "$ROOT_BASE/debs" && apt-get download rsyslog-gnutls 2>/dev/null)
    dpkg-deb -x "$ROOT_BASE"/debs/rsyslog-gnutls_*.deb "$R"
    local need=()
    for p in libgnutls30; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
    if [ ${#need[@]} -gt 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
    fi
  fi
}

modules() { echo "$R"/usr/lib/*/rsyslog; }

run() { # NAME DIR CONF
  local name=$1 dir=$2 conf=$3
  nohup "$R/usr/sbin/rsyslogd" -n -f "$conf" -i "$dir/$name.internal.pid" -M "$(modules)" \
    > "$dir/$name.log" 2>&1 < /dev/null &
  echo $! > "$dir/$name.pid"
}

wait_port() { # PORT
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "rsyslog did not open port $1"; return 1
}

start() { # DIR TCP UDP
  local dir=$1 tport=$2 uport=$3
  install; mkdir -p "$dir/work-plain"
  cat > "$dir/plain.conf" <<CONF
global(workDirectory="$dir/work-plain" maxMessageSize="64k")
module(load="imtcp")
module(load="imudp")
template(name="msgonly" type="string" string="%msg%\n")
ruleset(name="tcp") { action(type="omfile" file="$dir/tcp.out" template="msgonly") }
ruleset(name="udp") { action(type="omfile" file="$dir/udp.out" template="msgonly") }
input(type="imtcp" address="127.0.0.1" port="$tport" ruleset="tcp")
input(type="imudp" address="127.0.0.1" port="$uport" ruleset="udp" rcvbufSize="8m")
CONF
  run plain "$dir" "$dir/plain.conf"
  wait_port "$tport"
}

start_tls() { # DIR PORT CERT KEY
  local dir=$1 port=$2 cert=$3 key=$4
  install; mkdir -p "$dir/work-tls"
  cat > "$dir/tls.conf" <<CONF
global(workDirectory="$dir/work-tls" maxMessageSize="64k"
       DefaultNetstreamDriver="gtls"
       DefaultNetstreamDriverCAFile="$cert"
       DefaultNetstreamDriverCertFile="$cert"
       DefaultNetstreamDriverKeyFile="$key")
module(load="imtcp" StreamDriver.Name="gtls" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")
template(name="msgonly" type="string" string="%msg%\n")
ruleset(name="tls") { action(type="omfile" file="$dir/tls.out" template="msgonly") }
input(type="imtcp" address="127.0.0.1" port="$port" ruleset="tls")
CONF
  run tls "$dir" "$dir/tls.conf"
  wait_port "$port"
}

stop() { # DIR
  local f p
  for f in "$1"/plain.pid "$1"/tls.pid; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    if kill -0 "$p" 2>/dev/null; then kill "$p"; fi
    rm -f "$f"
  done
}

case "${1:-}" in
  install) install ;;
  start) start "$2" "$3" "$4" ;;
  start-tls) start_tls "$2" "$3" "$4" "$5" ;;
  stop) stop "$2" ;;
  *) echo "usage: $0 install | start DIR TCP_PORT UDP_PORT | start-tls DIR PORT CERT KEY | stop DIR"; exit 2 ;;
esac
