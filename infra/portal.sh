#!/usr/bin/env bash
# Builds the tenant portal (services/portal -> services/portal/dist, served by the gateway at
# /portal) when it is missing or older than its sources (and the typed client it imports);
# `--force` always rebuilds. npm start, npm run start:stack and the browser tests call it. A lock keeps concurrent callers (parallel test
# files) from building over each other: the second finds the build fresh and returns.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source infra/node.sh
portal=services/portal
exec 9>"$portal/.build.lock"
flock 9
stale() {
  [ -f "$portal/dist/index.html" ] || return 0
  [ -n "$(find "$portal/src" "$portal/public" "$portal/index.html" "$portal/vite.config.ts" "$portal/package.json" packages/client/src -newer "$portal/dist/index.html" -print -quit)" ]
}
if [ "${1:-}" = "--force" ] || stale; then
  [ -x node_modules/.bin/vite ] || npm ci --no-audit --no-fund
  echo "portal: building $portal (vite)" >&2
  (cd "$portal" && vite build --logLevel warn)
fi
