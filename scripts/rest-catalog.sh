#!/usr/bin/env bash
# Starts and stops a private Iceberg REST catalog for the tests: Apache
# Iceberg's own RESTCatalogServer (iceberg-open-api's test fixtures), backed
# by a JDBC catalog in SQLite, writing metadata files with HadoopFileIO.
#
#   scripts/rest-catalog.sh start DIR
#   scripts/rest-catalog.sh stop DIR
#   scripts/rest-catalog.sh run DIR COMMAND [ARG ...]
#
# DIR holds everything: the warehouse (DIR/warehouse, local files; a table
# created without a location lives in DIR/warehouse/<namespace>/<table>), the
# catalog database (DIR/catalog.db), the log (DIR/rest-catalog.log) and
# DIR/env, the shell lines that point a client at the server. The server
# listens on a free port chosen at start; clients reach it on 127.0.0.1 (the
# server takes no host setting and Jetty listens on every interface: it is for
# tests on this machine only). It accepts any bearer token and answers
# POST /v1/oauth/tokens for any client credentials. `start` prints the URI
# once GET /v1/config answers. `run` starts the server, runs COMMAND with
# DIR/env's variables set, stops the server and exits with COMMAND's status.
#
# DIR/env sets TIERDB_CATALOG_URI, TIERDB_CATALOG_TEST_WAREHOUSE (the
# warehouse directory) and TIERDB_CATALOG_TEST_DB (the catalog's SQLite
# database, which a test locks to make the server fail a commit).
#
# Started with TIERDB_S3_ENDPOINT (and the other TIERDB_S3_* variables of
# scripts/s3-server.sh) in its environment, the server can also keep tables
# whose location is s3://... on that S3-compatible server.
#
# REST_CATALOG_JARS overrides the directory of the server's classpath
# (default: the one scripts/install-deps.sh fills, .venv/jars/rest-catalog).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
jars=${REST_CATALOG_JARS:-$top/.venv/jars/rest-catalog}

usage() {
  echo "usage: $0 start DIR | stop DIR | run DIR COMMAND [ARG ...]" >&2
  exit 2
}

log_tail() {
  if [ -f "$1" ]; then
    echo "rest-catalog: last lines of $1:" >&2
    tail -n 30 "$1" >&2
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1
  if ! ls "$jars"/iceberg-open-api-*-test-fixtures.jar >/dev/null 2>&1; then
    echo "rest-catalog: the server's jars are not in $jars: run scripts/install-deps.sh or set REST_CATALOG_JARS" >&2
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/rest-catalog.pid" ] && kill -0 "$(cat "$dir/rest-catalog.pid")" 2>/dev/null; then
    echo "rest-catalog: already running in $dir (pid $(cat "$dir/rest-catalog.pid"))" >&2
    exit 1
  fi
  mkdir -p "$dir/warehouse"
  local port uri
  port=$(free_port)
  uri=http://127.0.0.1:$port
  cat >"$dir/env" <<ENV
export TIERDB_CATALOG_URI=$uri
export TIERDB_CATALOG_TEST_WAREHOUSE=$dir/warehouse
export TIERDB_CATALOG_TEST_DB=$dir/catalog.db
ENV
  # The server reads its catalog properties from CATALOG_* variables
  # (CATALOG_REST_PORT is rest.port, CATALOG_URI the JDBC catalog's uri,
  # CATALOG_S3_ACCESS__KEY__ID s3.access-key-id). With an S3-compatible
  # server in the environment (scripts/s3-server.sh's TIERDB_S3_*), tables
  # may live on s3:// too: ResolvingFileIO writes their metadata with
  # S3FileIO there, and local paths with HadoopFileIO.
  local s3_vars=()
  if [ -n "${TIERDB_S3_ENDPOINT:-}" ]; then
    s3_vars=(
      CATALOG_IO__IMPL=org.apache.iceberg.io.ResolvingFileIO
      CATALOG_S3_ENDPOINT="$TIERDB_S3_ENDPOINT"
      CATALOG_S3_ACCESS__KEY__ID="${TIERDB_S3_ACCESS_KEY:-}"
      CATALOG_S3_SECRET__ACCESS__KEY="${TIERDB_S3_SECRET_KEY:-}"
      CATALOG_S3_PATH__STYLE__ACCESS=true
      CATALOG_CLIENT_REGION="${TIERDB_S3_REGION:-us-east-1}"
    )
  fi
  # setsid: the server outlives this script and is stopped by its pid.
  env "${s3_vars[@]}" CATALOG_REST_PORT=$port \
    CATALOG_WAREHOUSE=$dir/warehouse \
    CATALOG_URI="jdbc:sqlite:$dir/catalog.db" \
    setsid java -Xmx512m -cp "$jars/*" org.apache.iceberg.rest.RESTCatalogServer \
    >"$dir/rest-catalog.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$dir/rest-catalog.pid"
  # Up once the catalog answers its configuration request.
  local i
  for i in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "rest-catalog: the server exited during startup" >&2
      log_tail "$dir/rest-catalog.log"
      rm -f "$dir/rest-catalog.pid"
      exit 1
    fi
    if curl -sf -o /dev/null "$uri/v1/config"; then
      echo "$uri"
      return 0
    fi
    sleep 0.1
  done
  echo "rest-catalog: the server did not answer GET $uri/v1/config within 60 s" >&2
  log_tail "$dir/rest-catalog.log"
  stop "$dir"
  exit 1
}

stop() {
  local dir=$1 pid
  [ -f "$dir/rest-catalog.pid" ] || return 0
  pid=$(cat "$dir/rest-catalog.pid")
  if kill "$pid" 2>/dev/null; then
    local i
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/rest-catalog.pid"
}

run() {
  run_dir=$1
  shift
  [ $# -gt 0 ] || usage
  start "$run_dir" >/dev/null
  run_dir=$(cd "$run_dir" && pwd)
  trap 'stop "$run_dir"' EXIT
  # shellcheck disable=SC1091
  source "$run_dir/env"
  local status=0
  "$@" || status=$?
  return $status
}

[ $# -ge 2 ] || usage
case $1 in
  start) [ $# -eq 2 ] || usage; start "$2" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  run) shift; run "$@" ;;
  *) usage ;;
esac
