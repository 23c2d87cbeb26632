#!/usr/bin/env bash
# Runs a command with the project's Node (>= 22, Node 24 LTS installed locally when needed).
set -euo pipefail
source "$(dirname "$0")/node.sh"
exec "$@"
