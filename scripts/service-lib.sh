# Shared by the service scripts (kafka.sh, opensearch.sh, tls_proxy.sh), sourced
# after they set PIDF (the service's pid file): whether it runs, whether a
# loopback port accepts, and stopping it; and (also for keepalived.sh and
# loadbalancers.sh) installing missing Debian packages.

# The pid file names a live process.
running() { [ -s "$PIDF" ] && kill -0 "$(cat "$PIDF")" 2>/dev/null; }

# 127.0.0.1:$1 accepts a TCP connection.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# stop_service SIGNAL TRIES PAUSE WHAT: sends SIGNAL to the pid file's
# process, waits TRIES x PAUSE seconds for it to exit, then kills it (-9);
# says "WHAT stopped" and removes the pid file.
stop_service() {
  if running; then
    local p; p=$(cat "$PIDF"); kill "-$1" "$p"
    for _ in $(seq 1 "$2"); do kill -0 "$p" 2>/dev/null || break; sleep "$3"; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p"
    echo "$4 stopped"
  fi
  rm -f "$PIDF"
}

# apt_install_missing PKG...: apt-get installs those PKGs not installed yet
# (needs root; after a failure, an apt-get update and one more try), with a
# policy-rc.d that keeps the packages' own services from starting.
apt_install_missing() {
  local need=() p made=0
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then echo "$(basename "$0"): need root to apt-get install ${need[*]}" >&2; return 1; fi
  if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; made=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
  }
  [ $made = 1 ] && rm -f /usr/sbin/policy-rc.d
  return 0
}
