#!/usr/bin/env python3
"""The Spark benchmark (issue 6): TierDBSpark seam reads against plain Spark JDBC.

    spark_seam.py [--rows N] [--days D] [--repeat R] [--parallelism P] [--fetch-size F]
                  [--dir DIR] [--keep-cluster] [--explain] [--no-build] [--bin build/tierdb]

In one run, on one private PostgreSQL 15 cluster started like the read
benchmark's (seam_reads.SETTINGS: shared_preload_libraries=tierdb, 2 GB of
shared_buffers, max_parallel_workers_per_gather=0, so that Spark's tasks are
the only parallelism):

- the read benchmark's tables (seam_reads.load): the event rows of the
  tiering benchmark, N over D daily partitions plus tiering_peer.HOT_ROWS on
  the day after, loaded into `events_heap` (plain, partitioned by day) and
  `events_tiered`, which is registered and tiered with `tierdb run --once`:
  every day but the newest moves into the lake. The split is checked and both
  heaps are prewarmed before anything is timed;
- connectors/spark is installed into the local Maven repository and
  connectors/spark-bench packaged (`mvn -q`; --no-build skips both);
- SeamScanBench runs in one JVM with a local Spark session of P cores
  (default 2, the development VM's): a full count(*) and a grouped aggregate
  (per device_id count and avg(value)) through
  TierDBSpark.read(...).dataframe() on events_tiered and through Spark's JDBC
  source on events_heap (partitionColumn ts, numPartitions P, fetchsize F),
  one warm-up then R timed runs each; it checks the two sides' answers agree
  and prints the best and median wall times, the least CPU time (the JVM's
  plus the cluster's, which the script points it to) and the ratios. For
  reference it also times the lake table alone at the pinned snapshot.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
the answers differ or a step fails.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import seam_reads  # noqa: E402  (the tables, the tiering and the split check)
from tiering_peer import TOP, clean_env, positive_int, private_cluster, tail, work_directory  # noqa: E402

CONNECTOR = TOP / "connectors/spark"
BENCH_MODULE = TOP / "connectors/spark-bench"
MAIN = "io.tierdb.spark.bench.SeamScanBench"
# Spark reflects into JDK internals that Java 17 closes (the list Spark's own launcher passes).
JAVA_OPTIONS = ["-Xmx4g", "-XX:+UseParallelGC"] + [
    f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
        "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch", "sun.nio.cs",
        "sun.security.action", "sun.util.calendar")] + ["-Djdk.reflect.useDirectMethodHandle=false"]


def fail(message):
    print(f"spark-bench: {message}", file=sys.stderr)
    sys.exit(1)


def say(message):
    print(f"spark-bench: {message}", flush=True)


def build(work):
    """Installs tierdb-spark into ~/.m2 and packages the bench; returns the java classpath."""
    for tool in ("mvn", "java"):
        if shutil.which(tool) is None:
            fail(f"{tool} is not installed: the Spark benchmark needs Java 17 and Maven (apt-get install maven)")
    steps = [("tierdb-spark", ["mvn", "-B", "-q", "-f", str(CONNECTOR / "pom.xml"), "install", "-DskipTests"]),
             ("the benchmark", ["mvn", "-B", "-q", "-f", str(BENCH_MODULE / "pom.xml"), "package"])]
    for what, cmd in steps:
        log = work / f"mvn-{what.replace(' ', '-')}.log"
        with open(log, "wb") as out:
            if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                fail(f"building {what} failed ({' '.join(cmd)}):\n{tail(log, 40)}")
    return classpath()


def classpath():
    target = BENCH_MODULE / "target"
    jar = target / "tierdb-spark-bench-0.1.0.jar"
    deps = target / "classpath.txt"
    if not jar.exists() or not deps.exists():
        fail(f"{jar} or {deps} is missing: build without --no-build first")
    return f"{jar}:{deps.read_text().strip()}"


def setup(args, work, dsn):
    """Loads and tiers the tables; returns the split facts and the lake table's path."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        t0 = time.perf_counter()
        seam_reads.load(conn, args.rows, args.days)
        load_seconds = time.perf_counter() - t0
        say(f"loaded in {load_seconds:.1f} s; tiering events_tiered")
        tier_seconds, ref = seam_reads.tier(args, work, dsn, conn)
        facts = seam_reads.split(conn, args, ref, clean_env())
        if facts["lake_rows"] != facts["heap_below_cut"] or facts["hot_min"] < facts["cut"]:
            fail(f"the split is wrong: {facts}")
        cached = seam_reads.prewarm(conn)
    say(f"T = {facts['cut']}: {facts['lake_rows']:,} rows in the lake ({facts['lake_files']} files, snapshot "
        f"{facts['snapshot']}), {facts['hot_rows']:,} in the heap; tiered in {tier_seconds:.1f} s; "
        f"{cached / 1e6:,.0f} MB of heap prewarmed")
    return facts, ref


def postmaster_pid(cluster):
    """The cluster's postmaster PID (the first line of postmaster.pid), for SeamScanBench's CPU clock."""
    return (cluster / "data" / "postmaster.pid").read_text().split("\n", 1)[0].strip()


def run_bench(args, cp, port, work, facts, ref):
    cmd = ["java"] + JAVA_OPTIONS + ["-cp", cp, MAIN,
                                     "--jdbc-url", f"jdbc:postgresql://127.0.0.1:{port}/postgres?user=postgres",
                                     "--table", "public.events_tiered", "--peer", "public.events_heap",
                                     "--warehouse", str(work / "lake"), "--parallelism", str(args.parallelism),
                                     "--repeat", str(args.repeat), "--partition-column", "ts",
                                     "--fetch-size", str(args.fetch_size),
                                     "--expect-rows", str(facts["heap_below_cut"] + facts["hot_rows"]),
                                     "--lake", ref, "--snapshot", str(facts["snapshot"]),
                                     "--pg-pid", postmaster_pid(work / "pg"),
                                     "--clock-ticks", str(os.sysconf("SC_CLK_TCK"))]
    if args.explain:
        cmd.append("--explain")
    say(f"running SeamScanBench (Spark's log: {work / 'spark.log'}):\n  "
        + " ".join(c if c != cp else "CLASSPATH" for c in cmd))
    with open(work / "spark.log", "wb") as log:
        code = subprocess.run(cmd, stderr=log, env=clean_env()).returncode
    mismatches = [line for line in (work / "spark.log").read_text(errors="replace").splitlines()
                  if "MISMATCH" in line]
    for line in mismatches:
        print(line, file=sys.stderr)
    if code != 0 and not mismatches:
        fail(f"SeamScanBench failed ({code}); the end of its log:\n{tail(work / 'spark.log', 40)}")
    return code


def benchmark(args):
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = work_directory(args.dir, "spark")
    try:
        if args.no_build:
            cp = classpath()
        else:
            say("building connectors/spark and connectors/spark-bench")
            cp = build(work)
        keep = bool(args.keep_cluster and args.dir)
        with private_cluster(work, seam_reads.SETTINGS, keep=keep, say=say) as (dsn, port):
            say(f"{args.rows:,} rows over {args.days} days, twice; cluster on port {port}, files in {work}")
            facts, ref = setup(args, work, dsn)
            return run_bench(args, cp, port, work, facts, ref)
    finally:
        if cleanup:
            cleanup.cleanup()


def main():
    p = argparse.ArgumentParser(description="Spark benchmark: TierDBSpark seam reads against plain Spark JDBC.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", seam_reads.DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=seam_reads.DEFAULT_DAYS,
                   help="daily partitions the cold rows fill")
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)),
                   help="timed runs of each query after the warm-up; best and median are shown")
    p.add_argument("--parallelism", type=positive_int, default=2,
                   help="Spark cores (local[P]) and numPartitions of both sides")
    p.add_argument("--fetch-size", type=positive_int, default=10_000, help="the JDBC side's fetchsize")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/spark (default: a temporary directory)")
    p.add_argument("--keep-cluster", action="store_true", help="with --dir: leave the cluster running afterwards")
    p.add_argument("--explain", action="store_true", help="print both sides' Spark plans before timing")
    p.add_argument("--no-build", action="store_true", help="use the already packaged connectors/spark-bench")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
