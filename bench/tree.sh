#!/usr/bin/env bash
# Exports a git ref of this repository into DIR, with node_modules linked to this checkout's (the
# workspace links point into DIR), so `npm run bench -- --services-root DIR` runs that version's
# services against the same harness: A/B runs of a change, interleaved on the same machine.
#   bash bench/tree.sh HEAD /tmp/switchyard-before
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ref=${1:?usage: bench/tree.sh <git-ref> <dir>}
dir=${2:?usage: bench/tree.sh <git-ref> <dir>}
rm -rf "$dir"
mkdir -p "$dir/node_modules/@switchyard"
git -C "$root" archive "$ref" | tar -x -C "$dir"
for e in "$root"/node_modules/* "$root"/node_modules/.bin; do
  name=$(basename "$e")
  [ "$name" = "@switchyard" ] || ln -s "$e" "$dir/node_modules/$name"
done
ln -s ../../shared "$dir/node_modules/@switchyard/shared"
for s in "$dir"/services/*/; do
  n=$(basename "$s")
  ln -s "../../services/$n" "$dir/node_modules/@switchyard/$n"
  if [ -d "$root/services/$n/node_modules" ]; then ln -s "$root/services/$n/node_modules" "$s/node_modules"; fi
done
echo "$ref ($(git -C "$root" rev-parse --short "$ref")) exported to $dir"
