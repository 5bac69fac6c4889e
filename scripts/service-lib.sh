# Shared by the service scripts (kafka.sh, opensearch.sh, tls_proxy.sh), sourced
# after they set PIDF (the service's pid file): whether it runs, whether a
# loopback port accepts, and stopping it.

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
