#!/usr/bin/env bash
# Runs the extension's pg_regress suite (sql/, expected/) and its isolation
# specs (specs/, expected/) against a temporary instance with the library
# preloaded (tierdb.conf). `make -C extension regress` calls it; the
# extension must be installed into PG_CONFIG's installation first.
#
# initdb refuses root: as root the suites run as the `postgres` OS user, in
# a scratch directory it owns. The output (results/, regression.diffs) is
# copied back to extension/test/out/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pg_config=${PG_CONFIG:-pg_config}
bindir=$("$pg_config" --bindir)
pgxs=$(dirname "$("$pg_config" --pgxs)")/..
regress=$pgxs/test/regress/pg_regress
isolation=$pgxs/test/isolation/pg_isolation_regress
for tool in "$regress" "$isolation"; do
  [ -x "$tool" ] || { echo "regress: $tool is missing (postgresql-server-dev-15)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/tierdb-regress-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$here/sql" "$here/expected" "$here/specs" "$here/tierdb.conf" "$work/"
chmod -R a+rX "$work"
as_tester() {
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$work"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

tests=$(cd "$here/sql" && ls *.sql | sed 's/\.sql$//')
specs=$(cd "$here/specs" && ls *.spec | sed 's/\.spec$//')
status=0
cd "$work"
as_tester "$regress" --temp-instance="$work/tmp_check" --temp-config="$work/tierdb.conf" \
  --bindir="$bindir" --inputdir="$work" --outputdir="$work/regress" --load-extension=tierdb \
  $tests || status=$?
as_tester "$isolation" --temp-instance="$work/tmp_check_iso" --temp-config="$work/tierdb.conf" \
  --bindir="$bindir" --inputdir="$work" --outputdir="$work/isolation" --load-extension=tierdb \
  $specs || status=$?

rm -rf "$here/out"
mkdir -p "$here/out"
for d in regress isolation; do
  [ -d "$work/$d" ] || continue
  mkdir -p "$here/out/$d"
  cp -r "$work/$d/results" "$here/out/$d/" 2>/dev/null || true
  if [ -f "$work/$d/regression.diffs" ]; then
    cp "$work/$d/regression.diffs" "$here/out/$d/"
    echo "regress: differences in $here/out/$d/regression.diffs:" >&2
    head -n 60 "$work/$d/regression.diffs" >&2
  fi
done
exit $status
