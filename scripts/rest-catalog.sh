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

server_name=rest-catalog
server_pid=rest-catalog.pid
server_log=rest-catalog.log
# shellcheck source=lib/test-server.sh
source "$top/scripts/lib/test-server.sh"

start() {
  local dir=$1
  if ! ls "$jars"/iceberg-open-api-*-test-fixtures.jar >/dev/null 2>&1; then
    echo "rest-catalog: the server's jars are not in $jars: run scripts/install-deps.sh or set REST_CATALOG_JARS" >&2
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  refuse_if_running "$dir"
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
  # Up once the catalog answers its configuration request.
  wait_until_up "$dir" $! "GET $uri/v1/config" curl -sf -o /dev/null "$uri/v1/config"
  echo "$uri"
}

main "$@"
