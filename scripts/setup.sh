#!/usr/bin/env bash
# Installs what the tests need and a fresh Debian 12 machine lacks, idempotently.
# Everything downloaded goes under .cache/ (apt packages go to the system).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache
need=()
for p in pkg-config socat bsdutils curl python3-venv openssl; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "apt-get install ${need[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
# Real syslog senders (rsyslog, syslog-ng) for the end-to-end syslog tests.
scripts/syslog-clients.sh install >/dev/null
# A real OpenLDAP slapd for the LDAP login tests (crates/users/tests/ldap.rs
# starts its own instance on free ports with this script).
scripts/ldap.sh install >/dev/null
