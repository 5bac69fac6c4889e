#!/usr/bin/env bash
# Headless browsers for the browser tests, from Debian's packages (no browser
# download): `chromium`, driven by playwright-core, and `firefox-esr`, driven
# over WebDriver BiDi by puppeteer-core (both dev dependencies of web/; no
# geckodriver). Idempotent. Tests launch and close the browsers themselves.
#   scripts/browser.sh install   apt-get install chromium, firefox-esr + fonts when missing
#   scripts/browser.sh version
set -euo pipefail
case "${1:-install}" in
  install)
    need=()
    [ -x /usr/bin/chromium ] || need+=(chromium)
    [ -x /usr/bin/firefox-esr ] || need+=(firefox-esr)
    if [ ${#need[@]} -gt 0 ]; then
      if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
      $SUDO apt-get update -q >/dev/null
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
        "${need[@]}" fonts-dejavu-core fonts-liberation >/dev/null
    fi ;;
  version) /usr/bin/chromium --version; /usr/bin/firefox-esr --version ;;
  *) echo "usage: $0 install|version" >&2; exit 2 ;;
esac
