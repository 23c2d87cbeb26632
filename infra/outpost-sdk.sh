#!/usr/bin/env bash
# The other service's published TypeScript SDK (@hookdeck/outpost-sdk from the npm registry, pinned),
# which test/clients/outpost-sdk.test.ts drives against embedded mode: installed into
# .tools/outpost-sdk-<version> on first use, idempotently, outside the workspace's dependencies
# (it pulls an MCP server and express that nothing else here needs).
#   infra/outpost-sdk.sh install   install it (cached)
#   infra/outpost-sdk.sh dir       print the package's directory (after installing when needed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=1.6.0
dir="$root/.tools/outpost-sdk-$version"
pkg="$dir/node_modules/@hookdeck/outpost-sdk"

die() { echo "outpost-sdk.sh: $*" >&2; exit 1; }

install() {
  if [ -f "$dir/.complete" ]; then return 0; fi
  # shellcheck source=infra/node.sh
  source "$root/infra/node.sh"
  mkdir -p "$root/.tools"
  # One installer at a time; an install cut short (no .complete) is started over.
  exec 9>"$root/.tools/outpost-sdk.lock"
  flock 9
  if [ -f "$dir/.complete" ]; then return 0; fi
  rm -rf "$dir" && mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  echo "outpost-sdk.sh: installing @hookdeck/outpost-sdk@$version from the npm registry" >&2
  npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error "@hookdeck/outpost-sdk@$version" >&2 \
    || die "npm could not install @hookdeck/outpost-sdk@$version"
  [ -f "$pkg/dist/esm/index.js" ] || die "no $pkg/dist/esm/index.js after the install"
  touch "$dir/.complete"
}

case "${1:-}" in
  install) install ;;
  dir) install; echo "$pkg" ;;
  *) die "usage: $0 install|dir" ;;
esac
