#!/usr/bin/env bash
# npm run bench: the benchmark runner with the project's Node; installs dependencies first on a fresh
# clone. Kafka and Postgres come up on free ports inside bench/run.ts (as for npm test). Options after
# `--` go to bench/run.ts (npm run bench -- --help).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source infra/node.sh
[ -d node_modules/kafkajs ] || npm ci --no-audit --no-fund
exec node bench/run.ts "$@"
