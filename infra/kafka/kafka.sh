#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft) for development, tests and CI, from Maven Central jars.
#   infra/kafka/kafka.sh install   resolve the broker jars into .tools/kafka/libs (cached)
#   infra/kafka/kafka.sh start     format (first time) and start on 127.0.0.1:$KAFKA_PORT, wait until ready
#   infra/kafka/kafka.sh stop      stop the broker started from this data directory
#   infra/kafka/kafka.sh status    exit 0 when the broker answers
# Settings: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (KAFKA_PORT+1), KAFKA_DATA_DIR
# (.tools/run/kafka-$KAFKA_PORT), KAFKA_HEAP (512m). Every step is idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
libs="$root/.tools/kafka/libs"
port=${KAFKA_PORT:-9092}
cport=${KAFKA_CONTROLLER_PORT:-$((port + 1))}
data=${KAFKA_DATA_DIR:-$root/.tools/run/kafka-$port}
heap=${KAFKA_HEAP:-512m}
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")

die() { echo "kafka.sh: $*" >&2; exit 1; }

need_tools() {
  command -v java >/dev/null || die "Java 17+ is required to run the Kafka broker (apt-get install openjdk-17-jre-headless)."
  command -v mvn >/dev/null || die "Maven is required to fetch the Kafka broker from Maven Central (apt-get install maven)."
}

install() {
  if [ -f "$libs/kafka_2.13-$version.jar" ] && [ -f "$libs/.complete-$version" ]; then return 0; fi
  need_tools
  echo "kafka.sh: resolving Apache Kafka $version from Maven Central" >&2
  rm -rf "$libs"
  (cd "$here" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs") \
    || die "Maven could not resolve org.apache.kafka:kafka_2.13:$version"
  touch "$libs/.complete-$version"
}

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

java_args=(-Xms128m "-Xmx$heap" -XX:+UseG1GC -Djava.awt.headless=true
  "-Dkafka.logs.dir=$data/logs" "-Dlog4j2.configurationFile=$here/log4j2.properties" -cp "$libs/*")
java_run() { java "${java_args[@]}" "$@"; }

start() {
  install
  command -v java >/dev/null || die "Java 17+ is required to run the Kafka broker."
  if [ -f "$data/broker.pid" ] && kill -0 "$(cat "$data/broker.pid")" 2>/dev/null && answers; then
    echo "kafka.sh: already running on 127.0.0.1:$port"; return 0
  fi
  mkdir -p "$data/logs" "$data/log-dirs"
  sed -e "s|@PORT@|$port|g" -e "s|@CPORT@|$cport|g" -e "s|@LOGDIRS@|$data/log-dirs|g" \
    "$here/server.properties" > "$data/server.properties"
  if [ ! -f "$data/log-dirs/meta.properties" ]; then
    java_run kafka.tools.StorageTool format -t "$(java_run kafka.tools.StorageTool random-uuid)" \
      -c "$data/server.properties" --ignore-formatted > "$data/logs/format.log" 2>&1 \
      || { cat "$data/logs/format.log" >&2; die "formatting the KRaft storage failed"; }
  fi
  : > "$data/logs/server.log"
  nohup java "${java_args[@]}" kafka.Kafka "$data/server.properties" > "$data/logs/stdout.log" 2>&1 &
  echo $! > "$data/broker.pid"
  for _ in $(seq 1 120); do
    if answers && grep -q "Kafka Server started" "$data/logs/server.log" "$data/logs/stdout.log" 2>/dev/null; then
      echo "kafka.sh: Kafka $version ready on 127.0.0.1:$port"; return 0
    fi
    kill -0 "$(cat "$data/broker.pid")" 2>/dev/null || { tail -n 30 "$data/logs/stdout.log" >&2; die "broker exited during start"; }
    sleep 0.5
  done
  tail -n 30 "$data/logs/stdout.log" >&2
  die "broker did not become ready within 60 s"
}

stop() {
  [ -f "$data/broker.pid" ] || return 0
  pid=$(cat "$data/broker.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$data/broker.pid"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) answers ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
