#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft) for development, tests and CI, from Maven Central jars.
#   infra/kafka/kafka.sh install   resolve the broker jars into .tools/kafka/libs (cached)
#   infra/kafka/kafka.sh start     format (first time) and start on 127.0.0.1:$KAFKA_PORT, wait until ready
#   infra/kafka/kafka.sh stop      stop the broker started from this data directory
#   infra/kafka/kafka.sh status    exit 0 when the broker answers
#   infra/kafka/kafka.sh scram USER PASSWORD [MECHANISM]   set a SCRAM user's password (running broker)
# Settings: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (KAFKA_PORT+1), KAFKA_DATA_DIR
# (.tools/run/kafka-$KAFKA_PORT), KAFKA_HEAP (512m). Every step is idempotent.
# KAFKA_SASL_PORT adds a SASL_PLAINTEXT listener on that port (the kafka destination type's tests):
# mechanisms PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 for the users of KAFKA_SASL_USERS
# ("user:password,..."; SCRAM users are created when the storage is formatted, PLAIN ones live in
# the listener's JAAS entry).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
libs="$root/.tools/kafka/libs"
port=${KAFKA_PORT:-9092}
cport=${KAFKA_CONTROLLER_PORT:-$((port + 1))}
data=${KAFKA_DATA_DIR:-$root/.tools/run/kafka-$port}
heap=${KAFKA_HEAP:-512m}
sasl_port=${KAFKA_SASL_PORT:-}
sasl_users=${KAFKA_SASL_USERS:-switchyard:switchyard-secret}
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

# Appends the SASL_PLAINTEXT listener to $data/server.properties and fills `scram` with the
# format options that create the SCRAM users.
sasl_listener() {
  local plain_users="" user pass
  IFS=',' read -ra pairs <<< "$sasl_users"
  for pair in "${pairs[@]}"; do
    user=${pair%%:*}; pass=${pair#*:}
    plain_users+=" user_$user=\"$pass\""
    scram+=(--add-scram "SCRAM-SHA-256=[name=$user,password=$pass]" --add-scram "SCRAM-SHA-512=[name=$user,password=$pass]")
  done
  sed -i -e "s|^listeners=PLAINTEXT://127.0.0.1:$port,|listeners=PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$sasl_port,|" \
    -e "s|^advertised.listeners=PLAINTEXT://127.0.0.1:$port|&,SASL_PLAINTEXT://127.0.0.1:$sasl_port|" \
    -e "s|^listener.security.protocol.map=.*|&,SASL_PLAINTEXT:SASL_PLAINTEXT|" "$data/server.properties"
  cat >> "$data/server.properties" <<PROPS
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain_users;
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
PROPS
}

# Sets (creates or changes) a SCRAM user's password on the running broker, for one mechanism (the
# broker takes one change per user and request, and each request is a JVM start).
set_scram() {
  [ $# -ge 2 ] || die "usage: kafka.sh scram USER PASSWORD [SCRAM-SHA-256|SCRAM-SHA-512]"
  java_run kafka.admin.ConfigCommand --bootstrap-server "127.0.0.1:$port" --alter --entity-type users --entity-name "$1" \
    --add-config "${3:-SCRAM-SHA-512}=[iterations=4096,password=$2]" > /dev/null \
    || die "setting the SCRAM credentials of $1 failed"
}

start() {
  install
  command -v java >/dev/null || die "Java 17+ is required to run the Kafka broker."
  if [ -f "$data/broker.pid" ] && kill -0 "$(cat "$data/broker.pid")" 2>/dev/null && answers; then
    echo "kafka.sh: already running on 127.0.0.1:$port"; return 0
  fi
  mkdir -p "$data/logs" "$data/log-dirs"
  sed -e "s|@PORT@|$port|g" -e "s|@CPORT@|$cport|g" -e "s|@LOGDIRS@|$data/log-dirs|g" \
    "$here/server.properties" > "$data/server.properties"
  local scram=()
  if [ -n "$sasl_port" ]; then sasl_listener; fi
  if [ ! -f "$data/log-dirs/meta.properties" ]; then
    java_run kafka.tools.StorageTool format -t "$(java_run kafka.tools.StorageTool random-uuid)" \
      -c "$data/server.properties" --ignore-formatted "${scram[@]}" > "$data/logs/format.log" 2>&1 \
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
  scram) shift; set_scram "$@" ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
