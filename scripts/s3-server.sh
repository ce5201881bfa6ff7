#!/usr/bin/env bash
# Starts and stops a private S3-compatible server (S3Proxy) for the tests.
#
#   scripts/s3-server.sh start DIR
#   scripts/s3-server.sh stop DIR
#   scripts/s3-server.sh run DIR COMMAND [ARG ...]
#
# DIR holds everything: the objects (DIR/data, one directory per bucket,
# through jclouds' filesystem provider), the configuration, the log
# (DIR/s3proxy.log) and DIR/env, the shell lines that point a client at the
# server. The server listens on 127.0.0.1 on a free port chosen at start and
# checks AWS signatures (V2 or V4) for one fixed test key; the bucket
# `tierdb-test` exists from the start. `start` prints the endpoint. `run`
# starts the server, runs COMMAND with DIR/env's variables set, stops the
# server and exits with COMMAND's status.
#
# DIR/env sets TIERDB_S3_ENDPOINT, TIERDB_S3_ACCESS_KEY, TIERDB_S3_SECRET_KEY,
# TIERDB_S3_REGION and TIERDB_S3_TEST_BUCKET. S3Proxy accepts any region in a
# signature; it is for tests on this machine only.
#
# S3PROXY_JAR overrides the server's jar (default: the one
# scripts/install-deps.sh fetches into .venv/jars).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
jar=${S3PROXY_JAR:-$top/.venv/jars/s3proxy-4.1.0-jar-with-dependencies.jar}
access_key=tierdb-test-key
secret_key=tierdb-test-secret
region=us-east-1
bucket=tierdb-test

server_name=s3-server
server_pid=s3proxy.pid
server_log=s3proxy.log
# shellcheck source=lib/test-server.sh
source "$top/scripts/lib/test-server.sh"

start() {
  local dir=$1
  if [ ! -s "$jar" ]; then
    echo "s3-server: $jar not found: run scripts/install-deps.sh or set S3PROXY_JAR" >&2
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  refuse_if_running "$dir"
  mkdir -p "$dir/data/$bucket"
  local port endpoint
  port=$(free_port)
  endpoint=http://127.0.0.1:$port
  cat >"$dir/s3proxy.conf" <<EOF
s3proxy.endpoint=$endpoint
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$access_key
s3proxy.credential=$secret_key
jclouds.provider=filesystem
jclouds.filesystem.basedir=$dir/data
EOF
  cat >"$dir/env" <<EOF
export TIERDB_S3_ENDPOINT=$endpoint
export TIERDB_S3_ACCESS_KEY=$access_key
export TIERDB_S3_SECRET_KEY=$secret_key
export TIERDB_S3_REGION=$region
export TIERDB_S3_TEST_BUCKET=$bucket
EOF
  # setsid: the server outlives this script and is stopped by its pid.
  setsid java -Xmx512m -jar "$jar" --properties "$dir/s3proxy.conf" >"$dir/s3proxy.log" 2>&1 </dev/null &
  # Up once it accepts connections (Jetty listens when S3Proxy is ready).
  wait_until_up "$dir" $! "on $endpoint" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
  echo "$endpoint"
}

main "$@"
