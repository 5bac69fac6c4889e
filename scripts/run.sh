#!/usr/bin/env bash
# Runs a single node with its web UI. First checks what the build needs and
# installs what is missing (scripts/deps.sh: Debian packages as root or
# through sudo, Node from the npm registry when Debian's is too old), or stops
# at once with the exact command to run; then builds the UI when it changed
# (scripts/web.sh build) and runs `cargo run --release -p sluice -- run CONFIG`
# (which embeds web/dist). Default config: examples/single-node.toml; the UI
# is at http://127.0.0.1:8080/.
#   scripts/run.sh [CONFIG] [-- extra sluice run arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-examples/single-node.toml}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
. scripts/deps.sh
deps_build
deps_node
scripts/web.sh build
exec cargo run --release -p sluice -- run "$config" "$@"
