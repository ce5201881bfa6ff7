#!/usr/bin/env bash
# The demo of what TierDB does today: its own Parquet writer and reader,
# checked against DuckDB and pyarrow on a million event rows; then a
# private Postgres cluster with the tierdb extension preloaded and the
# daemon embedded, a partitioned events table registered for tiering, its
# old partitions moving into an Iceberg table while plain SQL keeps seeing
# every row, a correction to a cold row, and DuckDB reading the lake; then a
# mirrored table whose lake copy follows plain DML through the replication
# stream.
#
# DEMO_LAKE=s3 (`make demo-s3`) keeps the lake in a bucket of a private
# S3-compatible server (S3Proxy, scripts/s3-server.sh) instead of a local
# directory: the server's backends, its embedded daemon, the CLI and DuckDB
# all reach it through the TIERDB_S3_* variables.
#
# DEMO_CATALOG=rest (`make demo-rest`, with the lake on S3) also starts an
# Iceberg REST catalog (Iceberg's RESTCatalogServer, scripts/rest-catalog.sh):
# the table is registered in it and every commit goes through it
# (docs/rest-catalog.md); DuckDB then reads the metadata file it pinned.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

scripts/install-deps.sh
make --no-print-directory -s build/tierdb build/bench/parquet_bench install-extension >/dev/null

dir=${DEMO_DIR:-$top/build/demo}
lake_on=${DEMO_LAKE:-local}
case $lake_on in local|s3) ;; *) echo "demo: DEMO_LAKE must be local or s3, not '$lake_on'" >&2; exit 2;; esac
catalog_on=${DEMO_CATALOG:-none}
case $catalog_on in none|rest) ;; *) echo "demo: DEMO_CATALOG must be none or rest, not '$catalog_on'" >&2; exit 2;; esac
# A cluster (and S3 server) left running by an earlier demo is stopped before its files go.
scripts/pg-cluster.sh stop "$dir/pg" >/dev/null 2>&1 || true
scripts/s3-server.sh stop "$dir/s3" >/dev/null 2>&1 || true
scripts/rest-catalog.sh stop "$dir/rest" >/dev/null 2>&1 || true
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

cluster=$dir/pg
port=${DEMO_PORT:-55439}
if [ "$lake_on" = s3 ]; then
  say "A private S3-compatible server (S3Proxy) for the lake"
  scripts/s3-server.sh start "$dir/s3" >/dev/null
  # The cluster started below inherits these, so its backends and its embedded daemon reach the bucket.
  set -a; . "$dir/s3/env"; set +a
  lake=s3://$TIERDB_S3_TEST_BUCKET/demo
  echo "S3 endpoint $TIERDB_S3_ENDPOINT, lake at $lake"
else
  lake=$dir/lake
  mkdir -p "$lake"
  # The embedded daemon runs as the server's OS user: it must own the lake.
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$lake"; fi
fi
if [ "$catalog_on" = rest ]; then
  say "A private Iceberg REST catalog (Iceberg's RESTCatalogServer) that will own the table's commits"
  # Started after the S3 server, with its variables: it writes s3:// metadata with S3FileIO.
  scripts/rest-catalog.sh start "$dir/rest" >/dev/null
  # The cluster inherits TIERDB_CATALOG_URI too, so its embedded daemon commits through the catalog.
  set -a; . "$dir/rest/env"; set +a
  echo "REST catalog at $TIERDB_CATALOG_URI"
fi

say "A private Postgres cluster: the tierdb extension preloaded, the daemon embedded"
scripts/pg-cluster.sh start "$cluster" "$port" -c shared_preload_libraries=tierdb \
  -c tierdb.embedded_worker=on -c "tierdb.worker_command=$top/build/tierdb" \
  -c "tierdb.worker_env=TIERDB_WAREHOUSE=$lake;TIERDB_TIERING_LAG=2d;TIERDB_CYCLE_INTERVAL_SECONDS=2" >/dev/null
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
export TIERDB_WAREHOUSE=$lake
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
query() { command psql -X -q -v ON_ERROR_STOP=1 -P footer=off "$@"; }
# duckdb_query LAKE SQL: DuckDB's iceberg extension runs SQL, its {lake} being the table at LAKE (a path or s3://)
duckdb_query() {
  "$py" - "$1" "$2" <<'PY'
import glob, importlib, os, pathlib, sys
import duckdb
con = duckdb.connect()
con.execute("SET autoinstall_known_extensions = false")
con.execute("SET autoload_known_extensions = false")
packages = ["duckdb_extension_avro", "duckdb_extension_iceberg"]
if sys.argv[1].startswith("s3://"):
    packages.append("duckdb_extension_httpfs")
for package in packages:
    where = pathlib.Path(importlib.import_module(package).__path__[0]) / "extensions"
    found = glob.glob(str(where / f"v{duckdb.__version__}" / "*.duckdb_extension")) or glob.glob(str(where / "*.duckdb_extension"))
    con.execute(f"LOAD '{found[0]}'")
if sys.argv[1].startswith("s3://"):
    con.execute("CREATE SECRET lake (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false)",
                [os.environ["TIERDB_S3_ACCESS_KEY"], os.environ["TIERDB_S3_SECRET_KEY"], os.environ["TIERDB_S3_REGION"],
                 os.environ["TIERDB_S3_ENDPOINT"].split("://", 1)[1]])
print(con.sql(sys.argv[2].replace("{lake}", sys.argv[1])))
PY
}
echo "cluster in $cluster on port $port; lake in $lake"
echo "shared_preload_libraries = 'tierdb', tierdb.embedded_worker = on: the server runs 'tierdb run' itself"
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
aggregate="SELECT event, count(*) AS rows, sum(value) AS total FROM events GROUP BY event ORDER BY event"
before=$(command psql -X -At -c "$aggregate")

say "tierdb register: an Iceberg table partitioned by day(ts)"
build/tierdb register --table public.events --pk id --tier-key ts
if [ "$lake_on" = local ] && [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$lake"; fi

say "The embedded daemon tiers every partition older than max(ts) - 2 days"
for _ in $(seq 1 120); do
  dropped=$(command psql -X -At -c "SELECT count(*) FROM tierdb.partitions WHERE state = 'dropped'")
  [ "$dropped" -ge 7 ] && break
  sleep 1
done
echo "partitions dropped from the heap: $dropped of 10"
[ "$dropped" -ge 7 ] || { echo "demo: the daemon did not tier in time; its log: $cluster/postgres.log" >&2; exit 1; }
query -c "SELECT schema_name, table_name, cutline_t, cutline_s, partition_states FROM tierdb.status"

say "The raw heap (tierdb.transparent_reads = off) holds only the recent partitions"
query <<'SQL'
SET tierdb.transparent_reads = off;
SELECT tableoid::regclass AS partition, count(*) FROM events GROUP BY 1 ORDER BY 1;
SQL

say "Plain SQL still sees all 1,000,000 rows: heap above T, the lake below it, in the backend"
query -c "SELECT count(*) FROM events"
query -c "$aggregate"
after=$(command psql -X -At -c "$aggregate")
[ "$before" = "$after" ] && echo "the same aggregate as before tiering, row for row"
query -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE ts < '2026-11-03'"

say "A correction to a cold row: tierdb_upsert routes it to the delta, visible at once"
query -c "SELECT * FROM events WHERE id = 42"
query -c "SELECT tierdb_upsert('events', jsonb_build_object('id', 42, 'ts', '2026-11-01 00:00:36.288+00',
                                'device_id', 42, 'value', 999.99, 'event', 'refund')) AS route"
query -c "SELECT * FROM events WHERE id = 42"

say "Plain UPDATE, DELETE and INSERT reach cold rows too (transparent writes, docs/writes.md)"
query -c "UPDATE events SET value = value + 1 WHERE id IN (43, 999999) RETURNING id, ts, value"
query -c "DELETE FROM events WHERE id = 44 RETURNING id, ts"
query -c "INSERT INTO events VALUES (1000001, '2026-11-02 12:00+00', 7, 1.50, 'view') RETURNING *"
query -c "SELECT CASE op WHEN 0 THEN 'upsert' ELSE 'tombstone' END AS delta_row, count(*) FROM tierdb.delta GROUP BY 1"
for _ in $(seq 1 60); do
  backlog=$(command psql -X -At -c "SELECT delta_backlog FROM tierdb.status")
  [ "$backlog" -eq 0 ] && break
  sleep 1
done
echo "after the daemon folded them into the lake (delta backlog $backlog):"
query -c "SELECT * FROM events WHERE id IN (42, 43, 44, 1000001) ORDER BY id"

say "tierdb status"
build/tierdb status

say "tierdb verify: the lake holds exactly the rows each partition had (counts and checksums)"
build/tierdb verify --table public.events

say "DuckDB reads the lake table with its iceberg extension"
scan_target=$lake/public/events
if [ "$catalog_on" = rest ]; then
  # The catalog names its metadata files <N>-<uuid>.metadata.json and keeps no version hint: DuckDB gets the pinned one.
  scan_target=$(command psql -X -At -c "SELECT lake_props->>'metadata_location' FROM tierdb.cutline")
fi
duckdb_query "$scan_target" \
  "SELECT event, count(*) AS rows, round(sum(value), 2) AS total FROM iceberg_scan('{lake}') GROUP BY event ORDER BY event"

if [ "$catalog_on" != rest ]; then
  say "A mirrored table: the heap keeps every row and takes any DML; the daemon keeps a full Iceberg copy from the replication stream"
  psql <<'SQL'
CREATE TABLE orders (id bigint PRIMARY KEY, created_at timestamptz NOT NULL, customer int, amount numeric(10,2), status text);
INSERT INTO orders SELECT i, timestamptz '2026-11-01 00:00+00' + i * interval '1 minute', i % 500, (i % 997) / 10.0, 'new'
FROM generate_series(1, 100000) i;
SQL
  build/tierdb register --table public.orders --pk id --tier-key created_at --mode mirrored
  if [ "$lake_on" = local ] && [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$lake"; fi
  mirrored() {  # waits until the mirror has passed every change made so far
    local target
    target=$(command psql -X -At -c "SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint")
    for _ in $(seq 1 120); do
      [ "$(command psql -X -At -c "SELECT coalesce(mirror_frontier >= $target, false) FROM tierdb.status WHERE table_name = 'orders'")" = t ] && return 0
      sleep 0.5
    done
    echo "demo: the mirror did not catch up in time; the log: $cluster/postgres.log" >&2
    exit 1
  }
  mirrored
  echo "the daemon copied 100,000 rows; now plain DML on the heap:"
  query -c "UPDATE orders SET status = 'shipped' WHERE id % 10 = 0"
  query -c "DELETE FROM orders WHERE id % 97 = 0"
  query -c "INSERT INTO orders SELECT i, now(), 7, 1.00, 'new' FROM generate_series(100001, 100100) i"
  mirrored
  echo "Postgres (the heap):"
  query -c "SELECT status, count(*) AS rows, sum(amount) AS total FROM orders GROUP BY status ORDER BY status"
  echo "DuckDB (the lake copy, about a second behind):"
  duckdb_query "$lake/public/orders" \
    "SELECT status, count(*) AS rows, sum(amount) AS total FROM iceberg_scan('{lake}') GROUP BY status ORDER BY status"
fi

say "Done"
echo "Files are in $dir. Try: build/tierdb parquet cat $events --columns id,user --limit 3"
echo "The cluster is still running, with the daemon inside it:"
echo "  psql -h 127.0.0.1 -p $port -U postgres -c 'SELECT count(*) FROM events'"
if [ "$catalog_on" = rest ]; then
  echo "  (. $dir/s3/env; build/tierdb lake cat $lake/public/events --limit 3)"
  echo "Stop them with: scripts/pg-cluster.sh stop $cluster; scripts/rest-catalog.sh stop $dir/rest;" \
       "scripts/s3-server.sh stop $dir/s3"
elif [ "$lake_on" = s3 ]; then
  echo "  (. $dir/s3/env; build/tierdb lake cat $lake/public/events --limit 3)"
  echo "Stop them with: scripts/pg-cluster.sh stop $cluster; scripts/s3-server.sh stop $dir/s3"
else
  echo "  build/tierdb lake cat $lake/public/events --limit 3"
  echo "Stop it with: scripts/pg-cluster.sh stop $cluster"
fi
