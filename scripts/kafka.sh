#!/usr/bin/env bash
# A real Apache Kafka broker for sluice's tests and benchmarks (adapted from
# the team's tried Kafka recipe): KRaft, one combined broker+controller on 127.0.0.1,
# built from Maven Central jars (no tarball, no Docker). Idempotent.
#
# usage: scripts/kafka.sh [install|start|stop|status|topics] [INSTANCE]
#   INSTANCE (default "main") names an independent broker: its data, config,
#   log and pid live in .cache/services/kafka/<INSTANCE>/; the jars are shared
#   in .cache/services/kafka/lib. Ports per instance:
#     main: 19092 (broker) / 19093 (controller); any other instance must set
#     KAFKA_PORT and KAFKA_CONTROLLER_PORT (the tests use 19094/19095 for the
#     broker-restart case so restarting it never disturbs other tests).
#   env: KAFKA_VERSION (4.1.1), KAFKA_HEAP (512m), KAFKA_AUTO_CREATE (false),
#        SERVICES_DIR (default <repo>/.cache/services)
#   start  = install (if needed) + format storage (first time only) + start in
#            the background + wait until the broker answers. Prints the
#            bootstrap address. A running instance is left alone.
#   stop   = SIGTERM, wait up to 30 s, then SIGKILL.
#   topics = lists the topics (kafka-topics --list).
#   create TOPIC PARTITIONS [INSTANCE] = creates a topic (replication 1).
#
# Auto-creation of topics is OFF by default: a sink writing to a topic that
# does not exist gets a clear error instead of a silently created topic with
# the wrong partition count. Tests create their topics with the partitions
# they need.
#
# Needs: java 17+, mvn (scripts/setup.sh installs them). Measured on a 2-core
# Debian 12 box: install 37-55 s cold (46 jars, 43 MB), format ~5 s (first
# start only), start 6-14 s, RSS ~400 MB with -Xmx512m, stop ~2 s.
set -euo pipefail

ACTION=${1:-start}
if [ "$ACTION" = create ]; then
  TOPIC=${2:?usage: kafka.sh create TOPIC PARTITIONS [INSTANCE]}; PARTS=${3:?partitions}; shift 2
fi
INSTANCE=${2:-main}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${SERVICES_DIR:-$ROOT/.cache/services}
mkdir -p "$BASE"; BASE=$(cd "$BASE" && pwd)
K=$BASE/kafka
D=$K/$INSTANCE
VER=${KAFKA_VERSION:-4.1.1}
LOG4J=2.24.3
if [ "$INSTANCE" = main ]; then
  PORT=${KAFKA_PORT:-19092}; CPORT=${KAFKA_CONTROLLER_PORT:-19093}
else
  PORT=${KAFKA_PORT:?set KAFKA_PORT for instance $INSTANCE}
  CPORT=${KAFKA_CONTROLLER_PORT:?set KAFKA_CONTROLLER_PORT for instance $INSTANCE}
fi
HEAP=${KAFKA_HEAP:-512m}
AUTO_CREATE=${KAFKA_AUTO_CREATE:-false}
PIDF=$D/kafka.pid

# shellcheck source=scripts/service-lib.sh
. "$ROOT/scripts/service-lib.sh"

install() {
  if [ -f "$K/lib/.ok-$VER" ]; then return 0; fi
  command -v java >/dev/null || { echo "kafka.sh: java not found (scripts/setup.sh installs it)" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "kafka.sh: mvn not found (scripts/setup.sh installs it)" >&2; exit 1; }
  mkdir -p "$K"
  # Kafka 4.x logs through slf4j 1.7 -> log4j2, hence log4j-slf4j-impl.
  cat > "$K/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>kafka-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$VER</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$VER</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J</version></dependency>
  </dependencies>
</project>
EOF
  rm -rf "$K/lib"
  (cd "$K" && mvn -B -q -Dmaven.repo.local="$BASE/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
      -DoutputDirectory=lib -DincludeScope=runtime)
  touch "$K/lib/.ok-$VER"
}

configure() {
  mkdir -p "$D/data"
  cat > "$D/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$D/data
num.partitions=1
auto.create.topics.enable=$AUTO_CREATE
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=24
log.segment.bytes=67108864
EOF
  cat > "$D/log4j2.properties" <<'EOF'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
EOF
  if [ ! -f "$D/data/meta.properties" ]; then
    local id
    id=$(java -cp "$K/lib/*" kafka.tools.StorageTool random-uuid)
    java -Dlog4j2.configurationFile="$D/log4j2.properties" -cp "$K/lib/*" \
      kafka.tools.StorageTool format -t "$id" -c "$D/server.properties" > "$D/format.log" 2>&1
  fi
}

start() {
  if running; then echo "kafka $INSTANCE already running on 127.0.0.1:$PORT (pid $(cat "$PIDF"))"; return 0; fi
  if port_open "$PORT"; then echo "kafka.sh: port $PORT is taken by another process" >&2; exit 1; fi
  install; configure
  : > "$D/kafka.log"
  nohup java -Xms256m -Xmx"$HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$D/log4j2.properties" -cp "$K/lib/*" \
    kafka.Kafka "$D/server.properties" > "$D/kafka.log" 2>&1 < /dev/null 9>&- &
  echo $! > "$PIDF"
  for _ in $(seq 1 240); do
    if grep -q 'Kafka Server started' "$D/kafka.log" && port_open "$PORT"; then
      echo "kafka $INSTANCE up on 127.0.0.1:$PORT (pid $(cat "$PIDF"))"; return 0; fi
    running || { echo "kafka $INSTANCE died:" >&2; tail -30 "$D/kafka.log" >&2; exit 1; }
    sleep 0.5
  done
  echo "kafka $INSTANCE did not start in 120 s" >&2; tail -30 "$D/kafka.log" >&2; exit 1
}

stop() { stop_service TERM 60 0.5 "kafka $INSTANCE"; }

case "$ACTION" in
  install) install ;;
  start)
    # Tests of several binaries may ask at the same moment: one starts the
    # broker, the others wait for it and find it running (the broker itself
    # must not inherit the lock: 9>&- where it is launched).
    mkdir -p "$D"; exec 9>"$D/start.lock"; flock 9; start ;;
  stop) stop ;;
  status) if running; then echo "running pid $(cat "$PIDF") on 127.0.0.1:$PORT"; else echo "stopped"; exit 1; fi ;;
  topics) java -Dlog4j2.configurationFile="$D/log4j2.properties" -cp "$K/lib/*" \
            org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$PORT" --list ;;
  create) java -Dlog4j2.configurationFile="$D/log4j2.properties" -cp "$K/lib/*" \
            org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$PORT" \
            --create --topic "$TOPIC" --partitions "$PARTS" --replication-factor 1 2>&1 | grep -E 'Created topic|Error|ERROR|exists' ;;
  *) echo "usage: $0 [install|start|stop|status|topics|create TOPIC PARTITIONS] [INSTANCE]" >&2; exit 2 ;;
esac
