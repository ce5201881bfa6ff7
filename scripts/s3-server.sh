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

usage() {
  echo "usage: $0 start DIR | stop DIR | run DIR COMMAND [ARG ...]" >&2
  exit 2
}

log_tail() {
  if [ -f "$1" ]; then
    echo "s3-server: last lines of $1:" >&2
    tail -n 30 "$1" >&2
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1
  if [ ! -s "$jar" ]; then
    echo "s3-server: $jar not found: run scripts/install-deps.sh or set S3PROXY_JAR" >&2
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/s3proxy.pid" ] && kill -0 "$(cat "$dir/s3proxy.pid")" 2>/dev/null; then
    echo "s3-server: already running in $dir (pid $(cat "$dir/s3proxy.pid"))" >&2
    exit 1
  fi
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
  local pid=$!
  echo "$pid" >"$dir/s3proxy.pid"
  # Up once it accepts connections (Jetty listens when S3Proxy is ready).
  local i
  for i in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "s3-server: S3Proxy exited during startup" >&2
      log_tail "$dir/s3proxy.log"
      rm -f "$dir/s3proxy.pid"
      exit 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$endpoint"
      return 0
    fi
    sleep 0.1
  done
  echo "s3-server: S3Proxy did not answer on $endpoint within 60 s" >&2
  log_tail "$dir/s3proxy.log"
  stop "$dir"
  exit 1
}

stop() {
  local dir=$1 pid
  [ -f "$dir/s3proxy.pid" ] || return 0
  pid=$(cat "$dir/s3proxy.pid")
  if kill "$pid" 2>/dev/null; then
    local i
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/s3proxy.pid"
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
