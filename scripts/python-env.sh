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
if ! "$py" -c 'import sys, elasticsearch; sys.exit(0 if elasticsearch.__versionstr__.startswith("8.") else 1)' 2>/dev/null; then
  echo "python-env: installing elasticsearch>=8,<9 into $venv" >&2
  "$py" -m pip install --quiet --disable-pip-version-check 'elasticsearch>=8,<9' >&2
fi
if ! "$py" -c 'import pygelf' 2>/dev/null; then
  echo "python-env: installing pygelf==0.4.3 into $venv" >&2
  "$py" -m pip install --quiet --disable-pip-version-check 'pygelf==0.4.3' >&2
fi
# splunk-handler (crates/sluice/tests/splunk_hec_e2e.rs) and
# python-logging-loki (crates/sluice/tests/loki_e2e.rs), issue #21.
if ! "$py" -c 'import splunk_handler' 2>/dev/null; then
  echo "python-env: installing splunk-handler==3.0.0 into $venv" >&2
  "$py" -m pip install --quiet --disable-pip-version-check 'splunk-handler==3.0.0' >&2
fi
if ! "$py" -c 'import logging_loki' 2>/dev/null; then
  echo "python-env: installing python-logging-loki==0.3.1 into $venv" >&2
  "$py" -m pip install --quiet --disable-pip-version-check 'python-logging-loki==0.3.1' >&2
fi
# The OpenTelemetry SDK with its OTLP HTTP and gRPC exporters
# (crates/sluice/tests/otlp_e2e.rs), issue #21.
if ! "$py" -c 'import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http, opentelemetry.exporter.otlp.proto.grpc' 2>/dev/null; then
  echo "python-env: installing opentelemetry-sdk and its OTLP exporters 1.45.2 into $venv" >&2
  "$py" -m pip install --quiet --disable-pip-version-check 'opentelemetry-sdk==1.45.2' \
    'opentelemetry-exporter-otlp-proto-http==1.45.2' 'opentelemetry-exporter-otlp-proto-grpc==1.45.2' >&2
fi
echo "$py"
