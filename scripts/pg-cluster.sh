#!/usr/bin/env bash
# Starts and stops a private PostgreSQL 15 cluster for the tests and the demo.
#
#   scripts/pg-cluster.sh start DIR PORT [-c name=value ...]
#   scripts/pg-cluster.sh stop DIR
#
# DIR holds everything: the data directory (DIR/data, created by initdb on
# the first start), the server log (DIR/postgres.log) and the Unix socket.
# The server listens on 127.0.0.1:PORT with trust authentication for the
# `postgres` user: it is for tests on this machine only. Extra `-c` settings
# (say `-c shared_preload_libraries=tierdb`) are passed to the server.
#
# Postgres refuses to run as root, so when run by root DIR is handed to the
# `postgres` OS user and the server runs as that user.
#
# PG_BINDIR overrides where initdb, pg_ctl and postgres are found (default:
# the Debian PostgreSQL 15 binaries).
set -euo pipefail

usage() {
  echo "usage: $0 start DIR PORT [-c name=value ...] | stop DIR" >&2
  exit 2
}

bindir=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
if [ ! -x "$bindir/pg_ctl" ]; then
  echo "pg-cluster: $bindir/pg_ctl not found: install postgresql-15 (scripts/install-deps.sh) or set PG_BINDIR" >&2
  exit 1
fi

# Runs a server program as the user that owns the cluster.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

log_tail() {
  if [ -f "$1" ]; then
    echo "pg-cluster: last lines of $1:" >&2
    tail -n 30 "$1" >&2
  fi
}

start() {
  local dir=$1 port=$2
  shift 2
  local settings=()
  while [ $# -gt 0 ]; do
    [ "$1" = "-c" ] && [ $# -ge 2 ] || usage
    settings+=("$2")
    shift 2
  done
  case $port in '' | *[!0-9]*) usage ;; esac

  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local data=$dir/data log=$dir/postgres.log
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
  fi
  chmod 0755 "$dir"
  if ! as_owner test -w "$dir"; then
    echo "pg-cluster: the server's user cannot write $dir: every directory above it must be searchable (chmod o+x)" >&2
    exit 1
  fi

  if [ ! -f "$data/PG_VERSION" ]; then
    local initlog=$dir/initdb.log
    if ! as_owner "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 \
        --locale=C.UTF-8 --no-instructions >"$initlog" 2>&1; then
      echo "pg-cluster: initdb failed in $data" >&2
      log_tail "$initlog"
      exit 1
    fi
  fi

  # Settings go on the command line rather than into postgresql.conf, so a
  # restart with other settings needs no file edits. Durability is off: the
  # cluster is disposable. wal_level=logical lets mirrored tables work.
  local options="-c listen_addresses=127.0.0.1 -c port=$port"
  options+=" -c unix_socket_directories='$dir' -c fsync=off"
  options+=" -c synchronous_commit=off -c full_page_writes=off"
  options+=" -c max_connections=100 -c wal_level=logical -c log_checkpoints=off"
  local s
  for s in "${settings[@]}"; do
    options+=" -c $s"
  done

  if as_owner "$bindir/pg_ctl" status -D "$data" >/dev/null 2>&1; then
    echo "pg-cluster: a server already runs in $data: stop it first ($0 stop $dir)" >&2
    exit 1
  fi
  if ! as_owner "$bindir/pg_ctl" start -D "$data" -l "$log" -w -t 60 -o "$options" >/dev/null; then
    echo "pg-cluster: the server in $data did not start on port $port" >&2
    log_tail "$log"
    exit 1
  fi
}

stop() {
  local dir=$1
  local data=$dir/data
  # pg_ctl status exits 3 when no server runs (no or a stale postmaster.pid)
  if [ ! -f "$data/PG_VERSION" ] || ! as_owner "$bindir/pg_ctl" status -D "$data" >/dev/null 2>&1; then
    return 0
  fi
  if ! as_owner "$bindir/pg_ctl" stop -D "$data" -m fast -w -t 60 >/dev/null; then
    echo "pg-cluster: the server in $data did not stop" >&2
    log_tail "$dir/postgres.log"
    exit 1
  fi
}

[ $# -ge 1 ] || usage
case $1 in
  start) [ $# -ge 3 ] || usage; shift; start "$@" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  *) usage ;;
esac
