#!/usr/bin/env bash
# Runs libFuzzer targets for a bounded time; `make test-fuzz` calls it.
#
#   scripts/run-fuzzers.sh SECONDS FUZZER...
#
# FUZZER is a built target such as build/fuzz/fuzz_parquet_reader; its seed
# corpus is lake/tests/corpus/<name>. Each target first runs once over every
# committed seed (a regression pass: a seed that crashes is a regression),
# then fuzzes for its share of SECONDS over a temporary copy of the corpus, so
# the inputs it discovers never dirty the repository. libFuzzer's output goes
# to a log; on a failure the script prints the log's tail and keeps the
# crashing input under build/fuzz-artifacts/<name>/, then exits 1.
#
# Non-interactive and terminal-free, so it behaves the same under CI=true.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 SECONDS FUZZER..." >&2
  exit 2
fi

top=$(cd "$(dirname "$0")/.." && pwd)
total_seconds=$1
shift
case $total_seconds in
  '' | *[!0-9]*) echo "run-fuzzers: SECONDS must be a whole number, got '$total_seconds'" >&2; exit 2 ;;
esac

fuzzers=("$@")
per_fuzzer=$((total_seconds / ${#fuzzers[@]}))
[ "$per_fuzzer" -ge 1 ] || per_fuzzer=1

artifacts_root="$top/build/fuzz-artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/tierdb-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Stack traces for UBSan reports; leaks are checked by libFuzzer itself.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="abort_on_error=0:symbolize=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

common_flags=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=0)

# Prints what went wrong and where the crashing input is, then exits 1.
fail() {
  local fuzzer=$1 phase=$2 log=$3 artifacts=$4
  local name saved input found=0
  name=$(basename "$fuzzer")
  saved="$artifacts_root/$name"
  mkdir -p "$saved"
  cp "$log" "$saved/$phase.log"
  echo "run-fuzzers: $name: FAILED during the $phase pass (full log: $saved/$phase.log):" >&2
  # The report starts at the sanitizer's or libFuzzer's first complaint.
  awk '/==[0-9]+==ERROR|runtime error:|broken promise|ALARM: working on the last Unit|out-of-memory|deadly signal/ {p = 1}
       /^Shadow bytes around/ {p = 0}
       p' "$log" | head -n 60 >&2 || true
  grep -E '^SUMMARY|^MS: |^Base64: ' "$log" >&2 || true
  for input in "$artifacts"/*; do
    [ -f "$input" ] || continue
    cp "$input" "$saved/"
    input="$saved/$(basename "$input")"
    echo "run-fuzzers: $name: crashing input: $input (reproduce: $fuzzer $input)" >&2
    found=1
  done
  # A seed that fails in the regression pass is not copied anywhere: it is the
  # last file libFuzzer announced before dying.
  if [ "$found" -eq 0 ]; then
    input=$(sed -n 's/^Running: //p' "$log" | tail -n 1)
    [ -z "$input" ] || echo "run-fuzzers: $name: crashing input: $input (reproduce: $fuzzer $input)" >&2
  fi
  exit 1
}

for fuzzer_path in "${fuzzers[@]}"; do
  name=$(basename "$fuzzer_path")
  corpus="$top/lake/tests/corpus/$name"
  if [ ! -x "$fuzzer_path" ]; then
    echo "run-fuzzers: $fuzzer_path is not a built fuzz target" >&2
    exit 1
  fi
  if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
    echo "run-fuzzers: $name: no seed corpus in $corpus" >&2
    exit 1
  fi

  artifacts="$work/$name-artifacts"
  mkdir -p "$artifacts"

  # Regression pass: every committed seed once, by file name.
  seeds=("$corpus"/*)
  log="$work/$name-regression.log"
  if ! "$fuzzer_path" "${common_flags[@]}" -artifact_prefix="$artifacts/" "${seeds[@]}" >"$log" 2>&1; then
    fail "$fuzzer_path" regression "$log" "$artifacts"
  fi

  # Fuzzing pass over a scratch copy of the corpus.
  scratch="$work/$name-corpus"
  mkdir -p "$scratch"
  cp "$corpus"/* "$scratch/"
  log="$work/$name-fuzz.log"
  start=$(date +%s)
  if ! "$fuzzer_path" "${common_flags[@]}" -max_total_time="$per_fuzzer" \
      -artifact_prefix="$artifacts/" "$scratch" >"$log" 2>&1; then
    fail "$fuzzer_path" fuzzing "$log" "$artifacts"
  fi
  elapsed=$(($(date +%s) - start))
  runs=$(sed -n 's/^Done \([0-9]*\) runs in .*/\1/p' "$log" | tail -n 1)
  corpus_size=$(find "$scratch" -type f | wc -l)
  printf 'run-fuzzers: %-22s %s seeds ok; fuzzing: %s executions in %ss (corpus %s -> %s inputs)\n' \
    "$name" "${#seeds[@]}" "${runs:-?}" "$elapsed" "${#seeds[@]}" "$corpus_size"
done
