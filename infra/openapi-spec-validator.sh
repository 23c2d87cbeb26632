#!/usr/bin/env bash
# Installs openapi-spec-validator (PyPI, the independent OpenAPI validator of
# services/gateway/test/openapi.test.ts) into .tools/openapi-spec-validator-<version> on first use,
# idempotently, and prints the path of its command. Needs python3 with venv (.ci/run installs it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=0.7.2
dir="$root/.tools/openapi-spec-validator-$version"
if [ ! -f "$dir/.installed" ]; then
  command -v python3 >/dev/null || { echo "openapi-spec-validator: python3 is required (apt-get install python3 python3-venv)" >&2; exit 1; }
  mkdir -p "$root/.tools"
  # One installer at a time; an install cut short (no .installed) is started over.
  exec 9>"$root/.tools/openapi-spec-validator.lock"
  flock 9
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    "$dir/bin/pip" install --quiet --disable-pip-version-check "openapi-spec-validator==$version" >&2
    touch "$dir/.installed"
  fi
fi
echo "$dir/bin/openapi-spec-validator"
