#!/usr/bin/env bash
# A local Apache Kafka cluster (KRaft) of three brokers and one controller, from the same Maven
# Central jars as kafka.sh, for the cluster fault suite (test/faults/cluster.test.ts) and for trying
# a replicated setup by hand. Loopback only.
#   infra/kafka/cluster.sh start [N]   start every node (or broker N: 1, 2 or 3), wait until ready
#   infra/kafka/cluster.sh stop [N]    stop every node (or broker N) with SIGTERM (a clean shutdown)
#   infra/kafka/cluster.sh kill N      SIGKILL broker N (a crash: no shutdown, no flush)
#   infra/kafka/cluster.sh brokers     print the bootstrap list (127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3)
#   infra/kafka/cluster.sh status [N]  exit 0 when every broker (or broker N) answers
# Settings: KAFKA_CLUSTER_DIR (.tools/run/kafka-cluster): data, logs and pids of every node;
# KAFKA_CLUSTER_PORTS ("P1,P2,P3": the brokers' ports; default 19092,19093,19094),
# KAFKA_CLUSTER_CONTROLLER_PORT (default 19091), both remembered in the directory at the first start;
# KAFKA_HEAP (320m a broker; the controller takes 192m). Every step is idempotent.
#
# The controller is a node of its own (node 0), so that brokers can be killed down to one without
# losing the metadata quorum: that is how "below min.insync.replicas" looks in production, where
# three controllers outlive the brokers. Production runs three controllers (docs/operations.md).
# Topics' defaults match a production cluster: replication factor 3, min.insync.replicas 2, also for
# the consumer offsets.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
libs="$root/.tools/kafka/libs"
dir=${KAFKA_CLUSTER_DIR:-$root/.tools/run/kafka-cluster}
heap=${KAFKA_HEAP:-320m}
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")

die() { echo "cluster.sh: $*" >&2; exit 1; }

mkdir -p "$dir"
if [ ! -f "$dir/ports" ]; then
  echo "${KAFKA_CLUSTER_CONTROLLER_PORT:-19091},${KAFKA_CLUSTER_PORTS:-19092,19093,19094}" > "$dir/ports"
fi
IFS=',' read -ra ports < "$dir/ports"
[ "${#ports[@]}" -eq 4 ] || die "$dir/ports must hold the controller's port and three brokers' ports"
cport=${ports[0]}

node_dir() { echo "$dir/node-$1"; }
pid_of() { cat "$(node_dir "$1")/pid" 2>/dev/null || true; }
alive() { local pid; pid=$(pid_of "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/${ports[$1]}") 2>/dev/null; }
check_node() { [[ "$1" =~ ^[0-3]$ ]] || die "node must be 1, 2 or 3 (0: the controller), not '$1'"; }

java_args() {
  local n=$1 h=$heap
  [ "$n" -eq 0 ] && h=192m
  echo "-Xms64m -Xmx$h -XX:+UseG1GC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true -Dkafka.logs.dir=$(node_dir "$n")/logs -Dlog4j2.configurationFile=$here/log4j2.properties"
}

# The properties of node N: node 0 the controller, 1-3 brokers.
properties() {
  local n=$1 d
  d=$(node_dir "$n")
  if [ "$n" -eq 0 ]; then
    cat <<PROPS
process.roles=controller
node.id=0
controller.quorum.voters=0@127.0.0.1:$cport
listeners=CONTROLLER://127.0.0.1:$cport
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT
log.dirs=$d/log-dirs
PROPS
  else
    cat <<PROPS
process.roles=broker
node.id=$n
controller.quorum.voters=0@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:${ports[$n]}
advertised.listeners=PLAINTEXT://127.0.0.1:${ports[$n]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/log-dirs
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
# A replica that stops fetching leaves the ISR after this long (Kafka's default: 30 s); shorter, so
# the suite sees below-min-ISR and recovery within seconds. Production keeps the default.
replica.lag.time.max.ms=10000
# A cleanly stopped broker hands its leaderships over first (the rolling restart relies on it).
controlled.shutdown.enable=true
log.segment.bytes=16777216
num.network.threads=2
num.io.threads=2
background.threads=2
num.replica.fetchers=1
PROPS
  fi
}

# Made once, before the nodes format side by side.
cluster_id() {
  if [ ! -f "$dir/cluster-id" ]; then
    java $(java_args 0) -cp "$libs/*" kafka.tools.StorageTool random-uuid > "$dir/cluster-id"
  fi
  cat "$dir/cluster-id"
}

start_node() {
  local n=$1 d
  d=$(node_dir "$n")
  if alive "$n" && { [ "$n" -eq 0 ] || answers "$n"; }; then return 0; fi
  mkdir -p "$d/logs" "$d/log-dirs"
  properties "$n" > "$d/server.properties"
  if [ ! -f "$d/log-dirs/meta.properties" ]; then
    java $(java_args "$n") -cp "$libs/*" kafka.tools.StorageTool format -t "$(cluster_id)" -c "$d/server.properties" \
      --ignore-formatted > "$d/logs/format.log" 2>&1 || { cat "$d/logs/format.log" >&2; die "formatting node $n failed"; }
  fi
  : > "$d/logs/server.log"
  # shellcheck disable=SC2046
  nohup java $(java_args "$n") -cp "$libs/*" kafka.Kafka "$d/server.properties" > "$d/logs/stdout.log" 2>&1 &
  echo $! > "$d/pid"
}

# Waits until node N logged its start (and a broker answers on its port), for up to 120 s.
wait_node() {
  local n=$1 d
  d=$(node_dir "$n")
  for _ in $(seq 1 240); do
    if grep -q "Kafka Server started" "$d/logs/server.log" "$d/logs/stdout.log" 2>/dev/null && { [ "$n" -eq 0 ] || answers "$n"; }; then
      return 0
    fi
    alive "$n" || { tail -n 30 "$d/logs/stdout.log" >&2; die "node $n exited during start"; }
    sleep 0.5
  done
  tail -n 30 "$d/logs/stdout.log" >&2
  die "node $n did not become ready within 120 s"
}

stop_node() {
  local n=$1 signal=${2:-TERM} pid
  pid=$(pid_of "$n")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "-$signal" "$pid"
    # A clean shutdown hands leaderships over first; SIGKILL after 60 s.
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$(node_dir "$n")/pid"
}

brokers() { echo "127.0.0.1:${ports[1]},127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}"; }

case "${1:-}" in
  start)
    [ -f "$libs/.complete-$version" ] || bash "$here/kafka.sh" install
    command -v java >/dev/null || die "Java 17+ is required to run the Kafka brokers."
    if [ -n "${2:-}" ]; then
      check_node "$2"; start_node "$2"; wait_node "$2"
    else
      start_node 0; wait_node 0
      # Formatting is a JVM start of its own: the three brokers format and start side by side.
      # (`wait` on these three only: the controller is a child of this shell too.)
      starting=()
      for n in 1 2 3; do start_node "$n" & starting+=($!); done
      wait "${starting[@]}"
      for n in 1 2 3; do wait_node "$n"; done
      echo "cluster.sh: Kafka $version cluster ready on $(brokers)"
    fi
    ;;
  stop)
    if [ -n "${2:-}" ]; then
      check_node "$2"; stop_node "$2"
    else
      for n in 1 2 3; do stop_node "$n" & done
      wait
      stop_node 0
    fi
    ;;
  kill)
    [ -n "${2:-}" ] || die "usage: cluster.sh kill N"
    check_node "$2"; stop_node "$2" KILL
    ;;
  brokers) brokers ;;
  status)
    if [ -n "${2:-}" ]; then check_node "$2"; answers "$2"; else answers 1 && answers 2 && answers 3; fi
    ;;
  *) echo "usage: $0 start [N]|stop [N]|kill N|brokers|status [N]" >&2; exit 2 ;;
esac
