#!/usr/bin/env bash
# Runs a single node with its web UI: builds the UI when it changed
# (scripts/web.sh build), then `cargo run --release -p sluice -- run CONFIG`
# (which embeds web/dist). Default config: examples/single-node.toml; the UI
# is at http://127.0.0.1:8080/.
#   scripts/run.sh [CONFIG] [-- extra sluice run arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-examples/single-node.toml}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
scripts/web.sh build
exec cargo run --release -p sluice -- run "$config" "$@"
