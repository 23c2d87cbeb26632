#!/usr/bin/env bash
# Builds a Go test peer, infra/<name> (main.go: pubsub around Google's pstest, s3 around gofakes3),
# into .tools/<name>/, cached by the hash of its sources, and prints the binary's path.
#   infra/go-peer.sh pubsub|s3
# Tests start the binary themselves (shared/src/testing/peers/go-peer.ts) on a free loopback port and
# stop it. Needs Go (the Go module proxy for the first build); .ci/run installs it when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: infra/go-peer.sh <name>}
here="$root/infra/$name"
die() { echo "go-peer.sh: $*" >&2; exit 1; }
[ -f "$here/main.go" ] || die "no Go peer in infra/$name"
hash=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)
bin="$root/.tools/$name/$name-peer-$hash"
if [ ! -x "$bin" ]; then
  go=$(command -v go || echo /usr/local/go/bin/go)
  [ -x "$go" ] || die "Go is required to build the $name test peer (apt-get install golang-go)."
  echo "go-peer.sh: building the $name test peer" >&2
  mkdir -p "$root/.tools/$name"
  (cd "$here" && GOFLAGS=-mod=mod "$go" build -trimpath -ldflags=-s -o "$bin.tmp.$$" .) || die "go build failed"
  mv "$bin.tmp.$$" "$bin"
fi
echo "$bin"
