#!/usr/bin/env bash
# Installs moto (PyPI: AWS services mocked in one server, the peer the sqs and kinesis conformance
# suites also run against) into .tools/moto-<version> on first use, idempotently, and prints the path
# of its `moto_server` command. Needs python3 with venv (.ci/run installs python3-venv when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=5.2.5
dir="$root/.tools/moto-$version"
if [ ! -f "$dir/.installed" ]; then
  command -v python3 >/dev/null || { echo "moto: python3 is required (apt-get install python3 python3-venv)" >&2; exit 1; }
  mkdir -p "$root/.tools"
  # One installer at a time; an install cut short (no .installed) is started over.
  exec 9>"$root/.tools/moto.lock"
  flock 9
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    "$dir/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$version" >&2
    touch "$dir/.installed"
  fi
fi
echo "$dir/bin/moto_server"
