#!/usr/bin/env bash
# The web UI (web/): install its npm packages, check, build, browser-test.
# Idempotent; npm's cache lives in .cache/npm, node_modules in web/ (ignored).
#
#   scripts/web.sh install   npm ci, skipped when package-lock.json is unchanged
#   scripts/web.sh build     install + vite build into web/dist + bundle-size check
#                            (skipped when nothing under web/ changed since the last build)
#   scripts/web.sh check     what CI runs: npm ci (always), lint, typecheck, Vitest, build, size
#   scripts/web.sh e2e [BIN] browser tests: real headless Chromium (web/e2e/chromium.mjs)
#                            and Firefox ESR (web/e2e/firefox.mjs), installed by
#                            scripts/browser.sh, one after the other, against a real
#                            sluice binary (default target/debug/sluice), then the
#                            core Chromium journey on an OpenSearch-backed node
#                            (web/e2e/chromium-opensearch.mjs; scripts/opensearch.sh);
#                            E2E_BROWSERS="firefox" runs one of them
#
# Needs Node >= 20.19 and npm (Debian: apt-get install nodejs npm, or NodeSource).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
web=$root/web
export npm_config_cache=$root/.cache/npm npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
mkdir -p "$root/.cache"

need_node() {
  command -v node >/dev/null && command -v npm >/dev/null || { echo "web.sh: node and npm are needed (Node >= 20.19)" >&2; exit 1; }
}

install() {
  need_node
  local stamp=$web/node_modules/.sluice-lock
  local sum; sum=$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)
  if [ "${1:-}" != force ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return; fi
  (cd "$web" && npm ci --prefer-offline --loglevel=error)
  echo "$sum" > "$stamp"
}

# A fingerprint of everything the build reads.
sources_sum() {
  (cd "$web" && find src public index.html vite.config.ts tsconfig.json package-lock.json scripts -type f -print0 2>/dev/null |
    sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

build() {
  install
  local stamp=$web/dist/.sources.sum   # per checkout: .cache may be shared between worktrees
  local sum; sum=$(sources_sum)
  if [ "${1:-}" != force ] && [ -f "$web/dist/index.html" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    echo "web: dist is up to date"; return
  fi
  (cd "$web" && npm run --silent build)
  echo "$sum" > "$stamp"
}

check() {
  install force
  (cd "$web" && npm run --silent lint && npm run --silent typecheck && npm test --silent)
  build force
}

e2e() {
  install
  scripts/browser.sh install
  local bin=${1:-${SLUICE_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/sluice}}
  [ -x "$bin" ] || { echo "web.sh e2e: no sluice binary at $bin (cargo build -p sluice)" >&2; exit 1; }
  rm -rf "$root/.cache/artifacts/browser"; mkdir -p "$root/.cache/artifacts/browser"
  local files=()
  for b in ${E2E_BROWSERS:-chromium firefox chromium-opensearch}; do files+=("e2e/$b.mjs"); done
  # One node:test run (one TAP summary); files one at a time: 2 cores, two browsers.
  (cd "$web" && SLUICE_BIN="$bin" ARTIFACTS="$root/.cache/artifacts/browser" \
    node --test --test-concurrency=1 --test-reporter=tap "${files[@]}")
}

case "${1:-}" in
  install) install force ;;
  build) build "${2:-}" ;;
  check) check ;;
  e2e) e2e "${2:-}" ;;
  *) echo "usage: $0 install|build [force]|check|e2e [BIN]" >&2; exit 2 ;;
esac
