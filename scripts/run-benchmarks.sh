#!/usr/bin/env bash
# Runs benchmarks against their peers in the same run; `make bench` calls it.
#
#   scripts/run-benchmarks.sh BENCH...
#
# BENCH is a built benchmark such as build/bench/parquet_bench. For
# parquet_bench it writes and fully reads the event table with our codec and
# with pyarrow (bench/parquet_peer.py), each phase in its own process so its
# peak RSS is its own, checks that both files hold the same rows, and prints
# the comparison table. For iceberg_plan it plans scans of a table of 1,000
# snapshots and 10,000 data files with our planner and with pyiceberg
# (bench/iceberg_plan_peer.py) and prints both times and the ratio. For
# build/tierdb (run after the others when it sits beside build/bench, as in
# `make bench`) it tiers BENCH_ROWS event rows with `tierdb run --once` and
# with a psycopg + pyiceberg script (bench/tiering_peer.py), then runs the
# read benchmark (bench/seam_reads.py): scans of a tiered table through
# transparent reads against a plain heap table and DuckDB, and pgbench point
# lookups on its hot rows; then the Spark benchmark (bench/spark_seam.py,
# needs Java 17 and Maven): TierDBSpark reads of a tiered table against plain
# Spark JDBC on an untiered one; then the maintenance benchmark
# (bench/maintenance.py): cold scans of a tiered table laden with fold debt,
# after `tierdb maintain` and freshly written, and the compaction's MB/s
# against Spark's rewrite_data_files on a copy of the same lake. See
# bench/README.md for how to read them.
#
# Environment:
#   BENCH_ROWS    rows to write (default 10000000; 1000000 makes a quick run)
#   BENCH_REPEAT  runs of each phase; the table shows the best (default 3)
#   BENCH_DIR     where the Parquet files go (default: a temporary directory,
#                 removed afterwards; a given BENCH_DIR is kept)
#
# Nothing here asserts a timing. The exit status is non-zero only if a phase
# fails or the two sides did not hold the same data.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BENCH..." >&2
  exit 2
fi

top=$(cd "$(dirname "$0")/.." && pwd)
python="$top/.venv/bin/python"
rows=${BENCH_ROWS:-10000000}
repeat=${BENCH_REPEAT:-3}
for setting in "BENCH_ROWS=$rows" "BENCH_REPEAT=$repeat"; do
  case ${setting#*=} in
    '' | 0 | *[!0-9]*) echo "run-benchmarks: ${setting%%=*} must be a positive whole number, got '${setting#*=}'" >&2; exit 2 ;;
  esac
done

if [ -n "${BENCH_DIR:-}" ]; then
  work=$BENCH_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/tierdb-bench.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

run_parquet() {
  local bench=$1
  local peer="$top/bench/parquet_peer.py"
  local results="$work/parquet-results"
  local ours="$work/tierdb.parquet" theirs="$work/pyarrow.parquet"
  rm -rf "$results" "$ours" "$theirs"
  mkdir -p "$results"

  echo "run-benchmarks: parquet: $rows rows, best of $repeat; files in $work"
  local i
  for i in $(seq 1 "$repeat"); do
    "$bench" write "$ours" --rows "$rows" >"$results/ours-write-$i.json"
    "$python" "$peer" write "$theirs" --rows "$rows" >"$results/pyarrow-write-$i.json"
    "$bench" read "$ours" >"$results/ours-read-$i.json"
    "$python" "$peer" read "$theirs" >"$results/pyarrow-read-$i.json"
  done
  # Cross-checks, outside the comparison: our reader on pyarrow's file, and
  # pyarrow comparing both files with freshly generated rows.
  "$bench" read "$theirs" >"$results/ours-read-pyarrow-file-1.json"
  "$python" "$peer" verify "$ours" "$theirs" --rows "$rows" >"$results/verify-1.json" || true

  echo
  echo "raw results:"
  local f
  for f in "$results"/*.json; do
    printf '  %-28s %s\n' "$(basename "$f" .json)" "$(cat "$f")"
  done
  echo
  "$python" "$peer" report "$results"
}

run_iceberg_plan() {
  local bench=$1
  # The generated table is kept in BENCH_DIR across runs (it takes a while to build).
  echo "run-benchmarks: iceberg_plan: best of $repeat; table in $work/iceberg-plan"
  "$python" "$top/bench/iceberg_plan_peer.py" "$work/iceberg-plan" --bin "$bench" --repeat "$repeat"
}

run_tiering() {
  # A private Postgres cluster in $work/tiering; one run (each side moves the rows once).
  echo "run-benchmarks: tiering: $rows rows"
  BENCH_ROWS=$rows "$python" "$top/bench/tiering_peer.py" --bin "$1" --dir "$work"
}

run_reads() {
  # Another private cluster, in $work/reads, with the extension preloaded.
  echo "run-benchmarks: reads: $rows rows, best of $repeat"
  "$python" "$top/bench/seam_reads.py" --bin "$1" --dir "$work" --rows "$rows" --repeat "$repeat"
}

run_spark() {
  # A third cluster, in $work/spark; builds connectors/spark and connectors/spark-bench with Maven.
  echo "run-benchmarks: spark: $rows rows, best of $repeat"
  "$python" "$top/bench/spark_seam.py" --bin "$1" --dir "$work" --rows "$rows" --repeat "$repeat"
}

run_maintenance() {
  # A fourth cluster, in $work/maintenance; Spark with the Iceberg runtime from .venv/jars.
  echo "run-benchmarks: maintenance: $rows rows, best of $repeat"
  "$python" "$top/bench/maintenance.py" --bin "$1" --dir "$work" --rows "$rows" --repeat "$repeat"
}

run_tiered() {
  run_tiering "$1"
  run_reads "$1"
  run_spark "$1"
  run_maintenance "$1"
}

for bench in "$@"; do
  name=$(basename "$bench")
  case $name in
    parquet_bench) run_parquet "$bench" ;;
    iceberg_plan) run_iceberg_plan "$bench" ;;
    tierdb) run_tiered "$bench"; tiered=1 ;;
    *)
      # A benchmark without a runner here prints its own comparison.
      echo "run-benchmarks: $name"
      "$bench"
      ;;
  esac
done
# `make bench` passes build/bench/*; the tiering and read benchmarks drive build/tierdb beside them.
tierdb_bin=$(dirname "$(dirname "$1")")/tierdb
if [ -z "${tiered:-}" ] && [ "$(basename "$(dirname "$1")")" = bench ] && [ -x "$tierdb_bin" ]; then
  run_tiered "$tierdb_bin"
fi
