#!/usr/bin/env bash
# The demo of what TierDB does today: its own Parquet writer and reader,
# checked against DuckDB and pyarrow on a million event rows; then a
# private Postgres cluster with the tierdb extension, a partitioned events
# table registered for tiering, and the daemon moving its old partitions
# into an Iceberg table that DuckDB reads.
# (Transparent two-tier reads in Postgres come with issue 5.)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

scripts/install-deps.sh
make --no-print-directory -s build/tierdb build/bench/parquet_bench install-extension >/dev/null

dir=${DEMO_DIR:-$top/build/demo}
# A cluster left running by an earlier demo is stopped before its files go.
scripts/pg-cluster.sh stop "$dir/pg" >/dev/null 2>&1 || true
rm -rf "$dir"
mkdir -p "$dir"
events=$dir/events.parquet
py=$top/.venv/bin/python

say "Writing 1,000,000 event rows with TierDB's Parquet writer (ZSTD, dictionary encoding)"
build/bench/parquet_bench write "$events" --rows 1000000 | "$py" -c '
import json, sys
r = json.loads(sys.stdin.read())
rate = r["rows_per_sec"] / 1e6
print("wrote {:,} rows in {:.2f}s ({:.2f} M rows/s), {:.1f} MB".format(r["rows"], r["seconds"], rate, r["file_bytes"] / 1e6))'

say "tierdb parquet schema: columns, field ids, row groups, statistics"
build/tierdb parquet schema "$events" | head -24

say "tierdb parquet cat: the first rows as JSON"
build/tierdb parquet cat "$events" --limit 5

say "DuckDB reads our file: events per kind"
"$py" - "$events" <<'PY'
import sys, duckdb
rows = duckdb.sql(f"""
    select event, count(*) as n, round(avg(value), 2) as avg_value, count(distinct device_id) as devices
    from read_parquet('{sys.argv[1]}') group by event order by n desc limit 5""").fetchall()
print(f"{'event':<12}{'rows':>10}{'avg value':>12}{'devices':>10}")
for event, n, avg, devices in rows:
    print(f"{event:<12}{n:>10,}{avg:>12}{devices:>10,}")
PY

say "pyarrow writes the same table with delta encodings and data page v2; TierDB reads it"
"$py" - "$events" "$dir/pyarrow.parquet" <<'PY'
import sys, pyarrow.parquet as pq
table = pq.read_table(sys.argv[1])
pq.write_table(table, sys.argv[2], compression="snappy", use_dictionary=False, data_page_version="2.0",
               column_encoding={"id": "DELTA_BINARY_PACKED", "event": "DELTA_BYTE_ARRAY", "value": "BYTE_STREAM_SPLIT"})
print(f"pyarrow wrote {table.num_rows:,} rows")
PY
ours=$(build/tierdb parquet cat "$events" --columns id,event,value | md5sum | cut -d' ' -f1)
theirs=$(build/tierdb parquet cat "$dir/pyarrow.parquet" --columns id,event,value | md5sum | cut -d' ' -f1)
echo "tierdb parquet cat of both files, columns id,event,value: $ours vs $theirs"
[ "$ours" = "$theirs" ] && echo "identical: the rows survived TierDB -> pyarrow -> TierDB unchanged"

say "Tiering: a private Postgres cluster with the tierdb extension"
cluster=$dir/pg
lake=$dir/lake
port=${DEMO_PORT:-55439}
scripts/pg-cluster.sh start "$cluster" "$port" >/dev/null
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
export TIERDB_WAREHOUSE=$lake
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
echo "cluster in $cluster on port $port; lake in $lake"
psql -c "CREATE EXTENSION tierdb"
psql <<'SQL'
CREATE TABLE events (id bigint, ts timestamptz NOT NULL, device_id int, value numeric(10,2), event text)
    PARTITION BY RANGE (ts);
SELECT format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
              'events_' || to_char(d, 'YYYYMMDD'), d, d + interval '1 day')
FROM generate_series(timestamptz '2026-11-01 00:00+00', '2026-11-10 00:00+00', interval '1 day') d \gexec
INSERT INTO events
SELECT i, timestamptz '2026-11-01 00:00+00' + (i * interval '864 milliseconds'),
       (i % 1000)::int, round((i % 10000) / 100.0, 2), (ARRAY['view','click','buy','share'])[1 + i % 4]
FROM generate_series(0, 999999) i;
SQL
echo "loaded 1,000,000 rows over 10 daily partitions"

say "tierdb register: an Iceberg table partitioned by day(ts)"
build/tierdb register --table public.events --pk id --tier-key ts

say "tierdb run --once with TIERDB_TIERING_LAG=2d: old partitions move into the lake"
TIERDB_TIERING_LAG=2d build/tierdb run --once 2>&1 | sed 's/^/  /'

say "tierdb status"
build/tierdb status

say "tierdb verify: the lake holds exactly the rows each partition had (counts and checksums)"
build/tierdb verify --table public.events

say "The heap now holds only the recent partitions"
psql -c "SELECT tableoid::regclass AS partition, count(*) FROM events GROUP BY 1 ORDER BY 1"

say "DuckDB reads the lake table with its iceberg extension"
"$py" - "$lake/public/events" <<'PY'
import glob, importlib, pathlib, sys
import duckdb
con = duckdb.connect()
con.execute("SET autoinstall_known_extensions = false")
con.execute("SET autoload_known_extensions = false")
for package in ("duckdb_extension_avro", "duckdb_extension_iceberg"):
    where = pathlib.Path(importlib.import_module(package).__path__[0]) / "extensions" / f"v{duckdb.__version__}"
    con.execute(f"LOAD '{glob.glob(str(where / '*.duckdb_extension'))[0]}'")
print(con.sql(f"SELECT event, count(*) AS rows, round(sum(value), 2) AS total FROM iceberg_scan('{sys.argv[1]}') GROUP BY event ORDER BY event"))
PY
heap=$(command psql -X -At -c "SELECT count(*) FROM events")
lake_rows=$(build/tierdb lake info "$lake/public/events" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["files"]["data_records"])')
echo "heap rows: $heap; lake rows: $lake_rows; together $((heap + lake_rows)) of the 1,000,000 loaded"

say "Done"
echo "Files are in $dir. Try: build/tierdb parquet cat $events --columns id,user --limit 3"
echo "The cluster is still running: psql -h 127.0.0.1 -p $port -U postgres; build/tierdb lake cat $lake/public/events --limit 3"
echo "Stop it with: scripts/pg-cluster.sh stop $cluster"
