#!/usr/bin/env bash
# Local PostgreSQL for development, tests and CI, from the Debian packages.
#   infra/postgres/pg.sh install   make sure the server binaries exist (apt-get install postgresql when root)
#   infra/postgres/pg.sh start     initdb (first time) and start on 127.0.0.1:$PG_PORT, create $PG_DATABASE
#   infra/postgres/pg.sh stop      stop the server of this data directory
#   infra/postgres/pg.sh status    exit 0 when the server accepts connections
# Settings: PG_PORT (5432), PG_DATA_DIR (.tools/run/pg-$PG_PORT), PG_DATABASE (switchyard),
# PG_FAST=1 trades durability for speed (fsync off) and is meant for throwaway test clusters.
# PG_STAT_STATEMENTS=1 loads pg_stat_statements (the benchmark's --pg-statements, and npm test, which tests its reader).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
port=${PG_PORT:-5432}
data=${PG_DATA_DIR:-$root/.tools/run/pg-$port}
db=${PG_DATABASE:-switchyard}

die() { echo "pg.sh: $*" >&2; exit 1; }

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

install() {
  [ -n "$(bindir)" ] && [ -x "$(bindir)/initdb" ] && return 0
  [ "$(id -u)" = 0 ] || die "PostgreSQL server binaries are missing; install them with: sudo apt-get install postgresql"
  echo "pg.sh: installing PostgreSQL from Debian packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null || die "apt-get install postgresql failed"
  # The package starts a cluster of its own on 5432; this project runs its own clusters instead.
  command -v pg_ctlcluster >/dev/null && for c in $(ls /etc/postgresql 2>/dev/null); do pg_ctlcluster "$c" main stop 2>/dev/null || true; done
}

# The server refuses to run as root, so as root it runs as the postgres system user.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

ready() { "$(bindir)/pg_isready" -q -h 127.0.0.1 -p "$port" >/dev/null 2>&1; }

start() {
  install
  local bin; bin=$(bindir)
  if ready; then echo "pg.sh: already running on 127.0.0.1:$port"; return 0; fi
  mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown postgres: "$data" && chmod 700 "$data"
  if [ ! -f "$data/PG_VERSION" ]; then
    as_owner "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$data.initdb.log" 2>&1 \
      || { cat "$data.initdb.log" >&2; die "initdb failed"; }
  fi
  local opts="-c listen_addresses=127.0.0.1 -p $port -k /tmp -c max_connections=200 -c shared_buffers=256MB"
  if [ "${PG_FAST:-0}" = 1 ]; then opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"; fi
  if [ "${PG_STAT_STATEMENTS:-0}" = 1 ]; then opts="$opts -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top -c pg_stat_statements.track_planning=on"; fi
  as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -o "$opts" -w -t 60 start >/dev/null \
    || { tail -n 20 "$data/server.log" >&2; die "PostgreSQL did not start"; }
  if ! "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc "select 1 from pg_database where datname='$db'" | grep -q 1; then
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"
  fi
  echo "pg.sh: PostgreSQL ready on 127.0.0.1:$port (database $db)"
}

stop() {
  [ -f "$data/postmaster.pid" ] || return 0
  as_owner "$(bindir)/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) ready ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
