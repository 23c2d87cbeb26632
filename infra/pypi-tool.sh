#!/usr/bin/env bash
# Installs a Python tool from PyPI into .tools/<name>-<version>, a virtual environment of its own, on
# first use, idempotently, and prints the path of its command.
#   infra/pypi-tool.sh <name> <version> <command> [pip requirement; default <name>==<version>]
# Needs python3 with venv (.ci/run installs python3-venv when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: pypi-tool.sh <name> <version> <command> [requirement]}
version=${2:?usage: pypi-tool.sh <name> <version> <command> [requirement]}
command=${3:?usage: pypi-tool.sh <name> <version> <command> [requirement]}
requirement=${4:-$name==$version}
dir="$root/.tools/$name-$version"
if [ ! -f "$dir/.installed" ]; then
  command -v python3 >/dev/null || { echo "$name: python3 is required (apt-get install python3 python3-venv)" >&2; exit 1; }
  mkdir -p "$root/.tools"
  # One installer at a time; an install cut short (no .installed) is started over.
  exec 9>"$root/.tools/$name.lock"
  flock 9
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$requirement" >&2
    touch "$dir/.installed"
  fi
fi
echo "$dir/bin/$command"
