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
# fetch_jar ARTIFACT FILE: Maven copies ARTIFACT (group:name:version[:type:classifier])
# into .venv/jars/FILE once.
fetch_jar() {
  local artifact=$1 file=$jars/$2
  [ -s "$file" ] && return 0
  echo "install-deps: fetching $artifact with Maven into .venv/jars"
  mkdir -p "$jars"
  local mvn_log
  mvn_log=$(mktemp)
  if ! (cd "$jars" && mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$jars") >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    rm -f "$mvn_log"
    echo "install-deps: Maven could not fetch $artifact" >&2
    exit 1
  fi
  rm -f "$mvn_log"
}
fetch_jar "$iceberg_runtime" iceberg-spark-runtime-3.5_2.12-1.8.1.jar

# S3Proxy, the S3-compatible server the object-storage tests start on
# 127.0.0.1 (scripts/s3-server.sh): one jar with its dependencies, Java 17.
# 4.1.0 answers a PUT with If-None-Match: * on an existing key with 412.
fetch_jar "org.gaul:s3proxy:4.1.0:jar:jar-with-dependencies" s3proxy-4.1.0-jar-with-dependencies.jar

# S3A, Hadoop's S3 filesystem, through which Spark reads and writes lakes on
# S3 (tests/interop/spark_support.py's S3 session): hadoop-aws must match the
# Hadoop that pyspark 3.5 ships (3.3.4), and the AWS SDK bundle is the one
# hadoop-aws 3.3.4 was built against (1.12.262).
fetch_jar "org.apache.hadoop:hadoop-aws:3.3.4" hadoop-aws-3.3.4.jar
fetch_jar "com.amazonaws:aws-java-sdk-bundle:1.12.262" aws-java-sdk-bundle-1.12.262.jar

# Apache Iceberg's own REST catalog server (RESTCatalogServer from
# iceberg-open-api's test fixtures) and its classpath, which the REST catalog
# tests start on a free port (scripts/rest-catalog.sh): Maven copies the jars
# scripts/rest-catalog/pom.xml names into .venv/jars/rest-catalog, again when
# the pom changes (its copy there is the stamp).
rest_jars="$jars/rest-catalog"
rest_pom="$top/scripts/rest-catalog/pom.xml"
if [ ! -f "$rest_jars/pom.xml" ] || ! cmp -s "$rest_pom" "$rest_jars/pom.xml"; then
  echo "install-deps: fetching the Iceberg REST catalog server's jars with Maven into .venv/jars/rest-catalog"
  rm -rf "$rest_jars"
  mkdir -p "$rest_jars"
  mvn_log=$(mktemp)
  if ! mvn -q -B -f "$rest_pom" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$rest_jars" >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    rm -f "$mvn_log"
    rm -rf "$rest_jars"
    echo "install-deps: Maven could not fetch the REST catalog server's jars" >&2
    exit 1
  fi
  rm -f "$mvn_log"
  cp "$rest_pom" "$rest_jars/pom.xml"
fi
