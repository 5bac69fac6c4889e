#!/usr/bin/env bash
# Builds (once, again when a source changes) the Go test clients under
# testdata/clients/go — `lumber` (github.com/elastic/go-lumber, the
# Lumberjack v2 library Beats use) and `fluent` (fluent-logger-golang with
# RequestAck) — into .cache/go-clients/; prints that directory. Used by the
# beats / fluent_forward real-client tests (crates/sluice/tests/stream_e2e.rs).
# Idempotent and safe to run concurrently (flock); progress goes to stderr.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/testdata/clients/go"
out="$root/.cache/go-clients"
go="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
stamp="$out/.stamp"
if [ -x "$out/lumber" ] && [ -x "$out/fluent" ] && [ -f "$stamp" ] \
  && [ -z "$(find "$src" -newer "$stamp" -type f | head -1)" ]; then
  echo "$out"
  exit 0
fi
echo "go-clients: building $src into $out" >&2
(cd "$src" && GOFLAGS=-mod=mod "$go" build -o "$out/" ./lumber ./fluent) >&2
touch "$stamp"
echo "$out"
