#!/usr/bin/env python3
"""The maintenance benchmark (issue 20): what lake debt costs cold scans, what
`tierdb maintain` wins back, and how fast it rewrites against Spark's
rewrite_data_files on the same lake.

    maintenance.py [--rows N] [--days D] [--folds F] [--corrections C] [--repeat R] [--parallelism P]
                   [--dir DIR] [--bin build/tierdb]
        the whole benchmark: a private cluster, the debt, the three scans, both rewrites, the report
    maintenance.py spark --warehouse DIR --table S.T --warmup S.U [--parallelism P]
        the Spark side alone (the benchmark runs it in its own process): rewrite_data_files of the
        hadoop-catalog table S.U under DIR (untimed), then of S.T; prints one JSON line

In one run, on a private PostgreSQL 15 cluster with the read benchmark's
settings (seam_reads.SETTINGS: shared_preload_libraries=tierdb, one process
per query):

- debt: the event rows (tiering_peer.create_and_fill: N rows over D daily
  partitions and tiering_peer.HOT_ROWS on the day after, primary key
  (id, ts)) in `events`, registered --pk id,ts --tier-key ts with the
  policy's compaction, manifest rewrite and expiry off, and tiered by
  `tierdb run --once` (TIERDB_TIERING_LAG=1h: every day but the newest goes
  to the lake). Then F folds, each C corrections of random cold rows of one
  day (the days in turn) in plain SQL (one UPDATE of four fifths of them,
  one DELETE of the rest, each naming the day; transparent writes route
  them to tierdb.delta) followed by `tierdb run --once`, whose fold commits
  them: a snapshot, a small data file and an equality-delete file per fold;
- the lake's debt as the daemon records it (tierdb.lake_stats.stats:
  snapshots, data files, small files, delete files and rows, manifests);
- cold scans through transparent reads (a count(*), a grouped aggregate
  over the cold days, a selective filter), timed as the read benchmark
  times them (client wall clock and the backend's CPU; one warm-up, then
  the best of R) on (a) the debt-laden table, (b) the same table after
  `tierdb maintain` (policy reset, snapshot_max_age=0s) and (c) `fresh`, a
  table of the same rows (INSERT ... SELECT from the maintained one)
  registered and tiered without corrections. Every answer must equal (a)'s;
- the rewrite: before maintaining, the lake table's metadata is copied into
  a warehouse of its own, twice, and Spark (local[P], the Iceberg runtime
  from .venv/jars, a hadoop catalog on the copies) runs
  CALL system.rewrite_data_files with rewrite-all and remove-dangling-deletes
  on the first copy untimed (the JVM warms up), then on the second, timed
  around the call; that table must then hold the cold rows Postgres reads. Ours: a running `tierdb run` (TIERDB_CYCLE_INTERVAL_SECONDS=1)
  and `tierdb maintain`, timed by the command's wall clock; the compaction
  alone by the daemon's log, from its "compaction: operation ... rewrites"
  line to its "replaced" line. MB/s is the data bytes each rewrote
  (last_maintenance.bytes_rewritten; Spark's rewritten_bytes_count) over
  that time.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
any answer differs, a step fails, or Spark's rewritten table does not hold
the rows Postgres reads below T.
"""

import argparse
import datetime as dt
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiering_peer  # noqa: E402  (the cluster helpers and the event rows)
from seam_reads import (SETTINGS, Query, backend_cpu, cold_scan_explain, day, pg_runner, same_rows,  # noqa: E402
                        timed)
from tiering_peer import TOP, clean_env, create_and_fill, positive_int, tail  # noqa: E402

DEFAULT_ROWS = 2_000_000
DEFAULT_DAYS = 10
DEFAULT_FOLDS = 200
DEFAULT_CORRECTIONS = 300
JARS = Path(os.environ.get("TIERDB_SPARK_JARS", TOP / ".venv" / "jars"))
# The runtime scripts/install-deps.sh fetches (tests/interop/spark_support.py says why not 1.7.x).
ICEBERG_RUNTIME = "iceberg-spark-runtime-3.5_2.12-1.8.1.jar"
# The debt the daemon records in tierdb.lake_stats.stats, in the order the report prints it.
DEBT = ["snapshots", "manifests", "data_files", "small_files", "equality_delete_files", "position_delete_files",
        "delete_records", "records", "data_bytes"]
LOG_LINE = re.compile(r"^(\S+)Z tierdb run: (\S+): compaction: operation (\S+) (rewrites|replaced) (.*)$")


def fail(message):
    print(f"maintenance-bench: {message}", file=sys.stderr)
    sys.exit(1)


def say(message):
    print(f"maintenance-bench: {message}", file=sys.stderr, flush=True)


def queries(days):
    cold = [f"ts < {day(days)}"]
    return [
        Query("count(*)", "count(*)", []),
        Query(f"aggregate, {days} cold days", "event, count(*), sum(value)", cold, " GROUP BY event ORDER BY event"),
        Query("device_id = 42", "*", ["device_id = 42"], " ORDER BY id"),
    ]


# ------------------------------------------------------------------ the tables


def tierdb(args, env, *argv):
    """Runs `tierdb ARGV`; its stdout, or the benchmark fails with its stderr."""
    proc = subprocess.run([args.bin, *argv], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"tierdb {' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def run_once(args, env, work, name):
    """`tierdb run --once`; its wall seconds (its log in WORK/NAME.err)."""
    code, seconds, _ = tiering_peer.run_measured([args.bin, "run", "--once"], env, work / f"{name}.out",
                                                 work / f"{name}.err")
    if code != 0:
        fail(f"tierdb run --once ({name}) failed ({code}); its log:\n{tail(work / f'{name}.err')}")
    return seconds


def register_and_tier(args, env, work, conn, table, policy):
    """Registers TABLE, stores POLICY (--set arguments), tiers it; returns (seconds, lake table directory)."""
    tierdb(args, env, "register", "--table", f"public.{table}", "--pk", "id,ts", "--tier-key", "ts")
    if policy:
        tierdb(args, env, "policy", "--table", f"public.{table}", *policy)
    seconds = run_once(args, env, work, f"tier-{table}")
    ref = conn.execute("SELECT lake_table_ref FROM tierdb.tables WHERE table_name = %s", (table,)).fetchone()[0]
    return seconds, ref


def lake_stats(conn, table):
    """The daemon's record of TABLE's lake (tierdb.lake_stats.stats)."""
    row = conn.execute("SELECT s.stats FROM tierdb.lake_stats s JOIN tierdb.tables t USING (table_id)"
                       " WHERE t.table_name = %s", (table,)).fetchone()
    if row is None:
        fail(f"the daemon recorded no tierdb.lake_stats row for {table}")
    return row[0]


def fold_corrections(args, env, work, conn):
    """F folds of C corrections of random cold rows each, fold i in day i mod D (the statements name the day,
    so their cold scans read that day's files only); returns (rows updated, deleted, seconds of the folds)."""
    rng = random.Random(20)
    updated = deleted = 0
    fold_seconds = []
    deletes = max(1, args.corrections // 5)
    per_day = args.rows // args.days
    for i in range(args.folds):
        d = i % args.days
        # create_and_fill's ids rise with ts: day d holds about ids d * per_day + 1 .. (d + 1) * per_day.
        ids = rng.sample(range(d * per_day + 1, (d + 1) * per_day + 1), min(args.corrections, per_day))
        in_day = f"ts >= {day(d)} AND ts < {day(d + 1)}"
        with conn.cursor() as cur:
            cur.execute(f"UPDATE events SET value = value + 1 WHERE {in_day} AND id = ANY(%s)", (ids[deletes:],))
            updated += cur.rowcount
            cur.execute(f"DELETE FROM events WHERE {in_day} AND id = ANY(%s)", (ids[:deletes],))
            deleted += cur.rowcount
        fold_seconds.append(run_once(args, env, work, "fold"))
        if (i + 1) % max(1, args.folds // 10) == 0:
            say(f"fold {i + 1} of {args.folds}: {updated:,} rows updated, {deleted:,} deleted so far; "
                f"the last fold took {fold_seconds[-1]:.2f} s")
    return updated, deleted, fold_seconds


def fill_fresh(conn, days):
    """`fresh`: events' columns, the same daily partitions, and every row events reads now."""
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE fresh (LIKE events) PARTITION BY RANGE (ts)")
        for d in range(days + 1):
            cur.execute(
                "SELECT format('CREATE TABLE %%I PARTITION OF fresh FOR VALUES FROM (%%L) TO (%%L)',"
                " 'fresh_' || to_char(%s::date + %s::int, 'YYYYMMDD'),"
                " (%s::date + %s::int)::timestamptz, (%s::date + %s::int + 1)::timestamptz)",
                (tiering_peer.BASE_DAY, d, tiering_peer.BASE_DAY, d, tiering_peer.BASE_DAY, d))
            cur.execute(cur.fetchone()[0])
        cur.execute("INSERT INTO fresh SELECT * FROM events")
        copied = cur.rowcount
        cur.execute("ALTER TABLE fresh ADD PRIMARY KEY (id, ts)")
        cur.execute("VACUUM (FREEZE, ANALYZE) fresh")
        cur.execute("CHECKPOINT")
    return copied


# ------------------------------------------------------------------ timing the scans


def time_scans(conn, table, qs, repeat):
    """Each query on TABLE: the answer, one warm-up, the best of REPEAT (wall and backend CPU), and the cold
    scan's figures from one EXPLAIN ANALYZE."""
    run_pg, pg_cpu = pg_runner(conn), backend_cpu(conn)
    results = []
    for q in qs:
        sql = q.sql(table)
        answer = run_pg(sql)  # also the warm-up
        wall = cpu = math.inf
        for _ in range(repeat):
            w, c = timed(run_pg, sql, pg_cpu)
            wall, cpu = min(wall, w), min(cpu, c)
        results.append({"query": q.name, "rows": len(answer), "seconds": wall, "cpu_seconds": cpu,
                        "explain": cold_scan_explain(conn, sql), "answer": answer})
        say(f"{table}: {q.name}: {wall:.4f} s wall, {cpu:.4f} s CPU")
    return results


def compare(problems, label, results, reference):
    for r, ref in zip(results, reference):
        ok, why = same_rows(r["answer"], ref["answer"])
        if not ok:
            problems.append(f"{r['query']}: {label} and the debt-laden table differ: {why}")


# ------------------------------------------------------------------ the two rewrites


def copy_for_spark(ref, work):
    """The lake table's metadata copied twice into WORK/spark-warehouse, a hadoop catalog's layout:
    public.events, and public.events_warmup for an untimed first rewrite. The manifests name the data
    files by absolute path, so Spark reads the lake's own data files (unchanged until `tierdb maintain`
    runs, after Spark) and writes its new ones into each copy."""
    table_dir = Path(ref.removeprefix("file://"))
    warehouse = work / "spark-warehouse"
    for name in ("events", "events_warmup"):
        shutil.copytree(table_dir / "metadata", warehouse / "public" / name / "metadata")
    return warehouse


def spark_rewrite(args, work, warehouse):
    """The Spark side, in its own process; its JSON result."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "spark", "--warehouse", str(warehouse),
           "--table", "public.events", "--warmup", "public.events_warmup", "--parallelism", str(args.parallelism)]
    code, seconds, _ = tiering_peer.run_measured(cmd, clean_env(), work / "spark.out", work / "spark.err")
    if code != 0:
        fail(f"the Spark side failed ({code}); the end of its log:\n{tail(work / 'spark.err', 40)}")
    result = json.loads((work / "spark.out").read_text().strip().splitlines()[-1])
    result["process_seconds"] = seconds
    return result


def compaction_spans(log_path, table):
    """Seconds from each compaction's "rewrites" line to its "replaced" line in the daemon's log."""
    started, spans = {}, []
    for line in Path(log_path).read_text(errors="replace").splitlines():
        m = LOG_LINE.match(line)
        if not m or m.group(2) != table:
            continue
        at = dt.datetime.fromisoformat(m.group(1))
        if m.group(4) == "rewrites":
            started[m.group(3)] = at
        elif m.group(3) in started:
            spans.append((at - started.pop(m.group(3))).total_seconds())
    return spans


def maintain(args, env, work):
    """`tierdb maintain` of events with a daemon running; (wall seconds, its output, compaction seconds)."""
    tierdb(args, env, "policy", "--table", "public.events", "--reset", "--set", "snapshot_max_age=0s")
    daemon_env = dict(env, TIERDB_CYCLE_INTERVAL_SECONDS="1")
    with open(work / "daemon.err", "w") as log:
        daemon = subprocess.Popen([args.bin, "run"], env=daemon_env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        start = time.perf_counter()
        proc = subprocess.run([args.bin, "maintain", "--table", "public.events"], env=env, capture_output=True,
                              text=True)
        seconds = time.perf_counter() - start
    finally:
        daemon.terminate()
        stopped = daemon.wait(timeout=120)
    if proc.returncode != 0:
        fail(f"tierdb maintain failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}\n"
             f"the daemon's log:\n{tail(work / 'daemon.err', 40)}")
    if stopped != 0:
        fail(f"the daemon exited {stopped}; its log:\n{tail(work / 'daemon.err', 40)}")
    return seconds, proc.stdout, compaction_spans(work / "daemon.err", "public.events")


# ------------------------------------------------------------------ the Spark side


def java_home():
    """JAVA_HOME at a Java 17 when unset (Spark 3.5 breaks on 21+), as tests/interop/spark_support.py does."""
    if os.environ.get("JAVA_HOME"):
        return
    for candidate in sorted(Path("/usr/lib/jvm").glob("java-17-openjdk*")) + sorted(Path("/usr/lib/jvm").glob("*17*")):
        if os.access(candidate / "bin" / "java", os.X_OK):
            os.environ["JAVA_HOME"] = str(candidate)
            return


def spark_files(spark, table):
    """(data files, delete files, snapshots) of the table's current snapshot."""
    counts = dict(spark.sql(f"SELECT content, count(*) FROM {table}.files GROUP BY content").collect())
    snapshots = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
    return counts.get(0, 0), counts.get(1, 0) + counts.get(2, 0), snapshots


def rewrite_data_files(spark, warehouse, name):
    """CALL rewrite_data_files of every data file of lake.NAME, deletes applied and dangling ones removed,
    its new files written into the copy (the metadata's location is the lake table's own directory);
    (seconds of the call, its result row)."""
    data = warehouse / Path(*name.split(".")) / "data"
    spark.sql(f"ALTER TABLE lake.{name} SET TBLPROPERTIES ('write.data.path' = '{data}')")
    start = time.perf_counter()
    row = spark.sql(f"CALL lake.system.rewrite_data_files(table => '{name}', options => "
                    "map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))").collect()[0].asDict()
    return time.perf_counter() - start, row


def spark_side(args):
    """The warm-up copy rewritten (untimed: the JVM's classes loaded and compiled), then the timed one."""
    from pyspark.sql import SparkSession

    jar = JARS / ICEBERG_RUNTIME
    if not jar.is_file():
        fail(f"no {jar}: run scripts/install-deps.sh (it fetches it with Maven)")
    java_home()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warehouse = Path(args.warehouse)
    spark = (SparkSession.builder.master(f"local[{args.parallelism}]").appName("tierdb-maintenance-bench")
             .config("spark.jars", str(jar))
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.local.dir", str(warehouse.parent / "spark-local"))
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(args.parallelism))
             .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "2g")
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.lake.type", "hadoop")
             .config("spark.sql.catalog.lake.warehouse", str(warehouse))
             .config("spark.sql.catalog.lake.cache-enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    table = f"lake.{args.table}"
    spark.sql(f"SELECT count(*) FROM lake.{args.warmup}").collect()
    warmup_seconds, _ = rewrite_data_files(spark, warehouse, args.warmup)
    before = spark_files(spark, table)
    seconds, row = rewrite_data_files(spark, warehouse, args.table)
    after = spark_files(spark, table)
    count = spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0]
    aggregate = [tuple(r) for r in spark.sql(f"SELECT event, count(*), sum(value) FROM {table} GROUP BY event"
                                             " ORDER BY event").collect()]
    spark.stop()
    print(json.dumps({"seconds": seconds, "warmup_seconds": warmup_seconds, "result": row,
                      "parallelism": args.parallelism,
                      "before": dict(zip(("data_files", "delete_files", "snapshots"), before)),
                      "after": dict(zip(("data_files", "delete_files", "snapshots"), after)),
                      "count": count, "aggregate": aggregate}))


# ------------------------------------------------------------------ the report


def report(args, facts, scans, debt, maintained, fresh_stats, ours, spark):
    mb = 1024 * 1024
    print()
    print(f"Lake maintenance: {args.rows:,} event rows over {args.days} days, {args.folds} folds of "
          f"{args.corrections} corrections ({facts['updated']:,} rows updated, {facts['deleted']:,} deleted in "
          f"all); scans best of {args.repeat}, client wall clock, one backend per query")
    print(f"  tiered in {facts['tier_seconds']:.1f} s; folds {facts['fold_seconds_first']:.2f} s at first, "
          f"{facts['fold_seconds_last']:.2f} s at the last, {facts['fold_seconds_total']:.0f} s in all")
    print()
    print(f"  {'lake (tierdb.lake_stats)':<28}{'debt-laden':>14}{'maintained':>14}{'fresh':>14}")
    for key in DEBT:
        print(f"  {key:<28}{debt.get(key, 0):>14,}{maintained.get(key, 0):>14,}{fresh_stats.get(key, 0):>14,}")
    print()
    print(f"  {'cold scans, wall s':<28}{'rows':>7}{'debt':>10}{'maintained':>12}{'fresh':>10}"
          f"{'debt/fresh':>12}{'maint/fresh':>13}")
    for clock, label in (("seconds", "wall s"), ("cpu_seconds", "backend CPU s")):
        if clock == "cpu_seconds":
            print(f"  {'cold scans, ' + label:<28}")
        for a, b, c in zip(scans["debt"], scans["maintained"], scans["fresh"]):
            print(f"  {a['query']:<28}{a['rows']:>7}{a[clock]:>10.4f}{b[clock]:>12.4f}{c[clock]:>10.4f}"
                  f"{a[clock] / c[clock]:>11.2f}x{b[clock] / c[clock]:>12.2f}x")
    print("  (ratios are times: above 1.00x slower than the freshly written table)")
    print()
    print("  the cold scan in EXPLAIN ANALYZE (one run: its time and the lake data files it read):")
    for a, b, c in zip(scans["debt"], scans["maintained"], scans["fresh"]):
        figures = [f"{r['explain']['cold_scan'].get('Actual Total Time', 0):.1f} ms, "
                   f"{r['explain']['cold_scan'].get('Lake Files', '-')} files" for r in (a, b, c)]
        print(f"    {a['query']:<26} debt {figures[0]}; maintained {figures[1]}; fresh {figures[2]}")
    print()
    ours_bytes = maintained["last_maintenance"]["bytes_rewritten"]
    compaction = sum(ours["compaction_seconds"])
    spark_bytes = spark["result"].get("rewritten_bytes_count", 0)
    ours_rate = ours_bytes / mb / compaction if compaction > 0 else math.nan
    ours_wall_rate = ours_bytes / mb / ours["maintain_seconds"]
    spark_rate = spark_bytes / mb / spark["seconds"]
    print(f"  {'rewrite':<44}{'files':>8}{'MB':>10}{'seconds':>10}{'MB/s':>10}")
    print(f"  {'tierdb compaction (daemon log)':<44}{maintained['last_maintenance']['files_rewritten']:>8,}"
          f"{ours_bytes / mb:>10.1f}{compaction:>10.2f}{ours_rate:>10.1f}")
    print(f"  {'tierdb maintain, whole command (wall)':<44}{'':>8}{'':>10}{ours['maintain_seconds']:>10.2f}"
          f"{ours_wall_rate:>10.1f}")
    spark_label = f"Spark rewrite_data_files, local[{spark['parallelism']}]"
    print(f"  {spark_label:<44}"
          f"{spark['result'].get('rewritten_data_files_count', 0):>8,}{spark_bytes / mb:>10.1f}"
          f"{spark['seconds']:>10.2f}{spark_rate:>10.1f}")
    print(f"  MB/s, tierdb / Spark: {ours_rate / spark_rate:.2f}x (compaction), "
          f"{ours_wall_rate / spark_rate:.2f}x (whole maintain)")
    print(f"  Spark: {spark['before']['data_files']:,} data and {spark['before']['delete_files']:,} delete files "
          f"before, {spark['after']['data_files']:,} and {spark['after']['delete_files']:,} after "
          f"({spark['result'].get('added_data_files_count', 0)} written); tierdb: "
          f"{maintained['last_maintenance']['files_written']} written, "
          f"{maintained['last_maintenance']['delete_files_removed']:,} delete files removed, "
          f"{maintained['last_maintenance']['snapshots_expired']:,} snapshots expired; Spark's untimed warm-up "
          f"rewrite of the other copy took {spark['warmup_seconds']:.2f} s")
    print("  tierdb maintain printed:\n    " + ours["output"].strip().replace("\n", "\n    "))
    print(json.dumps({"benchmark": "maintenance", "rows": args.rows, "days": args.days, "folds": args.folds,
                      "corrections": args.corrections, "updated": facts["updated"], "deleted": facts["deleted"],
                      "lake_stats": {"debt": debt, "maintained": maintained, "fresh": fresh_stats},
                      "scans": {k: [{f: r[f] for f in ("query", "rows", "seconds", "cpu_seconds")} for r in v]
                                for k, v in scans.items()},
                      "tierdb": {"bytes_rewritten": ours_bytes, "compaction_seconds": compaction,
                                 "maintain_seconds": ours["maintain_seconds"], "mb_per_s": ours_rate,
                                 "maintain_mb_per_s": ours_wall_rate},
                      "spark": {k: v for k, v in spark.items() if k != "aggregate"} | {"mb_per_s": spark_rate},
                      "mb_per_s_ratio": ours_rate / spark_rate}, default=str))


# ------------------------------------------------------------------ the benchmark


def measure(args, work, dsn):
    import psycopg

    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), TIERDB_TIERING_LAG="1h")
    problems, scans, facts = [], {}, {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        create_and_fill(conn, args.rows, args.days)
        facts["tier_seconds"], ref = register_and_tier(
            args, env, work, conn, "events",
            ["--set", "compaction=off", "--set", "expiry=off", "--set", "manifest_rewrite=off"])
        say(f"tiered in {facts['tier_seconds']:.1f} s; {args.folds} folds of {args.corrections} corrections")
        facts["updated"], facts["deleted"], folds = fold_corrections(args, env, work, conn)
        facts.update(fold_seconds_first=folds[0], fold_seconds_last=folds[-1], fold_seconds_total=sum(folds))
        debt = lake_stats(conn, "events")
        say(f"the debt: {', '.join(f'{k} {debt.get(k, 0):,}' for k in DEBT)}; timing the scans")
        qs = queries(args.days)
        scans["debt"] = time_scans(conn, "events", qs, args.repeat)

        say("Spark's rewrite_data_files on a copy of the lake table's metadata")
        spark = spark_rewrite(args, work, copy_for_spark(ref, work))
        cold = conn.execute(f"SELECT count(*) FROM events WHERE ts < {day(args.days)}").fetchone()[0]
        ok, why = same_rows([tuple(r) for r in spark["aggregate"]], scans["debt"][1]["answer"])
        if spark["count"] != cold or not ok:
            problems.append(f"Spark's rewritten table holds {spark['count']:,} rows (Postgres reads {cold:,} "
                            f"below T){'' if ok else '; its aggregate differs: ' + why}")

        say("tierdb maintain, with a daemon running")
        seconds, output, spans = maintain(args, env, work)
        ours = {"maintain_seconds": seconds, "output": output, "compaction_seconds": spans}
        if not spans:
            fail(f"the daemon's log has no compaction of public.events:\n{tail(work / 'daemon.err', 40)}")
        maintained = lake_stats(conn, "events")
        scans["maintained"] = time_scans(conn, "events", qs, args.repeat)
        compare(problems, "the maintained table", scans["maintained"], scans["debt"])

        say("fresh: the same rows, written once")
        copied = fill_fresh(conn, args.days)
        register_and_tier(args, env, work, conn, "fresh", [])
        fresh_stats = lake_stats(conn, "fresh")
        say(f"fresh: {copied:,} rows, {fresh_stats.get('records', 0):,} of them in the lake")
        scans["fresh"] = time_scans(conn, "fresh", qs, args.repeat)
        compare(problems, "fresh", scans["fresh"], scans["debt"])
    report(args, facts, scans, debt, maintained, fresh_stats, ours, spark)
    for p in problems:
        print(f"maintenance-bench: MISMATCH: {p}", file=sys.stderr)
    return 1 if problems else 0


def benchmark(args):
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = tiering_peer.work_directory(args.dir, "maintenance")
    try:
        with tiering_peer.private_cluster(work, SETTINGS, say=say) as (dsn, port):
            say(f"{args.rows:,} rows over {args.days} days; cluster on port {port}, files in {work}")
            return measure(args, work, dsn)
    finally:
        if cleanup:
            cleanup.cleanup()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "spark":
        p = argparse.ArgumentParser(prog="maintenance.py spark")
        p.add_argument("spark")
        p.add_argument("--warehouse", required=True, help="the hadoop catalog's warehouse holding the copy")
        p.add_argument("--table", required=True, help="namespace.table in that warehouse")
        p.add_argument("--warmup", required=True, help="another copy, rewritten first, untimed")
        p.add_argument("--parallelism", type=positive_int, default=2)
        spark_side(p.parse_args())
        return 0
    p = argparse.ArgumentParser(description="Maintenance benchmark: cold scans with lake debt, after "
                                            "`tierdb maintain` and on a fresh table; tierdb's compaction "
                                            "against Spark's rewrite_data_files.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=DEFAULT_DAYS, help="daily partitions the cold rows fill")
    p.add_argument("--folds", type=positive_int, default=DEFAULT_FOLDS, help="folds of corrections (snapshots)")
    p.add_argument("--corrections", type=positive_int, default=DEFAULT_CORRECTIONS,
                   help="cold rows each fold corrects (four fifths updated, one fifth deleted)")
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)),
                   help="timed runs of each scan after the warm-up; the best counts")
    p.add_argument("--parallelism", type=positive_int, default=2, help="Spark cores (local[P])")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/maintenance (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
