#!/usr/bin/env bash
# Headless Chromium for the browser tests, from Debian's `chromium` package
# (no browser download: playwright-core, a dev dependency of web/, only drives
# /usr/bin/chromium). Idempotent. Tests launch and close Chromium themselves.
#   scripts/browser.sh install   apt-get install chromium + fonts when missing
#   scripts/browser.sh version
set -euo pipefail
case "${1:-install}" in
  install)
    if ! [ -x /usr/bin/chromium ]; then
      if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
      $SUDO apt-get update -q >/dev/null
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
        chromium fonts-dejavu-core fonts-liberation >/dev/null
    fi ;;
  version) /usr/bin/chromium --version ;;
  *) echo "usage: $0 install|version" >&2; exit 2 ;;
esac
