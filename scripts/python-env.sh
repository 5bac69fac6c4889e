#!/usr/bin/env bash
# Creates (once) a project-local Python venv at .cache/venv holding the
# official Elasticsearch client, used by the http source's real-client test
# (crates/components/tests/es_bulk_python.rs), and pygelf, used by the gelf
# source's real-client test (crates/sluice/tests/gelf_e2e.rs); prints the
# venv's python.
# Idempotent and safe to run concurrently (flock); progress goes to stderr,
# only the interpreter path goes to stdout.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache"
venv="$cache/venv"
py="$venv/bin/python"
mkdir -p "$cache"
exec 9>"$cache/python-env.lock"
flock 9
if [ ! -x "$py" ]; then
  echo "python-env: creating $venv" >&2
  python3 -m venv "$venv" >&2
fi
# need CHECK SPEC...: pip-installs the SPECs unless the python statement CHECK
# runs (an import, or a version test)
need() {
  local check=$1; shift
  "$py" -c "$check" 2>/dev/null && return 0
  echo "python-env: installing $* into $venv" >&2
  "$py" -m pip install --quiet --disable-pip-version-check "$@" >&2
}
need 'import sys, elasticsearch; sys.exit(0 if elasticsearch.__versionstr__.startswith("8.") else 1)' 'elasticsearch>=8,<9'
need 'import pygelf' 'pygelf==0.4.3'
# splunk-handler (crates/sluice/tests/splunk_hec_e2e.rs) and
# python-logging-loki (crates/sluice/tests/loki_e2e.rs), issue #21.
need 'import splunk_handler' 'splunk-handler==3.0.0'
need 'import logging_loki' 'python-logging-loki==0.3.1'
# The OpenTelemetry SDK with its OTLP HTTP and gRPC exporters
# (crates/sluice/tests/otlp_e2e.rs), issue #21.
need 'import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http, opentelemetry.exporter.otlp.proto.grpc' \
  'opentelemetry-sdk==1.45.2' 'opentelemetry-exporter-otlp-proto-http==1.45.2' 'opentelemetry-exporter-otlp-proto-grpc==1.45.2'
echo "$py"
