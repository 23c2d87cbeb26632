#!/usr/bin/env bash
# npm run infra:up: local Kafka and Postgres on their default ports (idempotent).
set -euo pipefail
here=$(dirname "$0")
bash "$here/postgres/pg.sh" start
bash "$here/kafka/kafka.sh" start
