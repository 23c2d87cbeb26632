#!/usr/bin/env bash
# Prints the path of a kustomize binary of exactly KUSTOMIZE_VERSION, building it on first use from
# its Go module (through the Go module proxy: kustomize's release binaries are downloads this
# project cannot rely on) into .tools/kustomize-<version>/. Needs Go (1.22+). The first build takes
# 1-3 minutes on 2 cores; afterwards this prints the path at once.
#
#   "$(bash infra/k8s/kustomize.sh)" build infra/k8s/overlays/production
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-5.5.0}
dir="$root/.tools/kustomize-$KUSTOMIZE_VERSION"
bin="$dir/kustomize"
if [ ! -x "$bin" ]; then
  command -v go > /dev/null || { echo "kustomize.sh: Go is needed to build kustomize (apt-get install golang, or go.dev)" >&2; exit 1; }
  echo "kustomize.sh: building kustomize v$KUSTOMIZE_VERSION (once)" >&2
  mkdir -p "$dir"
  # Into a temporary name first: a build interrupted halfway never leaves a binary that looks done.
  GOBIN="$dir/.build" GOFLAGS=-buildvcs=false go install "sigs.k8s.io/kustomize/kustomize/v5@v$KUSTOMIZE_VERSION" >&2
  mv "$dir/.build/kustomize" "$bin"
  rmdir "$dir/.build"
fi
echo "$bin"
