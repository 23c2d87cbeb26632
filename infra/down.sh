#!/usr/bin/env bash
# npm run infra:down: stops what infra:up started.
set -euo pipefail
here=$(dirname "$0")
bash "$here/kafka/kafka.sh" stop
bash "$here/postgres/pg.sh" stop
