#!/usr/bin/env bash
# Installs schemathesis (PyPI, the OpenAPI fuzzer of test/fuzz/openapi.test.ts) into
# .tools/schemathesis-<version> on first use, idempotently, and prints the path of its `st` command.
# Needs python3 with venv (.ci/run installs python3-venv when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=4.32.5
dir="$root/.tools/schemathesis-$version"
if [ ! -f "$dir/.installed" ]; then
  command -v python3 >/dev/null || { echo "schemathesis: python3 is required (apt-get install python3 python3-venv)" >&2; exit 1; }
  mkdir -p "$root/.tools"
  # One installer at a time; an install cut short (no .installed) is started over.
  exec 9>"$root/.tools/schemathesis.lock"
  flock 9
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    "$dir/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version" >&2
    touch "$dir/.installed"
  fi
fi
echo "$dir/bin/st"
