#!/usr/bin/env bash
# The S3 test peer: main.go (gofakes3, the S3 REST protocol, in memory) built once into
# .tools/s3/ and cached by the hash of its sources.
#   infra/s3/s3.sh install   build when missing; prints the binary's path
# Tests start the binary themselves (shared/src/testing/peers/s3.ts) on a free loopback port and stop it.
# Needs Go (the Go module proxy for the first build); .ci/run installs it when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
die() { echo "s3.sh: $*" >&2; exit 1; }

install() {
  local hash bin go
  hash=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)
  bin="$root/.tools/s3/s3-peer-$hash"
  if [ ! -x "$bin" ]; then
    go=$(command -v go || echo /usr/local/go/bin/go)
    [ -x "$go" ] || die "Go is required to build the S3 test peer (apt-get install golang-go)."
    echo "s3.sh: building the S3 test peer (gofakes3)" >&2
    mkdir -p "$root/.tools/s3"
    (cd "$here" && GOFLAGS=-mod=mod "$go" build -trimpath -ldflags=-s -o "$bin.tmp" .) || die "go build failed"
    mv "$bin.tmp" "$bin"
  fi
  echo "$bin"
}

case "${1:-}" in
  install) install ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
