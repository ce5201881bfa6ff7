/*
 * DirectWriteBench: the Spark write benchmark of direct tables. In one JVM and
 * one local Spark session it times TierDBSpark.write of batches of new rows
 * below the cut-line T of a table registered --mode direct (the executors
 * write Iceberg data and equality-delete files, the driver commits them as one
 * snapshot under the table's lake lock and publishes it in Postgres:
 * DirectWrite, LakeFiles) against Spark writing the same rows with its own
 * Iceberg writer, df.writeTo(peer).append(), into a plain Iceberg table of
 * the same columns partitioned by days(ts), as the lake is. It prints both
 * times and the ratio. bench/spark_direct.py sets up the table and runs it;
 * see bench/README.md.
 *
 *   DirectWriteBench --jdbc-url URL --table T --lake PATH --lake-warehouse DIR --warehouse DIR
 *                    --cold-from MICROS --cold-to MICROS
 *                    [--rows 1000000] [--batches 3] [--parallelism 2]
 *                    [--warmup-rows 100000] [--pg-pid PID --clock-ticks HZ] [--peer-codec C]
 *
 * Each batch is spark.range(offset, offset + rows, 1, P) with new ids
 * (offset 10^9 * (i + 1)) and ts rising with id over [cold-from, cold-to),
 * all below T, so every row goes to the lake; it is cached and counted
 * before either side is timed, and both sides write the same cached rows,
 * the side that goes first alternating from batch to batch. After each
 * TierDB write the table's count (heap and lake, through the extension's
 * transparent reads) must have grown by exactly the batch, and op_log must
 * hold one more direct commit, of the batch's rows, published as S: that is,
 * the parallel path committed and not the routed fallback. After each peer
 * write its new snapshot must have added the batch's rows. Otherwise it
 * prints MISMATCH and exits 1; 2 on bad arguments. Nothing here asserts a
 * timing. With --pg-pid (the cluster's postmaster) and --clock-ticks
 * (USER_HZ) it also reports the CPU seconds of each write, this JVM's plus
 * the cluster's (CpuClock). The peer's Parquet codec is the lake table's
 * write.parquet.compression-codec unless --peer-codec names another (to
 * separate the codec's share of a difference).
 */
package io.tierdb.spark.bench;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;

import io.tierdb.spark.SeamOptions;
import io.tierdb.spark.TierDBSpark;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import scala.collection.JavaConverters;

public final class DirectWriteBench {

    static final String PEER = "bench.db.events_peer";
    /** The columns of the table and the peer, of exactly the Spark types the direct path takes losslessly. */
    static final StructType SCHEMA = new StructType()
            .add("id", DataTypes.LongType, false)
            .add("ts", DataTypes.TimestampType, false)
            .add("device_id", DataTypes.IntegerType, false)
            .add("value", DataTypes.DoubleType, false)
            .add("note", DataTypes.StringType, false);

    private DirectWriteBench() {}

    /** The command line. */
    record Config(String jdbcUrl, String table, String lake, String lakeWarehouse, String warehouse, long coldFrom,
                  long coldTo, long rows, int batches, int parallelism, long warmupRows, long pgPid, int clockTicks,
                  String peerCodec) {

        static Config parse(String[] args) {
            Map<String, String> given = new LinkedHashMap<>();
            for (int i = 0; i < args.length; i++) {
                if (args[i].startsWith("--") && i + 1 < args.length) {
                    given.put(args[i].substring(2), args[++i]);
                } else {
                    throw new IllegalArgumentException("unexpected argument '" + args[i] + "'");
                }
            }
            List<String> known = List.of("jdbc-url", "table", "lake", "lake-warehouse", "warehouse", "cold-from",
                    "cold-to", "rows", "batches", "parallelism", "warmup-rows", "pg-pid", "clock-ticks", "peer-codec");
            for (String name : given.keySet()) {
                if (!known.contains(name)) {
                    throw new IllegalArgumentException("unknown option --" + name);
                }
            }
            Config c = new Config(required(given, "jdbc-url"), required(given, "table"), required(given, "lake"),
                    required(given, "lake-warehouse"), required(given, "warehouse"),
                    Long.parseLong(required(given, "cold-from")), Long.parseLong(required(given, "cold-to")),
                    positive(given, "rows", 1_000_000), (int) positive(given, "batches", 3),
                    (int) positive(given, "parallelism", 2),
                    Long.parseLong(given.getOrDefault("warmup-rows", "100000")),
                    Long.parseLong(given.getOrDefault("pg-pid", "-1")), (int) positive(given, "clock-ticks", 100),
                    given.get("peer-codec"));
            if (c.coldTo - c.coldFrom <= 1000) {
                throw new IllegalArgumentException("--cold-from must be well below --cold-to");
            }
            if (c.rows >= 500_000_000L || c.warmupRows < 0 || c.warmupRows >= 500_000_000L) {
                throw new IllegalArgumentException("--rows and --warmup-rows must stay below 500,000,000 (the ids of"
                        + " the batches are 10^9 apart)");
            }
            return c;
        }

        private static String required(Map<String, String> given, String name) {
            String v = given.get(name);
            if (v == null) {
                throw new IllegalArgumentException("--" + name + " is required");
            }
            return v;
        }

        private static long positive(Map<String, String> given, String name, long fallback) {
            long v = Long.parseLong(given.getOrDefault(name, Long.toString(fallback)));
            if (v <= 0) {
                throw new IllegalArgumentException("--" + name + " must be positive, got " + v);
            }
            return v;
        }
    }

    /** One timed write: wall seconds, CPU seconds (JVM + cluster; NaN unmeasured), the cluster's part, Spark jobs. */
    record Write(double seconds, double cpu, double pgCpu, int jobs, Map<String, String> summary, String profile) {}

    /** The Spark jobs of the session in order, with where they were called and how long they ran. */
    static final class Jobs extends SparkListener {
        record Job(String callSite, long start, long end) {}

        private final List<Job> jobs = new ArrayList<>();
        private final Map<Integer, Integer> index = new HashMap<>();

        @Override
        public synchronized void onJobStart(SparkListenerJobStart e) {
            // the result stage's name is the action and where it was called, e.g. "collect at DirectWrite.java:540"
            String site = "?";
            int last = -1;
            for (StageInfo stage : JavaConverters.seqAsJavaList(e.stageInfos())) {
                if (stage.stageId() > last) {
                    last = stage.stageId();
                    site = stage.name();
                }
            }
            index.put(e.jobId(), jobs.size());
            jobs.add(new Job(site, e.time(), -1));
        }

        @Override
        public synchronized void onJobEnd(SparkListenerJobEnd e) {
            Integer at = index.get(e.jobId());
            if (at != null) {
                Job j = jobs.get(at);
                jobs.set(at, new Job(j.callSite, j.start, e.time()));
            }
        }

        synchronized int started() {
            return jobs.size();
        }

        /**
         * The jobs started since `from`, once their end has arrived: the listener bus delivers events
         * after the fact, so this waits for them (up to 5 s; never inside a timed write).
         */
        List<Job> since(int from) {
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (true) {
                synchronized (this) {
                    List<Job> out = new ArrayList<>(jobs.subList(Math.min(from, jobs.size()), jobs.size()));
                    if (out.stream().allMatch(j -> j.end >= 0) || System.nanoTime() > deadline) {
                        return out;
                    }
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
        }

        /** "where 0.12 s, ..." of jobs, and the part of `seconds` outside them (the driver's own work). */
        static String describe(List<Job> jobs, double seconds) {
            StringBuilder s = new StringBuilder();
            double inJobs = 0;
            for (Job j : jobs) {
                double d = (j.end - j.start) / 1e3;
                inJobs += d;
                s.append(s.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%s %.2f s", j.callSite, d));
            }
            return String.format(Locale.ROOT, "%s; outside jobs %.2f s", s, seconds - inJobs);
        }
    }

    public static void main(String[] args) throws Exception {
        Config config;
        try {
            config = Config.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("DirectWriteBench: " + e.getMessage());
            System.err.println("usage: DirectWriteBench --jdbc-url URL --table T --lake PATH --lake-warehouse DIR"
                    + " --warehouse DIR"
                    + " --cold-from MICROS --cold-to MICROS [--rows 1000000] [--batches 3] [--parallelism 2]"
                    + " [--warmup-rows 100000] [--pg-pid PID --clock-ticks HZ] [--peer-codec C]");
            System.exit(2);
            return;
        }
        SparkSession spark = session(config);
        int status;
        try {
            status = run(spark, config);
        } finally {
            spark.stop();
        }
        System.exit(status);
    }

    static SparkSession session(Config c) {
        SparkSession spark = SparkSession.builder()
                .appName("tierdb-spark-direct-bench")
                .master("local[" + c.parallelism + "]")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.session.timeZone", "UTC")
                // One shuffle partition per core, as SeamScanBench: both sides shuffle (TierDB's check of
                // unique keys, the peer's clustering by partition), and 200 is not what anyone runs on 2 cores.
                .config("spark.sql.shuffle.partitions", Integer.toString(c.parallelism))
                // The peer's catalog; and default_iceberg, through which Iceberg's Spark runtime loads a table by
                // path (DirectWrite loads the lake so): unset, Iceberg makes it a Hive catalog, which fails here.
                .config("spark.sql.catalog.default_iceberg", "org.apache.iceberg.spark.SparkCatalog")
                .config("spark.sql.catalog.default_iceberg.type", "hadoop")
                .config("spark.sql.catalog.default_iceberg.warehouse", c.lakeWarehouse)
                .config("spark.sql.catalog.bench", "org.apache.iceberg.spark.SparkCatalog")
                .config("spark.sql.catalog.bench.type", "hadoop")
                .config("spark.sql.catalog.bench.warehouse", c.warehouse)
                .getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        // DirectWrite says at INFO when a write takes the routed path instead, and why.
        Configurator.setLevel("io.tierdb.spark", Level.INFO);
        return spark;
    }

    static int run(SparkSession spark, Config c) throws SQLException {
        Jobs jobs = new Jobs();
        spark.sparkContext().addSparkListener(jobs);
        HadoopTables tables = new HadoopTables(spark.sparkContext().hadoopConfiguration());
        Table lake = tables.load(c.lake);
        Table peer = createPeer(spark, tables, c, lake);
        SeamOptions options = SeamOptions.builder().jdbcUrl(c.jdbcUrl).table(c.table).build();
        CpuClock clock = c.pgPid > 0 ? new CpuClock(c.pgPid, c.clockTicks) : null;
        List<String> problems = new ArrayList<>();
        Map<String, List<Write>> writes = new LinkedHashMap<>();
        writes.put("tierdb", new ArrayList<>());
        writes.put("peer", new ArrayList<>());

        try (Connection conn = DriverManager.getConnection(c.jdbcUrl, new Properties())) {
            conn.setAutoCommit(true);
            Checker checker = new Checker(conn, c.table, lake, peer);
            if (c.warmupRows > 0) {
                // Not timed: the first write of each side loads the classes of its writers and codecs.
                Dataset<Row> warm = materialize(batch(spark, 500_000_000L, c.warmupRows, c));
                tierdbWrite(warm, options, checker, c.warmupRows, null, jobs, problems, "warm-up");
                peerWrite(warm, checker, c.warmupRows, null, jobs, problems, "warm-up");
                warm.unpersist(true);
                System.out.printf(Locale.ROOT, "DirectWriteBench: warm-up of %,d rows written to both sides%n",
                        c.warmupRows);
            }
            for (int i = 0; i < c.batches && problems.isEmpty(); i++) {
                long offset = 1_000_000_000L * (i + 1);
                Dataset<Row> rows = materialize(batch(spark, offset, c.rows, c));
                String label = "batch " + (i + 1);
                boolean tierdbFirst = i % 2 == 0;
                for (int k = 0; k < 2; k++) {
                    if ((k == 0) == tierdbFirst) {
                        writes.get("tierdb").add(tierdbWrite(rows, options, checker, c.rows, clock, jobs, problems,
                                label));
                    } else {
                        writes.get("peer").add(peerWrite(rows, checker, c.rows, clock, jobs, problems, label));
                    }
                }
                rows.unpersist(true);
                Write t = last(writes.get("tierdb"));
                Write p = last(writes.get("peer"));
                System.out.printf(Locale.ROOT, "DirectWriteBench: %s (%s first): tierdb %.3f s (%d jobs, %s data +"
                        + " %s delete files), peer %.3f s (%d jobs, %s data files)%n", label,
                        tierdbFirst ? "tierdb" : "peer", t.seconds, t.jobs, t.summary.get("added-data-files"),
                        t.summary.getOrDefault("added-delete-files", "0"), p.seconds, p.jobs,
                        p.summary.get("added-data-files"));
                System.out.println("  tierdb's jobs: " + t.profile);
                System.out.println("  peer's jobs:   " + p.profile);
            }
        }
        if (problems.isEmpty()) {
            report(writes, c, lake, peer);
        }
        for (String p : problems) {
            System.err.println("DirectWriteBench: MISMATCH: " + p);
        }
        return problems.isEmpty() ? 0 : 1;
    }

    private static Write last(List<Write> l) {
        return l.get(l.size() - 1);
    }

    /** The peer: a plain Iceberg table of the same columns, partitioned by day as the lake, its codec the lake's. */
    static Table createPeer(SparkSession spark, HadoopTables tables, Config c, Table lake) {
        String codec = c.peerCodec != null ? c.peerCodec
                : lake.properties().getOrDefault("write.parquet.compression-codec", "zstd");
        spark.sql("CREATE NAMESPACE IF NOT EXISTS bench.db");
        spark.sql("DROP TABLE IF EXISTS " + PEER);
        spark.sql("CREATE TABLE " + PEER + " (id bigint NOT NULL, ts timestamp NOT NULL, device_id int, value double,"
                + " note string) USING iceberg PARTITIONED BY (days(ts))"
                + " TBLPROPERTIES ('format-version' = '2', 'write.parquet.compression-codec' = '" + codec + "')");
        return tables.load(c.warehouse + "/db/events_peer");
    }

    /**
     * rows new rows, ids from offset, ts rising with the id over [coldFrom, coldTo) plus under 1 ms of
     * jitter (a backfill of the cold days), the other columns drawn from hashes of the id.
     */
    static Dataset<Row> batch(SparkSession spark, long offset, long rows, Config c) {
        double step = (double) (c.coldTo - c.coldFrom - 1000) / rows;
        Dataset<Row> df = spark.range(offset, offset + rows, 1, c.parallelism).select(
                col("id"),
                expr(String.format(Locale.ROOT, "timestamp_micros(%dL + CAST(CAST(id - %dL AS DOUBLE) * %.6f AS BIGINT)"
                        + " + pmod(xxhash64(id, 1), 1000))", c.coldFrom, offset, step)).as("ts"),
                expr("CAST(pmod(xxhash64(id, 2), 10000) AS INT)").as("device_id"),
                expr("CAST(pmod(xxhash64(id, 3), 1000000) AS DOUBLE) / 100").as("value"),
                expr("concat('note ', CAST(id AS STRING))").as("note"));
        if (!Arrays.equals(types(df.schema()), types(SCHEMA)) || !Arrays.equals(df.columns(), SCHEMA.fieldNames())) {
            throw new IllegalStateException("the generated batch is " + df.schema().simpleString() + ", not "
                    + SCHEMA.simpleString());
        }
        return df;
    }

    private static String[] types(StructType s) {
        return Arrays.stream(s.fields()).map(f -> f.dataType().simpleString()).toArray(String[]::new);
    }

    /** Generated once and cached before anything is timed, so neither side pays for generating it. */
    static Dataset<Row> materialize(Dataset<Row> df) {
        Dataset<Row> cached = df.persist(StorageLevel.MEMORY_ONLY());
        cached.count();
        return cached;
    }

    static Write tierdbWrite(Dataset<Row> rows, SeamOptions options, Checker checker, long n, CpuClock clock,
                             Jobs jobs, List<String> problems, String label) throws SQLException {
        Checker.State before = checker.state();
        int jobs0 = jobs.started();
        Write w = timed(() -> TierDBSpark.write(rows, options), clock);
        Checker.State after = checker.state();
        if (after.count - before.count != n) {
            problems.add(String.format(Locale.ROOT, "%s: %s grew by %d rows, not %d", label, checker.table,
                    after.count - before.count, n));
        }
        if (after.directCommits - before.directCommits != 1) {
            problems.add(String.format(Locale.ROOT, "%s: op_log holds %d new direct commits, not 1: the write did"
                    + " not take the parallel path (see DirectWrite's INFO line in the log)", label,
                    after.directCommits - before.directCommits));
        } else if (after.publishedRows != n || after.lakeSnapshot != after.published) {
            problems.add(String.format(Locale.ROOT, "%s: the direct commit journals %d rows and S = %d, the lake is"
                    + " at %d; expected %d rows, published", label, after.publishedRows, after.published,
                    after.lakeSnapshot, n));
        }
        List<Jobs.Job> ran = jobs.since(jobs0);
        return new Write(w.seconds, w.cpu, w.pgCpu, ran.size(), checker.lakeSummary(),
                Jobs.describe(ran, w.seconds));
    }

    static Write peerWrite(Dataset<Row> rows, Checker checker, long n, CpuClock clock, Jobs jobs,
                           List<String> problems, String label) {
        Long before = checker.peerSnapshot();
        int jobs0 = jobs.started();
        Write w = timed(() -> {
            try {
                rows.writeTo(PEER).append();
            } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
                throw new IllegalStateException(e);
            }
        }, clock);
        Map<String, String> summary = checker.peerSummary();
        if (java.util.Objects.equals(before, checker.peerSnapshot())
                || !Long.toString(n).equals(summary.get("added-records"))) {
            problems.add(String.format(Locale.ROOT, "%s: the peer's append added %s records, not %d", label,
                    summary.get("added-records"), n));
        }
        List<Jobs.Job> ran = jobs.since(jobs0);
        return new Write(w.seconds, w.cpu, w.pgCpu, ran.size(), summary, Jobs.describe(ran, w.seconds));
    }

    static Write timed(Runnable write, CpuClock clock) {
        double jvm0 = clock == null ? Double.NaN : clock.jvm();
        double pg0 = clock == null ? Double.NaN : clock.postgres();
        long start = System.nanoTime();
        write.run();
        double seconds = (System.nanoTime() - start) / 1e9;
        double pg = clock == null ? Double.NaN : clock.postgres() - pg0;
        double cpu = clock == null ? Double.NaN : clock.jvm() - jvm0 + pg;
        return new Write(seconds, cpu, pg, 0, Map.of(), "");
    }

    /** What the checks read: the table through Postgres, both Iceberg tables' current snapshots. */
    static final class Checker {
        final Connection conn;
        final String table;
        final Table lake;
        final Table peer;

        record State(long count, long directCommits, long published, long publishedRows, long lakeSnapshot) {}

        Checker(Connection conn, String table, Table lake, Table peer) throws SQLException {
            this.conn = conn;
            this.table = table;
            this.lake = lake;
            this.peer = peer;
            try (Statement st = conn.createStatement()) {
                st.execute("SET tierdb.transparent_reads = on");  // the default; the count is heap + lake
            }
        }

        State state() throws SQLException {
            long count;
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM "
                    + table)) {
                rs.next();
                count = rs.getLong(1);
            }
            String sql = "SELECT (SELECT count(*) FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'),"
                    + " c.lake_snapshot_id, coalesce((SELECT (o.details ->> 'rows')::bigint FROM tierdb.op_log o"
                    + "   WHERE o.details ->> 'kind' = 'direct' AND o.lake_snapshot_id = c.lake_snapshot_id), -1)"
                    + " FROM tierdb.cutline c WHERE c.table_id = ?::regclass::oid::bigint";
            try (PreparedStatement ps = conn.prepareStatement(sql)) {
                ps.setString(1, table);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    lake.refresh();
                    Snapshot s = lake.currentSnapshot();
                    return new State(count, rs.getLong(1), rs.getLong(2), rs.getLong(3),
                            s == null ? -1 : s.snapshotId());
                }
            }
        }

        Map<String, String> lakeSummary() {
            lake.refresh();
            return lake.currentSnapshot().summary();
        }

        Long peerSnapshot() {
            peer.refresh();
            Snapshot s = peer.currentSnapshot();
            return s == null ? null : s.snapshotId();
        }

        Map<String, String> peerSummary() {
            peer.refresh();
            return peer.currentSnapshot().summary();
        }
    }

    // ------------------------------------------------------------------ the report

    private static double best(double[] v) {
        return Arrays.stream(v).min().orElseThrow();
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    static void report(Map<String, List<Write>> writes, Config c, Table lake, Table peer) {
        Map<String, double[]> wall = new LinkedHashMap<>();
        Map<String, double[]> cpu = new LinkedHashMap<>();
        Map<String, double[]> pgCpu = new LinkedHashMap<>();
        for (Map.Entry<String, List<Write>> e : writes.entrySet()) {
            wall.put(e.getKey(), e.getValue().stream().mapToDouble(Write::seconds).toArray());
            cpu.put(e.getKey(), e.getValue().stream().mapToDouble(Write::cpu).toArray());
            pgCpu.put(e.getKey(), e.getValue().stream().mapToDouble(Write::pgCpu).toArray());
        }
        System.out.println();
        System.out.printf(Locale.ROOT, "Spark direct-write benchmark: %d batches of %,d new rows below T; local[%d],"
                + " spark.range with %d partitions, cached before timing; the sides alternate going first%n",
                c.batches, c.rows, c.parallelism, c.parallelism);
        System.out.printf(Locale.ROOT, "  tierdb: TierDBSpark.write(batch, options) of direct table %s (lake %s;"
                + " codec %s, its files' %s)%n", c.table, lake.location(), codec(lake), writtenCodec(lake));
        System.out.printf(Locale.ROOT, "  peer:   batch.writeTo(\"%s\").append(), Iceberg %s, PARTITIONED BY"
                + " (days(ts)), write.distribution-mode %s; codec %s, its files' %s%n", PEER, peer.location(),
                peer.properties().getOrDefault("write.distribution-mode", "default (hash)"), codec(peer),
                writtenCodec(peer));
        System.out.println();
        System.out.printf(Locale.ROOT, "  %-8s%9s%10s%15s%10s%8s%6s%12s%14s%n", "side", "best s", "median s",
                "rows/s (best)", "CPU s", "(pg)", "jobs", "data files", "delete files");
        for (String side : writes.keySet()) {
            List<Write> w = writes.get(side);
            double[] s = wall.get(side);
            int at = 0;
            for (int i = 1; i < s.length; i++) {
                at = cpu.get(side)[i] < cpu.get(side)[at] ? i : at;
            }
            System.out.printf(Locale.ROOT, "  %-8s%9.3f%10.3f%15s%10.2f%8.2f%6s%12s%14s%n", side, best(s), median(s),
                    String.format(Locale.ROOT, "%,.0f", c.rows / best(s)), cpu.get(side)[at], pgCpu.get(side)[at],
                    range(w, x -> Integer.toString(x.jobs)),
                    range(w, x -> x.summary.getOrDefault("added-data-files", "0")),
                    range(w, x -> x.summary.getOrDefault("added-delete-files", "0")));
        }
        double ratio = best(wall.get("tierdb")) / best(wall.get("peer"));
        double medianRatio = median(wall.get("tierdb")) / median(wall.get("peer"));
        double cpuRatio = best(cpu.get("tierdb")) / best(cpu.get("peer"));
        System.out.println("  (CPU: the least of any write, this JVM + the Postgres cluster, the cluster's part as pg;"
                + " jobs: Spark jobs one write ran; files: added by one commit, from its snapshot summary)");
        System.out.printf(Locale.ROOT, "  tierdb/peer: %.2fx wall (best), %.2fx wall (median)%s; above 1.00x the"
                + " direct write takes longer%n", ratio, medianRatio,
                Double.isNaN(cpuRatio) ? "" : String.format(Locale.ROOT, ", %.2fx CPU (best)", cpuRatio));
        for (String side : writes.keySet()) {
            Map<String, String> s = writes.get(side).get(0).summary;
            System.out.printf(Locale.ROOT, "  %s's first timed commit added %,d records in %s data files and %,d"
                    + " equality deletes in %s delete files, %.1f MB%n", side, Long.parseLong(s.get("added-records")),
                    s.getOrDefault("added-data-files", "0"), Long.parseLong(s.getOrDefault("added-equality-deletes",
                    "0")), s.getOrDefault("added-delete-files", "0"), Long.parseLong(s.get("added-files-size")) / 1e6);
        }
        StringBuilder json = new StringBuilder(String.format(Locale.ROOT, "{\"benchmark\": \"spark_direct\","
                + " \"rows\": %d, \"batches\": %d, \"parallelism\": %d, \"ratio_best\": %.4f", c.rows, c.batches,
                c.parallelism, ratio));
        for (String side : writes.keySet()) {
            json.append(", \"").append(side).append("\": {\"seconds\": ").append(jsonArray(wall.get(side)))
                    .append(", \"cpu_seconds\": ").append(jsonArray(cpu.get(side)))
                    .append(", \"postgres_cpu_seconds\": ").append(jsonArray(pgCpu.get(side)))
                    .append(", \"data_files\": [");
            String sep = "";
            for (Write w : writes.get(side)) {
                json.append(sep).append(w.summary.getOrDefault("added-data-files", "0"));
                sep = ", ";
            }
            json.append("], \"delete_files\": [");
            sep = "";
            for (Write w : writes.get(side)) {
                json.append(sep).append(w.summary.getOrDefault("added-delete-files", "0"));
                sep = ", ";
            }
            json.append("]}");
        }
        System.out.println(json.append('}'));
    }

    private static String codec(Table t) {
        return t.properties().getOrDefault("write.parquet.compression-codec", "(unset)");
    }

    /** The codec of the first column of a data file the table's current snapshot added, from its footer. */
    static String writtenCodec(Table t) {
        t.refresh();
        for (DataFile f : t.currentSnapshot().addedDataFiles(t.io())) {
            try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromPath(
                    new org.apache.hadoop.fs.Path(f.location()), new Configuration()))) {
                return r.getFooter().getBlocks().get(0).getColumns().get(0).getCodec().name();
            } catch (java.io.IOException | RuntimeException e) {
                return "unknown (" + e.getMessage() + ")";
            }
        }
        return "unknown (no data file)";
    }

    /** "n" when every write gave n, else "lo-hi" (numbers compared as such). */
    private static String range(List<Write> writes, java.util.function.Function<Write, String> f) {
        long lo = writes.stream().mapToLong(w -> Long.parseLong(f.apply(w))).min().orElseThrow();
        long hi = writes.stream().mapToLong(w -> Long.parseLong(f.apply(w))).max().orElseThrow();
        return lo == hi ? Long.toString(lo) : lo + "-" + hi;
    }

    private static String jsonArray(double[] v) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < v.length; i++) {
            s.append(i == 0 ? "" : ", ").append(Double.isNaN(v[i]) ? "null" : String.format(Locale.ROOT, "%.4f", v[i]));
        }
        return s.append(']').toString();
    }
}
