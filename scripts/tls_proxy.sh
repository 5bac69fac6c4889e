#!/usr/bin/env bash
# An nginx TLS reverse proxy with HTTP basic auth in front of a plain-HTTP
# server - how sluice's tests reach OpenSearch over https:// with a password
# (the OpenSearch distribution here has no security plugin, so it speaks
# plain HTTP without auth).
#
# usage: scripts/tls_proxy.sh start DIR   (env: PORT, PASSWORD, UPSTREAM, PROXY_USER)
#        scripts/tls_proxy.sh stop DIR
#   start = installs nginx with apt-get if it is missing (and says so),
#           generates into DIR (created; mode 0755 so nginx's workers can read
#           the password file) a CA (ca.pem), a server certificate for
#           localhost / 127.0.0.1 signed by it (server.pem, server.key), an
#           htpasswd file for PROXY_USER (default "sluice") with PASSWORD, and
#           nginx.conf; starts nginx on 127.0.0.1:PORT (TLS 1.2/1.3)
#           proxying to UPSTREAM (default http://127.0.0.1:19200) with
#           keep-alive, request bodies up to 200 MB passed through as they
#           come (gzip included); waits until the port answers.
#   stop  = stops the nginx started for DIR (SIGQUIT, then SIGKILL).
# Needs openssl. Idempotent: start with a running proxy for DIR does nothing.
set -euo pipefail

ACTION=${1:-}
DIR=${2:-}
[ -n "$ACTION" ] && [ -n "$DIR" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
PIDF=$DIR/nginx.pid

# shellcheck source=scripts/service-lib.sh
. "$(dirname "$0")/service-lib.sh"

nginx_bin() {
  if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    echo "tls_proxy.sh: nginx not found; installing it with apt-get (nginx-light)" >&2
    local sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get install -y -q nginx-light >/dev/null || "${sudo[@]}" apt-get install -y -q nginx >/dev/null
  fi
  command -v nginx || echo /usr/sbin/nginx
}

certs() {
  [ -s "$DIR/server.pem" ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=sluice test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
    -keyout "$DIR/ca.key" -out "$DIR/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$DIR/server.key" -out "$DIR/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$DIR/server.ext"
  openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial -days 2 \
    -extfile "$DIR/server.ext" -out "$DIR/server.pem" 2>/dev/null
  # Client certificates (for tests of tls.cert/tls.key), signed by the same CA.
  openssl req -newkey rsa:2048 -nodes -subj "/CN=sluice-client" -keyout "$DIR/client.key" -out "$DIR/client.csr" 2>/dev/null
  printf 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\n' > "$DIR/client.ext"
  openssl x509 -req -in "$DIR/client.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial -days 2 \
    -extfile "$DIR/client.ext" -out "$DIR/client.pem" 2>/dev/null
  chmod 600 "$DIR"/*.key
}

start() {
  if running; then echo "tls proxy for $DIR already running (pid $(cat "$PIDF"))"; return 0; fi
  : "${PORT:?set PORT (the listening port of the proxy)}" "${PASSWORD:?set PASSWORD}"
  local upstream=${UPSTREAM:-http://127.0.0.1:19200} user=${PROXY_USER:-sluice} bin
  bin=$(nginx_bin)
  mkdir -p "$DIR/tmp" "$DIR/logs"; chmod 755 "$DIR"
  certs
  printf '%s:%s\n' "$user" "$(openssl passwd -apr1 "$PASSWORD")" > "$DIR/htpasswd"; chmod 644 "$DIR/htpasswd"
  local verify=""
  [ "${CLIENT_CERT:-}" = required ] && verify="ssl_client_certificate $DIR/ca.pem; ssl_verify_client on;"
  cat > "$DIR/nginx.conf" <<EOF
worker_processes 1;
pid $PIDF;
error_log $DIR/logs/error.log warn;
events { worker_connections 256; }
http {
  access_log $DIR/logs/access.log;
  client_body_temp_path $DIR/tmp/body; proxy_temp_path $DIR/tmp/proxy;
  fastcgi_temp_path $DIR/tmp/fcgi; uwsgi_temp_path $DIR/tmp/uwsgi; scgi_temp_path $DIR/tmp/scgi;
  upstream backend { server ${upstream#http://}; keepalive 8; }
  server {
    listen 127.0.0.1:$PORT ssl;
    ssl_certificate $DIR/server.pem; ssl_certificate_key $DIR/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    $verify
    client_max_body_size 200m;
    proxy_request_buffering off;
    auth_basic "sluice test"; auth_basic_user_file $DIR/htpasswd;
    location / {
      proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_set_header Authorization ""; proxy_read_timeout 120s;
    }
  }
}
EOF
  "$bin" -p "$DIR" -c "$DIR/nginx.conf"
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      echo "tls proxy https://127.0.0.1:$PORT -> $upstream (user $user, CA $DIR/ca.pem)"; return 0
    fi
    sleep 0.1
  done
  echo "tls proxy did not listen on $PORT" >&2; cat "$DIR/logs/error.log" >&2; exit 1
}

stop() { stop_service QUIT 50 0.1 "tls proxy for $DIR"; }

case "$ACTION" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
