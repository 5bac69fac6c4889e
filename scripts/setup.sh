#!/usr/bin/env bash
# Installs what the tests need and a fresh Debian 12 machine lacks, idempotently,
# saying what it installs (scripts/deps.sh).
# Everything downloaded goes under .cache/ (apt packages go to the system).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache
# The build's own needs (compiler, headers, Node for the UI): scripts/deps.sh.
. scripts/deps.sh
deps_build
deps_node
# pkg-config, socat, logger, curl, python3-venv, openssl: test helpers;
# java + maven: the Kafka broker of scripts/kafka.sh and the OpenSearch node
# of scripts/opensearch.sh (unzip unpacks it); prometheus: its `promtool
# check metrics` reads /metrics in crates/sluice/tests/api_e2e.rs (the
# package also ships the Prometheus server; the tests do not start it).
# valgrind: the instruction counts of scripts/perf-gate.sh.
deps_apt pkg-config socat bsdutils curl python3-venv openssl openjdk-17-jre-headless maven unzip prometheus valgrind
# Real syslog senders (rsyslog, syslog-ng) for the end-to-end syslog tests.
scripts/syslog-clients.sh install >/dev/null
# A real OpenLDAP slapd for the LDAP login tests (crates/users/tests/ldap.rs
# starts its own instance on free ports with this script).
scripts/ldap.sh install >/dev/null
# Apache Kafka jars for the Kafka tests (≈ 1 min the first time, then cached).
scripts/kafka.sh install >/dev/null
# The official OpenSearch integ-test distribution for the elasticsearch sink's
# real-server tests (≈ 10-55 s the first time, then cached).
scripts/opensearch.sh install >/dev/null
# The Go test clients of crates/sluice/tests/stream_e2e.rs (go-lumber,
# fluent-logger-golang), built from the Go module proxy into .cache/go-clients
# (needs a Go toolchain: `go` on PATH or /usr/local/go; Debian's golang-go
# package is installed when neither is there).
if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then deps_apt golang-go; fi
scripts/go-clients.sh >/dev/null
