#!/usr/bin/env bash
# The Pub/Sub test peer: main.go (Google's pstest, the real Pub/Sub gRPC protocol) built once into
# .tools/pubsub/ and cached by the hash of its sources.
#   infra/pubsub/pubsub.sh install   build when missing; prints the binary's path
# Tests start the binary themselves (shared/src/testing/peers/pubsub.ts) on a free loopback port and stop it.
# Needs Go (the Go module proxy for the first build); .ci/run installs it when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
die() { echo "pubsub.sh: $*" >&2; exit 1; }

install() {
  local hash bin go
  hash=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)
  bin="$root/.tools/pubsub/pubsub-peer-$hash"
  if [ ! -x "$bin" ]; then
    go=$(command -v go || echo /usr/local/go/bin/go)
    [ -x "$go" ] || die "Go is required to build the Pub/Sub test peer (apt-get install golang-go)."
    echo "pubsub.sh: building the Pub/Sub test peer (pstest)" >&2
    mkdir -p "$root/.tools/pubsub"
    (cd "$here" && GOFLAGS=-mod=mod "$go" build -trimpath -ldflags=-s -o "$bin.tmp" .) || die "go build failed"
    mv "$bin.tmp" "$bin"
  fi
  echo "$bin"
}

case "${1:-}" in
  install) install ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
