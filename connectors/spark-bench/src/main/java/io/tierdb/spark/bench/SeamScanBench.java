/*
 * SeamScanBench: the Spark benchmark of issue 6. In one JVM and one local Spark
 * session it times whole-table scans of a tiered TierDB table read through
 * TierDBSpark.read(...).dataframe() against plain Spark JDBC reading the same rows
 * from an untiered heap table (partitionColumn on the key, the same numPartitions),
 * checks that both sides give the same answers, and prints both times and the
 * ratio. bench/spark_seam.py sets up the tables and runs it; see bench/README.md.
 *
 *   SeamScanBench --jdbc-url URL --table T --peer P --warehouse DIR
 *                 [--parallelism 2] [--repeat 3] [--partition-column ts]
 *                 [--fetch-size 10000] [--expect-rows N]
 *                 [--lake PATH --snapshot ID] [--pg-pid PID --clock-ticks HZ] [--explain]
 *
 * With --lake and --snapshot it also times the Iceberg table alone at that
 * snapshot (spark.read().format("iceberg")), to show how much of the TierDB time
 * is the cold branch itself. With --pg-pid (the cluster's postmaster) and
 * --clock-ticks (USER_HZ) it also reports the CPU seconds of each run, this
 * JVM's plus the cluster's (CpuClock): steadier than the wall clock when the
 * machine is shared. Exit status 1 when the answers differ, 2 on bad
 * arguments. Nothing here asserts a timing.
 */
package io.tierdb.spark.bench;

import static org.apache.spark.sql.functions.avg;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;

import io.tierdb.spark.SeamOptions;
import io.tierdb.spark.SeamRead;
import io.tierdb.spark.TierDBSpark;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class SeamScanBench {

    /** Relative tolerance for averages: the two sides add the values in different orders. */
    private static final double AVG_TOLERANCE = 1e-9;

    private static final DateTimeFormatter BOUND =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS", Locale.ROOT);

    private SeamScanBench() {}

    /** The command line. */
    record Config(String jdbcUrl, String table, String peer, String warehouse, int parallelism, int repeat,
                  String partitionColumn, int fetchSize, long expectRows, String lake, long snapshot,
                  long pgPid, int clockTicks, boolean explain) {

        static Config parse(String[] args) {
            Map<String, String> given = new LinkedHashMap<>();
            boolean explain = false;
            for (int i = 0; i < args.length; i++) {
                if (args[i].equals("--explain")) {
                    explain = true;
                } else if (args[i].startsWith("--") && i + 1 < args.length) {
                    given.put(args[i].substring(2), args[++i]);
                } else {
                    throw new IllegalArgumentException("unexpected argument '" + args[i] + "'");
                }
            }
            Config c = new Config(required(given, "jdbc-url"), required(given, "table"), required(given, "peer"),
                    required(given, "warehouse"), positive(given, "parallelism", 2), positive(given, "repeat", 3),
                    given.getOrDefault("partition-column", "ts"), positive(given, "fetch-size", 10_000),
                    Long.parseLong(given.getOrDefault("expect-rows", "-1")), given.get("lake"),
                    Long.parseLong(given.getOrDefault("snapshot", "-1")),
                    Long.parseLong(given.getOrDefault("pg-pid", "-1")), positive(given, "clock-ticks", 100), explain);
            List<String> known = List.of("jdbc-url", "table", "peer", "warehouse", "parallelism", "repeat",
                    "partition-column", "fetch-size", "expect-rows", "lake", "snapshot", "pg-pid", "clock-ticks");
            for (String name : given.keySet()) {
                if (!known.contains(name)) {
                    throw new IllegalArgumentException("unknown option --" + name);
                }
            }
            if ((c.lake == null) != (c.snapshot < 0)) {
                throw new IllegalArgumentException("--lake and --snapshot go together");
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

        private static int positive(Map<String, String> given, String name, int fallback) {
            int v = Integer.parseInt(given.getOrDefault(name, Integer.toString(fallback)));
            if (v <= 0) {
                throw new IllegalArgumentException("--" + name + " must be positive, got " + v);
            }
            return v;
        }
    }

    /** One way of getting the rows as a dataframe; run() opens it, applies the query, and releases it. */
    interface Side {
        String name();

        Object run(Function<Dataset<Row>, Object> query);
    }

    /** A timed query: its action returns a value both sides must agree on; rows says whether it reads rows. */
    record Query(String name, Function<Dataset<Row>, Object> action, boolean rows) {}

    /**
     * The timed runs of one query on one side: wall seconds, CPU seconds (this JVM plus the Postgres
     * cluster; NaN when not measured) and the cluster's share of them, and what the warm-up returned.
     */
    record Timing(Object answer, double[] seconds, double[] cpu, double[] pgCpu) {
        double best() {
            return min(seconds);
        }

        double median() {
            double[] s = seconds.clone();
            Arrays.sort(s);
            int n = s.length;
            return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        }

        /** The least CPU of any run, and the cluster's part of that run. */
        double[] bestCpu() {
            int at = 0;
            for (int i = 1; i < cpu.length; i++) {
                at = cpu[i] < cpu[at] ? i : at;
            }
            return new double[] {cpu[at], pgCpu[at]};
        }

        private static double min(double[] v) {
            return Arrays.stream(v).min().orElseThrow();
        }
    }

    public static void main(String[] args) throws Exception {
        Config config;
        try {
            config = Config.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("SeamScanBench: " + e.getMessage());
            System.err.println("usage: SeamScanBench --jdbc-url URL --table T --peer P --warehouse DIR"
                    + " [--parallelism 2] [--repeat 3] [--partition-column ts] [--fetch-size 10000]"
                    + " [--expect-rows N] [--lake PATH --snapshot ID] [--explain]");
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
                .appName("tierdb-spark-bench")
                .master("local[" + c.parallelism + "]")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.session.timeZone", "UTC")
                // One shuffle partition per core: the default 200 would be the same overhead on both
                // sides, but it is not what anyone runs on two cores.
                .config("spark.sql.shuffle.partitions", Integer.toString(c.parallelism))
                .config("spark.sql.catalog.default_iceberg", "org.apache.iceberg.spark.SparkCatalog")
                .config("spark.sql.catalog.default_iceberg.type", "hadoop")
                .config("spark.sql.catalog.default_iceberg.warehouse", c.warehouse)
                .getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        return spark;
    }

    static int run(SparkSession spark, Config c) throws SQLException {
        String[] bounds = bounds(c);
        List<Side> sides = new ArrayList<>();
        sides.add(tierdb(spark, c));
        sides.add(jdbc(spark, c, bounds));
        if (c.lake != null) {
            sides.add(lakeAlone(spark, c));
        }
        // The first query is only the set-up of each side (TierDB: catalog reads, the pin, loading the
        // Iceberg metadata, planning; JDBC: the schema query): the fixed cost inside the others' times.
        List<Query> queries = List.of(
                new Query("open, no action (columns)", df -> (long) df.schema().size(), false),
                new Query("count(*)", df -> df.count(), true),
                new Query("per device_id count, avg(value)", SeamScanBench::perDevice, true));

        if (c.explain) {
            for (Side side : sides) {
                side.run(df -> explain(side.name(), df));
            }
        }
        CpuClock clock = c.pgPid > 0 ? new CpuClock(c.pgPid, c.clockTicks) : null;
        Map<Query, Map<String, Timing>> results = new LinkedHashMap<>();
        for (Query q : queries) {
            results.put(q, time(sides, q, c.repeat, clock));
        }
        List<String> problems = check(results, c);
        report(results, c, bounds, sides);
        for (String p : problems) {
            System.err.println("SeamScanBench: MISMATCH: " + p);
        }
        return problems.isEmpty() ? 0 : 1;
    }

    // ------------------------------------------------------------------ the sides

    /** The library under test: a pinned seam read per run, closed after the action. */
    static Side tierdb(SparkSession spark, Config c) {
        SeamOptions options = SeamOptions.builder()
                .jdbcUrl(c.jdbcUrl)
                .table(c.table)
                .numPartitions(c.parallelism)
                .build();
        return new Side() {
            public String name() {
                return "tierdb";
            }

            public Object run(Function<Dataset<Row>, Object> query) {
                try (SeamRead read = TierDBSpark.read(spark, options)) {
                    return query.apply(read.dataframe());
                }
            }
        };
    }

    /** The peer: Spark's JDBC source on the untiered table, split on the key as a user would. */
    static Side jdbc(SparkSession spark, Config c, String[] bounds) {
        return new Side() {
            public String name() {
                return "jdbc";
            }

            public Object run(Function<Dataset<Row>, Object> query) {
                Dataset<Row> df = spark.read().format("jdbc")
                        .option("url", c.jdbcUrl)
                        .option("dbtable", c.peer)
                        .option("partitionColumn", c.partitionColumn)
                        .option("lowerBound", bounds[0])
                        .option("upperBound", bounds[1])
                        .option("numPartitions", c.parallelism)
                        .option("fetchsize", c.fetchSize)
                        .load();
                return query.apply(df);
            }
        };
    }

    /** For the report only: the cold rows straight from the Iceberg table at the pinned snapshot. */
    static Side lakeAlone(SparkSession spark, Config c) {
        return new Side() {
            public String name() {
                return "iceberg alone";
            }

            public Object run(Function<Dataset<Row>, Object> query) {
                Dataset<Row> df = spark.read().format("iceberg")
                        .option("snapshot-id", c.snapshot)
                        .load(c.lake);
                return query.apply(df);
            }
        };
    }

    /** lowerBound and upperBound for the JDBC split: the key's range in the peer table, as Spark parses them. */
    static String[] bounds(Config c) throws SQLException {
        String sql = "SELECT min(" + c.partitionColumn + "), max(" + c.partitionColumn + ") FROM " + c.peer;
        try (Connection conn = DriverManager.getConnection(c.jdbcUrl, new Properties());
             Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery(sql)) {
            if (!rs.next() || rs.getObject(1) == null) {
                throw new SQLException(c.peer + " is empty: " + sql + " returned no range to split on");
            }
            int type = rs.getMetaData().getColumnType(1);
            return new String[] {bound(rs, 1, type), bound(rs, 2, type)};
        }
    }

    private static String bound(ResultSet rs, int column, int type) throws SQLException {
        switch (type) {
            case Types.TIMESTAMP_WITH_TIMEZONE:
            case Types.TIMESTAMP:
                // pgjdbc reports timestamptz as TIMESTAMP; the session time zone is UTC, as Spark's.
                OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
                return t.withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime().format(BOUND);
            case Types.DATE:
                return rs.getObject(column, LocalDate.class).toString();
            default:
                return Long.toString(rs.getLong(column));
        }
    }

    // ------------------------------------------------------------------ the queries

    /** device_id -> {count, avg(value)} over all rows, collected to the driver. */
    static Object perDevice(Dataset<Row> df) {
        Map<Integer, double[]> out = new HashMap<>();
        for (Row r : df.groupBy(col("device_id")).agg(count(lit(1)), avg(col("value"))).collectAsList()) {
            out.put(r.getInt(0), new double[] {r.getLong(1), r.getDouble(2)});
        }
        return out;
    }

    static Object explain(String side, Dataset<Row> df) {
        System.out.println("---- " + side + ": " + df.rdd().getNumPartitions() + " partitions of the scan; plan:");
        df.explain("formatted");
        Dataset<Row> agg = df.groupBy(col("device_id")).agg(count(lit(1)), avg(col("value")));
        System.out.println("---- " + side + ": the grouped aggregate's physical plan:");
        agg.explain();
        return null;
    }

    // ------------------------------------------------------------------ timing and checking

    /**
     * One warm-up run per side (its answer is kept), then repeat timed runs, the sides taking turns so
     * that a burst of load elsewhere falls on both. clock may be null: then the CPU columns are NaN.
     */
    static Map<String, Timing> time(List<Side> sides, Query q, int repeat, CpuClock clock) {
        Map<String, Timing> out = new LinkedHashMap<>();
        for (Side side : sides) {
            out.put(side.name(), new Timing(side.run(q.action), new double[repeat], new double[repeat],
                    new double[repeat]));
        }
        for (int i = 0; i < repeat; i++) {
            for (Side side : sides) {
                Timing t = out.get(side.name());
                double jvm0 = clock == null ? Double.NaN : clock.jvm();
                double pg0 = clock == null ? Double.NaN : clock.postgres();
                long start = System.nanoTime();
                side.run(q.action);
                t.seconds[i] = (System.nanoTime() - start) / 1e9;
                t.pgCpu[i] = clock == null ? Double.NaN : clock.postgres() - pg0;
                t.cpu[i] = clock == null ? Double.NaN : clock.jvm() - jvm0 + t.pgCpu[i];
            }
        }
        System.out.printf(Locale.ROOT, "SeamScanBench: %s: tierdb %.3f s, jdbc %.3f s (best)%n", q.name,
                out.get("tierdb").best(), out.get("jdbc").best());
        return out;
    }

    static List<String> check(Map<Query, Map<String, Timing>> results, Config c) {
        List<String> problems = new ArrayList<>();
        for (Map.Entry<Query, Map<String, Timing>> e : results.entrySet()) {
            Object ours = e.getValue().get("tierdb").answer();
            Object theirs = e.getValue().get("jdbc").answer();
            String why = differs(ours, theirs);
            if (why != null) {
                problems.add(e.getKey().name + ": TierDBSpark and Spark JDBC differ: " + why);
            }
        }
        long count = (Long) answerOf(results, "count(*)", "tierdb");
        if (c.expectRows >= 0 && count != c.expectRows) {
            problems.add("count(*): TierDBSpark counts " + count + " rows, the tables hold " + c.expectRows);
        }
        return problems;
    }

    static Object answerOf(Map<Query, Map<String, Timing>> results, String query, String side) {
        for (Map.Entry<Query, Map<String, Timing>> e : results.entrySet()) {
            if (e.getKey().name.equals(query)) {
                return e.getValue().get(side).answer();
            }
        }
        throw new IllegalStateException("no query " + query);
    }

    /** null when a and b are the same answer, else what differs. */
    @SuppressWarnings("unchecked")
    static String differs(Object a, Object b) {
        if (a instanceof Long) {
            return a.equals(b) ? null : a + " against " + b;
        }
        Map<Integer, double[]> x = (Map<Integer, double[]>) a;
        Map<Integer, double[]> y = (Map<Integer, double[]>) b;
        if (!x.keySet().equals(y.keySet())) {
            return x.size() + " groups against " + y.size();
        }
        for (Map.Entry<Integer, double[]> e : x.entrySet()) {
            double[] u = e.getValue();
            double[] v = y.get(e.getKey());
            if (u[0] != v[0] || Math.abs(u[1] - v[1]) > AVG_TOLERANCE * Math.max(1.0, Math.abs(v[1]))) {
                return "device_id " + e.getKey() + ": count " + (long) u[0] + ", avg " + u[1] + " against count "
                        + (long) v[0] + ", avg " + v[1];
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ the report

    static void report(Map<Query, Map<String, Timing>> results, Config c, String[] bounds, List<Side> sides) {
        long rows = (Long) answerOf(results, "count(*)", "tierdb");
        boolean lake = sides.size() > 2;
        System.out.println();
        System.out.printf(Locale.ROOT, "Spark benchmark: %,d rows; local[%d], numPartitions %d; best and median of"
                + " %d runs after a warm-up%n", rows, c.parallelism, c.parallelism, c.repeat);
        System.out.printf(Locale.ROOT, "  tierdb: TierDBSpark.read(...).dataframe() of %s, opened and closed each"
                + " run%n", c.table);
        System.out.printf(Locale.ROOT, "  jdbc:   spark.read().format(\"jdbc\") of %s, partitionColumn %s from %s"
                + " to %s, fetchsize %d%n", c.peer, c.partitionColumn, bounds[0], bounds[1], c.fetchSize);
        if (lake) {
            Long lakeRows = (Long) answerOf(results, "count(*)", "iceberg alone");
            System.out.printf(Locale.ROOT, "  iceberg alone (for reference, the cold rows only: %,d): %s at snapshot"
                    + " %d%n", lakeRows, c.lake, c.snapshot);
        }
        System.out.println();
        System.out.println("  wall seconds:");
        StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "  %-32s%6s%12s%9s%12s%9s%13s",
                "query", "rows", "tierdb best", "median", "jdbc best", "median", "jdbc/tierdb"));
        if (lake) {
            head.append(String.format(Locale.ROOT, "%15s", "iceberg alone"));
        }
        System.out.println(head);
        for (Map.Entry<Query, Map<String, Timing>> e : results.entrySet()) {
            Timing t = e.getValue().get("tierdb");
            Timing j = e.getValue().get("jdbc");
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT,
                    "  %-32s%6s%12.3f%9.3f%12.3f%9.3f%12.2fx", e.getKey().name, rowsShown(e.getKey(), t), t.best(),
                    t.median(), j.best(), j.median(), j.best() / t.best()));
            if (lake) {
                line.append(String.format(Locale.ROOT, "%15.3f", e.getValue().get("iceberg alone").best()));
            }
            System.out.println(line);
        }
        if (c.pgPid > 0) {
            reportCpu(results, lake);
        }
        System.out.println("  (jdbc/tierdb: the peer's best over ours; above 1.00x TierDBSpark is faster)");
        System.out.println(verdict(results, c.pgPid > 0));
        System.out.println(json(results, c, rows));
    }

    /** The target, on the queries that read rows: the peer takes at least twice as long. */
    static String verdict(Map<Query, Map<String, Timing>> results, boolean cpu) {
        double wall = Double.POSITIVE_INFINITY;
        double cpuRatio = Double.POSITIVE_INFINITY;
        for (Map.Entry<Query, Map<String, Timing>> e : results.entrySet()) {
            if (e.getKey().rows) {
                Timing t = e.getValue().get("tierdb");
                Timing j = e.getValue().get("jdbc");
                wall = Math.min(wall, j.best() / t.best());
                cpuRatio = Math.min(cpuRatio, j.bestCpu()[0] / t.bestCpu()[0]);
            }
        }
        String figures = String.format(Locale.ROOT, "%.2fx wall", wall)
                + (cpu ? String.format(Locale.ROOT, ", %.2fx CPU", cpuRatio) : "");
        boolean met = wall >= 2.0 && (!cpu || cpuRatio >= 2.0);
        return "  target: JDBC at least 2x TierDBSpark's time on count(*) and the aggregate: lowest " + figures + ": "
                + (met ? "met" : "NOT met");
    }

    /** The CPU table: the least CPU of any run, this JVM's plus the cluster's, the cluster's part in brackets. */
    static void reportCpu(Map<Query, Map<String, Timing>> results, boolean lake) {
        System.out.println("  CPU seconds (this JVM + the Postgres cluster; the cluster's part in brackets), best:");
        StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "  %-38s%11s%10s%11s%10s%11s", "query",
                "tierdb", "", "jdbc", "", "jdbc/tierdb"));
        if (lake) {
            head.append(String.format(Locale.ROOT, "%15s", "iceberg alone"));
        }
        System.out.println(head);
        for (Map.Entry<Query, Map<String, Timing>> e : results.entrySet()) {
            double[] t = e.getValue().get("tierdb").bestCpu();
            double[] j = e.getValue().get("jdbc").bestCpu();
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-38s%11.3f %-9s%11.3f %-9s%10.2fx",
                    e.getKey().name, t[0], "(" + String.format(Locale.ROOT, "%.2f", t[1]) + ")", j[0],
                    "(" + String.format(Locale.ROOT, "%.2f", j[1]) + ")", j[0] / t[0]));
            if (lake) {
                line.append(String.format(Locale.ROOT, "%15.3f", e.getValue().get("iceberg alone").bestCpu()[0]));
            }
            System.out.println(line);
        }
    }

    private static String jsonArray(double[] v) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < v.length; i++) {
            s.append(i == 0 ? "" : ", ").append(Double.isNaN(v[i]) ? "null" : String.format(Locale.ROOT, "%.4f", v[i]));
        }
        return s.append(']').toString();
    }

    private static String rowsShown(Query q, Timing t) {
        if (!q.rows) {
            return "-";  // no rows come back: the answer is the number of columns
        }
        return Integer.toString(t.answer() instanceof Map<?, ?> m ? m.size() : 1);
    }

    static String json(Map<Query, Map<String, Timing>> results, Config c, long rows) {
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "{\"benchmark\": \"spark_seam\", \"rows\": %d, \"parallelism\": %d,"
                + " \"repeat\": %d, \"queries\": [", rows, c.parallelism, c.repeat));
        String sep = "";
        for (Map.Entry<Query, Map<String, Timing>> e : results.entrySet()) {
            s.append(sep).append("{\"query\": \"").append(e.getKey().name).append("\"");
            for (String what : List.of("seconds", "cpu_seconds", "postgres_cpu_seconds")) {
                s.append(", \"").append(what).append("\": {");
                String inner = "";
                for (Map.Entry<String, Timing> side : e.getValue().entrySet()) {
                    Timing t = side.getValue();
                    double[] v = what.equals("seconds") ? t.seconds() : what.equals("cpu_seconds") ? t.cpu() : t.pgCpu();
                    s.append(inner).append('"').append(side.getKey()).append("\": ").append(jsonArray(v));
                    inner = ", ";
                }
                s.append('}');
            }
            s.append('}');
            sep = ", ";
        }
        return s.append("]}").toString();
    }
}
