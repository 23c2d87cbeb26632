#!/usr/bin/env bash
# The test command (npm test): installs what is missing, starts a throwaway Kafka broker and Postgres
# on free loopback ports, runs every tap suite against them, and stops them again, whatever happens.
# Extra arguments go to tap (for example: npm test -- test/e2e/skeleton.test.ts).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source infra/node.sh

[ -d node_modules/kafkajs ] || npm ci --no-audit --no-fund

free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
run=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-test.XXXXXX")
chmod 755 "$run"
export KAFKA_PORT=$(free_port) KAFKA_CONTROLLER_PORT=$(free_port) PG_PORT=$(free_port)
# A SASL listener for the kafka destination type's tests (PLAIN and SCRAM users, infra/kafka/kafka.sh).
export KAFKA_SASL_PORT=$(free_port) KAFKA_SASL_USERS="switchyard:switchyard-secret,conformance:conformance-secret"
export KAFKA_DATA_DIR="$run/kafka" PG_DATA_DIR="$run/pg" PG_FAST=1
# pg_stat_statements, as the benchmark's --pg-statements loads it, so its reader is tested for real.
export PG_STAT_STATEMENTS=1

cleanup() {
  bash infra/kafka/kafka.sh stop || true
  bash infra/postgres/pg.sh stop || true
  rm -rf "$run"
}
trap cleanup EXIT INT TERM

bash infra/postgres/pg.sh start &
pg_pid=$!
bash infra/kafka/kafka.sh start
wait "$pg_pid"

export KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT"
# The Pub/Sub (pstest) and S3 (gofakes3) test peers, built with Go once and cached in .tools; tests
# start them on free ports.
SWITCHYARD_PUBSUB_PEER=$(bash infra/go-peer.sh pubsub)
SWITCHYARD_S3_PEER=$(bash infra/go-peer.sh s3)
export SWITCHYARD_PUBSUB_PEER SWITCHYARD_S3_PEER
export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/switchyard"
export SWITCHYARD_TEST_RUN="$run"

set +e
if [ $# -gt 0 ]; then
  tap --reporter=tap "$@" | tee "$run/tap.out" | node infra/tap-summary.ts
  status=${PIPESTATUS[0]}
else
  # tap starts files in name order, so test/faults (a broker or Postgres restarted, processes
  # killed, consumer groups rescaled: 30-90 s each) would start last and finish a minute or more
  # after everything else. They run in a lane of their own from the start, one at a time, beside
  # the other files (three at a time); their output follows the others', and the closing line
  # counts both. tap builds its runner first when its plugins changed (always on a fresh install),
  # and two runs building at once break each other: built here, once, before both start.
  tap build >/dev/null
  # The three-broker cluster suite (four JVMs and eight services, about 10 min) runs on its own, with
  # npm run test:cluster, which CI runs as a step after this one (.ci/run): beside three other test
  # files it would share the cores with them, and the work its faults make the services redo grows
  # with the host's load.
  faults_files=$(ls test/faults/*.test.ts | grep -v '/cluster\.test\.ts$')
  # shellcheck disable=SC2086 # one file name a word
  tap --reporter=tap --jobs=1 $faults_files > "$run/faults.tap" 2>&1 &
  faults=$!
  tap --reporter=tap --jobs=3 --exclude='test/faults/**' | tee "$run/tap.out"
  status=${PIPESTATUS[0]}
  wait "$faults"
  faults_status=$?
  cat "$run/faults.tap"
  [ "$status" -ne 0 ] || status=$faults_status
  cat "$run/faults.tap" "$run/tap.out" | node infra/tap-summary.ts --quiet
fi
set -e
exit "$status"
