# test-server.sh: the lifecycle that scripts/s3-server.sh and
# scripts/rest-catalog.sh share, sourced by both: a Java server started in
# the background under DIR, waited for, stopped by its pid file, and the
# start|stop|run command line.
#
# The sourcing script sets server_name (for messages), server_pid (the pid
# file's name in DIR) and server_log (the log's name in DIR), and defines
# start DIR, which launches the server, records its pid with
# server_started, and waits with wait_until_up.

usage() {
  echo "usage: $0 start DIR | stop DIR | run DIR COMMAND [ARG ...]" >&2
  exit 2
}

log_tail() {
  if [ -f "$1" ]; then
    echo "$server_name: last lines of $1:" >&2
    tail -n 30 "$1" >&2
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Refuses to start a second server in DIR.
refuse_if_running() {
  local dir=$1
  if [ -f "$dir/$server_pid" ] && kill -0 "$(cat "$dir/$server_pid")" 2>/dev/null; then
    echo "$server_name: already running in $dir (pid $(cat "$dir/$server_pid"))" >&2
    exit 1
  fi
}

# wait_until_up DIR PID WHAT PROBE...: up to 60 s for the command PROBE to
# succeed while PID lives; on failure says why with the log's tail and exits.
wait_until_up() {
  local dir=$1 pid=$2 what=$3 i
  shift 3
  echo "$pid" >"$dir/$server_pid"
  for i in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$server_name: the server exited during startup" >&2
      log_tail "$dir/$server_log"
      rm -f "$dir/$server_pid"
      exit 1
    fi
    if "$@" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "$server_name: the server did not answer $what within 60 s" >&2
  log_tail "$dir/$server_log"
  stop "$dir"
  exit 1
}

stop() {
  local dir=$1 pid i
  [ -f "$dir/$server_pid" ] || return 0
  pid=$(cat "$dir/$server_pid")
  if kill "$pid" 2>/dev/null; then
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/$server_pid"
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

main() {
  [ $# -ge 2 ] || usage
  case $1 in
    start) [ $# -eq 2 ] || usage; start "$2" ;;
    stop) [ $# -eq 2 ] || usage; stop "$2" ;;
    run) shift; run "$@" ;;
    *) usage ;;
  esac
}
