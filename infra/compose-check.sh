#!/usr/bin/env bash
# Validates docker-compose.yml with the real Docker Compose v2 CLI, as `docker compose config -q`,
# without a Docker engine (config only parses, interpolates and checks the file against the compose
# spec). Exits non-zero when the file is rejected.
#
#   bash infra/compose-check.sh [FILE]     # installs the CLI on first use, then checks FILE
#                                          # (default: docker-compose.yml at the repository root)
#
# The CLI: a `docker compose` plugin of exactly COMPOSE_VERSION in .tools/docker/cli-plugins/, built
# from its Go module (through the Go module proxy), because Docker's release binaries are downloads
# this project cannot rely on. The first time takes about 3-4 minutes on 2 cores and ~1.4 GiB of Go
# module and build cache; afterwards the build is skipped and the check takes about a second.
# `go install github.com/docker/compose/v2/cmd@...` does not work (compose's go.mod has exclude
# directives, which go install refuses), so the module's source is built in place instead.
#
# Checks, each with dummy secrets (never real ones); a local .env is not used for interpolation:
#   1. the file is valid with every required variable set;
#   2. it is rejected when any one of the required secrets is missing (the ${NAME:?} guards hold).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
COMPOSE_VERSION=${COMPOSE_VERSION:-2.40.3}
compose_file=$(realpath "${1:-$root/docker-compose.yml}")
docker_config="$root/.tools/docker" # used as DOCKER_CONFIG: docker finds plugins in its cli-plugins/
plugin="$docker_config/cli-plugins/docker-compose"
required_vars=(API_KEY API_JWT_SECRET AES_ENCRYPTION_SECRET POSTGRES_PASSWORD)

log() { echo "compose-check: $*" >&2; }

# --- making the CLI available -------------------------------------------------------------------

plugin_ok() { [ -x "$plugin" ] && [ "$("$plugin" version --short 2>/dev/null)" = "$COMPOSE_VERSION" ]; }

build_plugin() ( # a subshell: its EXIT trap cleans the build directory
  # The usual install places when go is not on PATH (a non-login shell may not have them).
  command -v go >/dev/null || for d in /usr/local/go/bin /usr/lib/go/bin; do [ -x "$d/go" ] && PATH="$d:$PATH" && break; done
  command -v go >/dev/null || { log "go not found: install Go (Debian: apt-get install golang-go; a newer toolchain comes through the module proxy)"; exit 1; }
  mod=github.com/docker/compose/v2
  start=$SECONDS
  tmp=$(mktemp -d)
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  log "building Docker Compose v$COMPOSE_VERSION from its Go module (a few minutes the first time)"
  # Go 1.21+ fetches the toolchain compose's go.mod asks for (a Go module too) when the local one is older.
  go mod download -json "$mod@v$COMPOSE_VERSION" >"$tmp/download.json" 2>"$tmp/build.log"
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$tmp/download.json")
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    cat "$tmp/download.json" "$tmp/build.log" >&2
    log "go mod download gave no source"
    exit 1
  fi
  cp -R "$dir" "$tmp/src" && chmod -R u+w "$tmp/src" || exit 1 # the module cache is read-only
  # Built like compose's Makefile does: static, version stamped into internal.Version.
  (cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags "-s -w -X $mod/internal.Version=v$COMPOSE_VERSION" -o "$tmp/docker-compose" ./cmd) >>"$tmp/build.log" 2>&1 || { tail -40 "$tmp/build.log" >&2; exit 1; }
  mkdir -p "$(dirname "$plugin")" && mv "$tmp/docker-compose" "$plugin" || exit 1
  log "installed ${plugin#"$root"/} ($((SECONDS - start)) s)"
)

# Sets the global array `compose` to a command that behaves as `docker compose`.
compose=()
find_compose() {
  if plugin_ok || build_plugin; then
    if command -v docker >/dev/null && DOCKER_CONFIG="$docker_config" docker compose version >/dev/null 2>&1; then
      compose=(env "DOCKER_CONFIG=$docker_config" docker compose) # literally `docker compose config`
    else
      compose=("$plugin") # the same binary runs standalone, as docker-compose
    fi
    return 0
  fi
  # Fallbacks, when Go cannot build it: a compose v2 already installed, else Debian's package, but
  # only where Debian ships v2. (Debian 12's docker-compose is the Python v1.29, which predates the
  # compose spec this file uses: it rejects `name:` and the long env_file syntax.)
  log "could not build Docker Compose v$COMPOSE_VERSION; looking for an installed compose v2"
  if docker compose version --short 2>/dev/null | grep -q '^v\{0,1\}2\.'; then compose=(docker compose); return 0; fi
  if ! command -v docker-compose >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >/dev/null 2>&1 || true
    if apt-cache policy docker-compose 2>/dev/null | grep -q 'Candidate: 2\.'; then
      log "installing Debian's docker-compose (v2)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
    fi
  fi
  if docker-compose version --short 2>/dev/null | grep -q '^v\{0,1\}2\.'; then compose=(docker-compose); return 0; fi
  log "no Docker Compose v2 available: install Go 1.21+ (then rerun) or a compose v2 plugin"
  return 1
}

# --- the checks ---------------------------------------------------------------------------------

find_compose
log "using $("${compose[@]}" version) (${compose[*]#"$root"/})"

# An empty --env-file: the project's .env (real secrets, perhaps) is neither read nor needed.
empty_env=$(mktemp)
trap 'rm -f "$empty_env"' EXIT
dummies=()
unset_required=()
for v in "${required_vars[@]}"; do
  dummies+=("$v=dummy-$v")
  unset_required+=(-u "$v")
done

run_config() { # run_config VAR=value... : `config -q` with exactly these variables set
  env "${unset_required[@]}" "$@" "${compose[@]}" --project-directory "$root" -f "$compose_file" --env-file "$empty_env" config -q
}

if ! run_config "${dummies[@]}"; then
  log "FAILED: ${compose_file#"$root"/} is not valid"
  exit 1
fi
log "ok: ${compose_file#"$root"/} is valid"

for missing in "${required_vars[@]}"; do
  set_vars=()
  for d in "${dummies[@]}"; do [ "${d%%=*}" = "$missing" ] || set_vars+=("$d"); done
  if out=$(run_config "${set_vars[@]}" 2>&1); then
    log "FAILED: ${compose_file#"$root"/} is accepted without $missing (it must be required: \${$missing:?...})"
    exit 1
  elif ! grep -q "$missing" <<<"$out"; then
    log "FAILED: without $missing the error does not name it: $out"
    exit 1
  fi
done
log "ok: each of ${required_vars[*]} is required"
