#!/usr/bin/env bash
# A real OpenSearch node on 127.0.0.1 for sluice's tests (adapted from the
# team's tried OpenSearch recipe): the official "integ-test-zip" distribution
# OpenSearch publishes on Maven Central
# (org.opensearch.distribution.integ-test-zip:opensearch:<ver>:zip) - the
# real server (bin/opensearch, Lucene, REST API: _bulk, _count, search,
# mappings, templates) without a bundled JDK, without the security plugin
# (plain HTTP, no auth) and without the optional modules (no painless,
# ingest-common, reindex). No Docker, no root needed. Idempotent.
#
# usage: scripts/opensearch.sh [install|start|stop|kill|reset|status|url] [INSTANCE]
#        scripts/opensearch.sh [cluster-start|cluster-stop|cluster-status] [NAME]
#   INSTANCE (default "main") names an independent node: its config, data,
#   logs and pid live in .cache/services/opensearch/<INSTANCE>/; the unpacked
#   distribution is shared (.cache/services/opensearch/opensearch-<ver>/,
#   read only: each instance points OPENSEARCH_PATH_CONF at its own config).
#   Ports: main listens on 19200 (HTTP) / 19300 (transport), started once by
#   scripts/check.sh for the whole run (like the Kafka broker); any other
#   instance must set OPENSEARCH_PORT and OPENSEARCH_TRANSPORT_PORT (tests
#   that need a node of their own, e.g. with a tiny write queue, pick free
#   ports and stop it when done).
#   env: OPENSEARCH_VERSION (2.19.6; 3.x needs Java 21), OPENSEARCH_PORT,
#        OPENSEARCH_TRANSPORT_PORT, OPENSEARCH_HEAP (512m), JAVA_HOME (auto),
#        OPENSEARCH_SETTINGS (extra opensearch.yml lines, e.g.
#        "thread_pool.write.queue_size: 1"), SERVICES_DIR (default
#        <repo>/.cache/services)
#   start  = install (if needed) + write the instance's config + start in
#            the background + wait for yellow + set 0 replicas (one node:
#            new indices turn green). A running instance is left alone.
#   stop   = SIGTERM, wait up to 30 s, then SIGKILL.
#   kill   = SIGKILL at once (fault tests), without waiting for anything.
#   reset  = deletes a stopped instance's data (a fresh node next start).
#   url    = prints http://127.0.0.1:<port>.
#
# A three-node cluster on localhost (the scale-out and fault tests): NAME
# (default "cluster") names instances NAME-1, NAME-2, NAME-3, each a
# cluster-manager-eligible data node with its own data dir, found through
# discovery.seed_hosts (the three transport ports) and bootstrapped with
# cluster.initial_cluster_manager_nodes. Ports: HTTP
# $OPENSEARCH_CLUSTER_HTTP_BASE+1..3 (default 19211-19213), transport
# $OPENSEARCH_CLUSTER_TRANSPORT_BASE+1..3 (default 19311-19313) - distinct
# from main's 19200/19300; tests pass free bases. Heap
# OPENSEARCH_HEAP (default 384m for cluster nodes). New indices keep the
# default of 1 replica.
#   cluster-start  = starts the three nodes (stale data of an earlier cluster
#                    of that NAME is deleted first) and waits until the
#                    cluster has 3 nodes; prints the three URLs.
#   cluster-stop   = stops the three nodes.
#   cluster-status = each node's state; exit 1 if any is stopped.
#
# OpenSearch refuses to run as root: as root the node runs inside a user
# namespace (unshare --user --map-user=1000: the JVM sees uid 1000, the files
# stay root's); without unshare, as a system user "opensearch".
# Needs: java 17+, mvn, unzip (scripts/setup.sh installs them). Measured on a
# 2-core Debian 12 box (recipe): install 32-55 s (56 MB zip), start 10 s idle,
# 23-39 s beside a cargo build (bin/opensearch launches 3 JVMs), RSS
# ~700 MB with -Xmx512m, stop < 1 s.
set -euo pipefail

ACTION=${1:-start}
INSTANCE=${2:-main}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${SERVICES_DIR:-$ROOT/.cache/services}
mkdir -p "$BASE"; BASE=$(cd "$BASE" && pwd)
O=$BASE/opensearch
D=$O/$INSTANCE
VER=${OPENSEARCH_VERSION:-2.19.6}
HOME_DIR=$O/opensearch-$VER
if [ "$INSTANCE" = main ]; then
  PORT=${OPENSEARCH_PORT:-19200}; TPORT=${OPENSEARCH_TRANSPORT_PORT:-19300}
else
  PORT=${OPENSEARCH_PORT:-}; TPORT=${OPENSEARCH_TRANSPORT_PORT:-}
  # A running instance's port is in its config; start needs both set.
  [ -n "$PORT" ] || PORT=$(sed -n 's/^http.port: //p' "$D/config/opensearch.yml" 2>/dev/null || true)
fi
HEAP=${OPENSEARCH_HEAP:-512m}
PIDF=$D/opensearch.pid
URL=http://127.0.0.1:$PORT

# shellcheck source=scripts/service-lib.sh
. "$ROOT/scripts/service-lib.sh"

install() {
  [ -x "$HOME_DIR/bin/opensearch" ] && return 0
  command -v java >/dev/null || { echo "opensearch.sh: java not found (scripts/setup.sh installs it)" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "opensearch.sh: mvn not found (scripts/setup.sh installs it)" >&2; exit 1; }
  command -v unzip >/dev/null || { echo "opensearch.sh: unzip not found (scripts/setup.sh installs it)" >&2; exit 1; }
  mkdir -p "$O"
  if [ ! -f "$O/opensearch-$VER.zip" ]; then
    (cd "$O" && mvn -B -q -Dmaven.repo.local="$BASE/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
      -Dartifact="org.opensearch.distribution.integ-test-zip:opensearch:$VER:zip" -DoutputDirectory=.)
  fi
  rm -rf "$HOME_DIR.tmp"; mkdir -p "$HOME_DIR.tmp"
  (cd "$HOME_DIR.tmp" && unzip -q "$O/opensearch-$VER.zip")
  mv "$HOME_DIR.tmp/opensearch-$VER" "$HOME_DIR"; rmdir "$HOME_DIR.tmp"
}

# The integ-test zip has no analysis-common module; sluice's index mapping
# (crates/opensearch/src/mapping.rs: the `pattern` tokenizer and `length`
# filter, as in every full distribution) needs it. Its jar is on Maven
# Central (org.opensearch.plugin:analysis-common); the module descriptor is
# written here. A node started before it was added must be restarted.
install_analysis_common() {
  local M=$HOME_DIR/modules/analysis-common
  [ -f "$M/plugin-descriptor.properties" ] && return 0
  rm -rf "$M.tmp"; mkdir -p "$M.tmp"
  (cd "$M.tmp" && mvn -B -q -Dmaven.repo.local="$BASE/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
    -Dartifact="org.opensearch.plugin:analysis-common:$VER:jar" -DoutputDirectory=.)
  printf '%s\n' "description=Adds analyzers (pattern tokenizer, length filter...)" "version=$VER" \
    "name=analysis-common" "classname=org.opensearch.analysis.common.CommonAnalysisPlugin" "java.version=11" \
    "opensearch.version=$VER" "custom.foldername=" "extended.plugins=" "has.native.controller=false" \
    > "$M.tmp/plugin-descriptor.properties"
  mv "$M.tmp" "$M"
}

# CLUSTER (set by cluster-start) holds the cluster's name, SEEDS and MANAGERS its members.
CLUSTER=${CLUSTER:-}

discovery() {
  if [ -n "$CLUSTER" ]; then
    printf 'discovery.seed_hosts: [%s]\ncluster.initial_cluster_manager_nodes: [%s]\n' "$SEEDS" "$MANAGERS"
  else
    echo "discovery.type: single-node"
  fi
}

configure() {
  mkdir -p "$D/data" "$D/logs"
  rm -rf "$D/config"; cp -r "$HOME_DIR/config" "$D/config"
  {
    cat <<EOF
cluster.name: sluice-test-${CLUSTER:-$INSTANCE}
node.name: $INSTANCE
path.data: $D/data
path.logs: $D/logs
network.host: 127.0.0.1
http.port: $PORT
transport.port: $TPORT
$(discovery)
action.auto_create_index: true
# A test node on a shared, fairly full disk: no disk watermarks (past the
# flood stage OpenSearch blocks index creation and makes indices read-only).
cluster.routing.allocation.disk.threshold_enabled: false
EOF
    [ -n "${OPENSEARCH_SETTINGS:-}" ] && printf '%s\n' "$OPENSEARCH_SETTINGS"
    true
  } > "$D/config/opensearch.yml"
}

# Starts the node in the background (no waiting).
launch() {
  if [ -z "$PORT" ] || [ -z "$TPORT" ]; then
    echo "opensearch.sh: set OPENSEARCH_PORT and OPENSEARCH_TRANSPORT_PORT for instance $INSTANCE" >&2; exit 2
  fi
  if port_open "$PORT"; then echo "opensearch.sh: port $PORT is taken by another process" >&2; exit 1; fi
  install; install_analysis_common; configure
  local jh=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}
  local wrap=()
  if [ "$(id -u)" = 0 ]; then
    if unshare --user --map-user=1000 --map-group=1000 true 2>/dev/null; then
      wrap=(unshare --user --map-user=1000 --map-group=1000)
    else
      id -u opensearch >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin opensearch
      chown -R opensearch: "$D"
      wrap=(runuser -u opensearch --)
    fi
  fi
  rm -f "$PIDF"
  # The whole subshell is redirected: nothing may keep the caller's stdout open.
  (cd "$HOME_DIR" && OPENSEARCH_PATH_CONF="$D/config" OPENSEARCH_JAVA_HOME="$jh" \
     OPENSEARCH_JAVA_OPTS="-Xms$HEAP -Xmx$HEAP" \
     exec nohup "${wrap[@]}" ./bin/opensearch -p "$PIDF") > "$D/stdout.log" 2>&1 < /dev/null 9>&- &
}

start() {
  if running; then echo "opensearch $INSTANCE already running on $URL (pid $(cat "$PIDF"))"; return 0; fi
  launch
  for _ in $(seq 1 360); do
    if curl -sf -m 2 "$URL/_cluster/health?wait_for_status=yellow&timeout=1s" >/dev/null 2>&1; then
      # One node: new indices get 0 replicas so they turn green (a yml entry is
      # ignored); a create-index block an earlier full disk left is lifted.
      curl -sf -XPUT -H 'Content-Type: application/json' "$URL/_cluster/settings" \
        -d '{"persistent":{"cluster.default_number_of_replicas":0,"cluster.blocks.create_index":null}}' >/dev/null
      echo "opensearch $INSTANCE up on $URL (pid $(cat "$PIDF"))"; return 0
    fi
    if [ -s "$PIDF" ] && ! running; then echo "opensearch $INSTANCE died:" >&2; tail -30 "$D/stdout.log" >&2; exit 1; fi
    sleep 0.5
  done
  echo "opensearch $INSTANCE did not start in 180 s" >&2; tail -30 "$D/stdout.log" >&2; exit 1
}

stop() { stop_service TERM 60 0.5 "opensearch $INSTANCE"; }

# The instance variables for member I (1-3) of cluster NAME.
member() {
  INSTANCE=$1-$2; D=$O/$INSTANCE; PIDF=$D/opensearch.pid
  PORT=$(( ${OPENSEARCH_CLUSTER_HTTP_BASE:-19210} + $2 )); TPORT=$(( ${OPENSEARCH_CLUSTER_TRANSPORT_BASE:-19310} + $2 ))
  URL=http://127.0.0.1:$PORT
}

cluster_start() {
  local name=$1 i
  CLUSTER=$name; HEAP=${OPENSEARCH_HEAP:-384m}; SEEDS=""; MANAGERS=""
  for i in 1 2 3; do
    member "$name" "$i"
    SEEDS="$SEEDS${SEEDS:+, }\"127.0.0.1:$TPORT\""; MANAGERS="$MANAGERS${MANAGERS:+, }\"$INSTANCE\""
  done
  local any=0
  for i in 1 2 3; do member "$name" "$i"; running && any=1; done
  if [ $any = 0 ]; then
    # A new cluster: data of an earlier one (another cluster UUID) would stop it forming.
    for i in 1 2 3; do member "$name" "$i"; rm -rf "$D/data"; done
  fi
  install
  for i in 1 2 3; do member "$name" "$i"; running || launch; done
  member "$name" 1
  for _ in $(seq 1 360); do
    if curl -sf -m 2 "$URL/_cluster/health?wait_for_nodes=3&wait_for_status=green&timeout=1s" >/dev/null 2>&1; then
      for i in 1 2 3; do member "$name" "$i"; echo "$URL"; done
      return 0
    fi
    for i in 1 2 3; do
      member "$name" "$i"
      if [ -s "$PIDF" ] && ! running; then echo "opensearch $INSTANCE died:" >&2; tail -30 "$D/stdout.log" >&2; exit 1; fi
    done
    member "$name" 1
    sleep 0.5
  done
  echo "cluster $name did not form in 180 s" >&2; tail -30 "$D/stdout.log" >&2; exit 1
}

NAME=${INSTANCE/main/cluster}
case "$ACTION" in
  cluster-start) mkdir -p "$O"; exec 9>"$O/$NAME.lock"; flock 9; cluster_start "$NAME" ;;
  cluster-stop) for i in 1 2 3; do member "$NAME" "$i"; stop; done ;;
  cluster-status)
    rc=0
    for i in 1 2 3; do
      member "$NAME" "$i"
      if running; then echo "$INSTANCE running pid $(cat "$PIDF") on $URL"; else echo "$INSTANCE stopped"; rc=1; fi
    done
    exit $rc ;;
  kill) if running; then kill -9 "$(cat "$PIDF")"; echo "opensearch $INSTANCE killed"; fi ;;
  reset)
    if running; then echo "opensearch.sh: $INSTANCE is running; stop it first" >&2; exit 1; fi
    [ "$INSTANCE" = main ] && { echo "opensearch.sh: will not reset main" >&2; exit 1; }
    rm -rf "$D/data" ;;
  install) install; install_analysis_common ;;
  start)
    # Tests of several binaries may ask at the same moment: one starts the
    # node, the others wait for it and find it running (the node itself must
    # not inherit the lock: 9>&- where it is launched).
    mkdir -p "$D"; exec 9>"$D/start.lock"; flock 9; start ;;
  stop) stop ;;
  status) if running; then echo "running pid $(cat "$PIDF") on $URL"; else echo "stopped"; exit 1; fi ;;
  url) echo "$URL" ;;
  *) echo "usage: $0 [install|start|stop|kill|reset|status|url] [INSTANCE] | [cluster-start|cluster-stop|cluster-status] [NAME]" >&2; exit 2 ;;
esac
