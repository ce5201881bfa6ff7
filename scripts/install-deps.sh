#!/usr/bin/env bash
# Installs everything TierDB's build, tests and demo need on Debian 12, idempotently.
# Quiet when there is nothing to do; safe to run on every `make check`.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)

debian_packages=(
  build-essential pkg-config clang libclang-rt-14-dev llvm
  libjansson-dev libzstd-dev libsnappy-dev zlib1g-dev liblz4-dev
  libbrotli-dev libcurl4-openssl-dev libpq-dev libmicrohttpd-dev
  postgresql-15 postgresql-server-dev-15
  python3-venv
  openjdk-17-jdk-headless maven
  valgrind  # the read benchmark counts a lookup's instructions with callgrind
)

missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python virtual environment for the interop tests and benchmarks.
venv="$top/.venv"
requirements="$top/scripts/requirements.txt"
stamp="$venv/.requirements-installed"
if [ ! -x "$venv/bin/python" ]; then
  echo "install-deps: creating Python virtual environment in .venv"
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s "$requirements" "$stamp"; then
  echo "install-deps: installing Python packages from scripts/requirements.txt"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
fi

# The Iceberg runtime for Spark (pyspark comes from requirements.txt), which
# the interop tests load from .venv/jars/ (tests/interop/spark_support.py).
# Maven fetches it from Maven Central once; Spark 3.5 needs the _2.12 build.
# 1.8.1, not 1.7.x, whose vectorized Parquet reader crashes the JVM on files
# with several row groups.
iceberg_runtime="org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.8.1"
jars="$venv/jars"
runtime_jar="$jars/iceberg-spark-runtime-3.5_2.12-1.8.1.jar"
if [ ! -s "$runtime_jar" ]; then
  echo "install-deps: fetching $iceberg_runtime with Maven into .venv/jars"
  mkdir -p "$jars"
  mvn_log=$(mktemp)
  if ! (cd "$jars" && mvn -q -B dependency:copy -Dartifact="$iceberg_runtime" -DoutputDirectory="$jars") >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    rm -f "$mvn_log"
    echo "install-deps: Maven could not fetch $iceberg_runtime" >&2
    exit 1
  fi
  rm -f "$mvn_log"
fi
