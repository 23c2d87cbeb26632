#!/usr/bin/env bash
# npm start: embedded mode as plain JavaScript. Builds the portal and dist/ (infra/build.ts) when
# missing or older than their sources, then runs dist/services/embedded/src/main.js. The built tree
# is what production runs; it spares the process the type stripper, WebAssembly memory that is never
# given back (about 44 MB a process: docs/performance.md, "Built JavaScript").
# V8 flags: an 8 MB young generation (the image's services run with 4 MB; one process doing the
# work of four scavenges less often; 16 MB kept the idle goal only some of the time once the
# database had a thread of its own) and the image's 1 GiB old generation (docs/performance.md,
# "Embedded mode"). --expose-gc lets the process give back, once started, the young generation
# start-up grew (services/embedded/src/main.ts). The bench reads them from the `exec node` line below.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source infra/node.sh
bash infra/portal.sh
# A lock so that two starts at once (parallel tests) do not build over each other: the second
# finds the build fresh and goes on.
exec 9>".build.lock"
flock 9
stamp=dist/.built
stale() {
  [ -f "$stamp" ] || return 0
  [ -n "$(find shared/src shared/schemas shared/package.json services/*/src services/*/package.json services/portal/dist -newer "$stamp" -print -quit 2>/dev/null)" ]
}
if stale; then
  echo "start: building dist/ (npm run build)" >&2
  # Built beside dist/ and moved into place, so an interrupted build never leaves a half tree.
  rm -rf dist.next
  # Stamped with the time the build began (to the nanosecond: a portal built the same second is
  # older), so a source saved during the build makes the next start rebuild.
  began=$(date +%s.%N)
  node --disable-warning=ExperimentalWarning infra/build.ts --out dist.next >/dev/null
  touch -d "@$began" dist.next/.built
  rm -rf dist
  mv dist.next dist
fi
exec 9>&-
# glibc malloc as the production image sets it (Dockerfile, "glibc's malloc"), which is what the
# bench measures embedded mode with.
export MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=1048576 MALLOC_ARENA_MAX=2
exec node --max-semi-space-size=8 --max-old-space-size=1024 --expose-gc dist/services/embedded/src/main.js "$@"
