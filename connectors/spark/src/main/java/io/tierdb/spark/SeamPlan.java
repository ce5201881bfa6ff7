/*
 * SeamPlan: the dataframe of a pinned seam read (SPEC §5 steps 2-5), built
 * from plain Spark sources so that Spark's optimizer pushes the caller's
 * filters and column pruning into each of them:
 *
 *   hot    Spark's JDBC source on the heap, tier_key >= T, split into
 *          parallel partitions on the tier key;
 *   cold   the Iceberg table at the pinned snapshot S (never the current
 *          one), tier_key < T, its fields matched to the heap's columns
 *          by field id after ALTER TABLE and cast to their types
 *          (LakeColumns);
 *   delta  tierdb.delta rows of the table with tier_key < T, typed by
 *          Postgres as rows of the table, read once when the read opens
 *          and kept in memory: every one removes the lake row of its pk
 *          (a broadcast anti-join), op = 0 rows add their image.
 *
 * A mirrored table's hybrid read (TierDBSpark.read) has the same hot and
 * cold branches at the capture's split, and no delta.
 *
 * The delta rule is the extension's (extension/src/cold_scan.c, load_delta):
 * delta rows at or above the pinned T are ignored, and a tombstone's key
 * comes from the canonical pk text (SPEC §4), split and typed in Postgres.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.broadcast;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;

import java.math.BigInteger;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

final class SeamPlan {
    /**
     * Every library connection reads the plain heap (the extension's
     * transparent reads would serve the union again) and prints dates the
     * way the canonical pk text spells them.
     */
    static final String SESSION_SETUP = "SET tierdb.transparent_reads = off; SET DateStyle = ISO";

    /** Marks the delta rows that add their row image (op = 0 with a payload). */
    private static final String ADDS = "__tierdb_delta_adds";
    private static final String KEY_PREFIX = "__tierdb_delta_key_";

    private final SparkSession spark;
    private final SeamOptions options;
    private final Registration reg;
    private final Catalog.Pin pin;

    SeamPlan(SparkSession spark, SeamOptions options, Registration reg, Catalog.Pin pin) {
        this.spark = spark;
        this.options = options;
        this.reg = reg;
        this.pin = pin;
    }

    Dataset<Row> build(Connection conn) throws SQLException {
        Dataset<Row> hot = hotBranch(conn);
        if (pin.cutline == null) {
            return hot;  // no cut-line yet, or a mirrored table read from its heap: the heap holds every row
        }
        if (reg.mirroredWholeHeap()) {
            // a hybrid read: the lake is the whole table below the split, with no delta
            return hot.unionByName(coldBranch(conn, hot.schema()));
        }
        Dataset<Row> delta = capture(deltaBranch());
        Dataset<Row> cold = coldBranch(conn, hot.schema());
        Column matches = null;
        Dataset<Row> keys = delta;
        for (String pk : reg.pkCols) {
            keys = keys.withColumnRenamed(pk, KEY_PREFIX + pk);
        }
        keys = keys.select(reg.pkCols.stream().map(c -> col(KEY_PREFIX + c)).toArray(Column[]::new));
        for (String pk : reg.pkCols) {
            Column eq = cold.col(pk).equalTo(keys.col(KEY_PREFIX + pk));
            matches = matches == null ? eq : matches.and(eq);
        }
        // the delta is sparse (corrections, not volume): broadcast its keys
        Dataset<Row> kept = cold.join(broadcast(keys), matches, "left_anti");
        Dataset<Row> added = delta.filter(col(ADDS)).drop(ADDS);
        return hot.unionByName(kept).unionByName(added);
    }

    /**
     * The delta as it is when the read opens, held in memory: every action
     * then merges the same corrections (the daemon folds none while the pin
     * lives, so none is lost), and with no corrections, the usual case, Spark
     * drops the anti-join and the lake scan decodes only the columns the
     * query needs, where a JDBC read at every action made it decode the
     * primary key of every cold row. The delta holds corrections, not volume.
     */
    private Dataset<Row> capture(Dataset<Row> delta) {
        return spark.createDataFrame(delta.collectAsList(), delta.schema());
    }

    /** Spark's JDBC source options shared by the heap and delta branches. */
    private Properties jdbcProperties() {
        Properties p = sparkReadProperties(options);
        p.putIfAbsent("fetchsize", "10000");
        return p;
    }

    /**
     * Spark JDBC source options for every read the library makes: the
     * connection's properties, the driver named (see PgDriver) and
     * SESSION_SETUP on each connection.
     */
    static Properties sparkReadProperties(SeamOptions options) {
        Properties p = PgDriver.forSparkRead(options.connectionProperties());
        p.setProperty("sessionInitStatement", SESSION_SETUP);
        return p;
    }

    private String quotedTierKey() {
        return quoteIdent(reg.tierKeyCol);
    }

    /**
     * The heap at or above T, one JDBC partition per slice of the tier-key
     * range the heap holds now.  The last slice is open above, so rows
     * inserted after the split are still read.
     */
    private Dataset<Row> hotBranch(Connection conn) throws SQLException {
        String tk = quotedTierKey();
        String lower = pin.cutline == null ? null : Catalog.tierKeyLiterals(conn, reg, List.of(pin.cutline)).get(0);
        String above = lower == null ? "TRUE" : tk + " >= " + lower;
        long[] range = heapRange(conn, above);
        int parts = options.numPartitions().orElse(spark.sparkContext().defaultParallelism());
        List<String> predicates = new ArrayList<>();
        if (range == null || parts == 1 || range[0] == range[1]) {
            predicates.add(above);
        } else {
            List<Long> bounds = splitPoints(range[0], range[1], parts);
            List<String> literals = Catalog.tierKeyLiterals(conn, reg, bounds);
            String from = above;
            for (String literal : literals) {
                predicates.add(from + " AND " + tk + " < " + literal);
                from = tk + " >= " + literal;
            }
            predicates.add(from);
        }
        return spark.read().jdbc(options.jdbcUrl(), reg.qualifiedName, predicates.toArray(new String[0]),
                jdbcProperties());
    }

    /** Canonical min and max tier key of the heap rows matching `where`, null when there are none. */
    private long[] heapRange(Connection conn, String where) throws SQLException {
        String tk = quotedTierKey();
        String sql = String.format("SELECT tierdb.canonical_tier_key(min(%s)), tierdb.canonical_tier_key(max(%s))"
                + " FROM %s WHERE %s", tk, tk, reg.qualifiedName, where);
        try (PreparedStatement ps = conn.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            long lo = rs.getLong(1);
            if (rs.wasNull()) {
                return null;
            }
            return new long[] {lo, rs.getLong(2)};
        }
    }

    /** parts - 1 interior split points of [lo, hi], evenly spaced and strictly increasing. */
    static List<Long> splitPoints(long lo, long hi, int parts) {
        BigInteger low = BigInteger.valueOf(lo);
        BigInteger width = BigInteger.valueOf(hi).subtract(low).add(BigInteger.ONE);
        List<Long> points = new ArrayList<>();
        for (int i = 1; i < parts; i++) {
            long p = low.add(width.multiply(BigInteger.valueOf(i)).divide(BigInteger.valueOf(parts))).longValue();
            if (p > lo && (points.isEmpty() || p > points.get(points.size() - 1))) {
                points.add(p);
            }
        }
        return points;
    }

    /** The delta rows below T as rows of the table plus the ADDS flag (see the file comment). */
    private Dataset<Row> deltaBranch() {
        String sql = String.format(
                "(SELECT r.*, d.op = 0 AND d.payload IS NOT NULL AS %s FROM tierdb.delta d"
                        + " CROSS JOIN LATERAL jsonb_populate_record(NULL::%s,"
                        + " CASE WHEN d.op = 0 AND d.payload IS NOT NULL THEN d.payload ELSE %s END) r"
                        + " WHERE d.table_id = %d AND d.tier_key < %d) AS tierdb_delta",
                ADDS, reg.qualifiedName, keyImageSql(), reg.tableId, pin.cutline);
        return spark.read().jdbc(options.jdbcUrl(), sql, jdbcProperties());
    }

    /**
     * SQL giving the pk columns of delta row d as a JSON object of texts,
     * parsed from d.pk: one column's text is the value; composite keys are
     * parts joined by chr(31), '\' and chr(31) escaped with '\' (SPEC §4).
     */
    private String keyImageSql() {
        if (reg.pkCols.size() == 1) {
            return String.format("jsonb_build_object(%s, d.pk)", quoteLiteral(reg.pkCols.get(0)));
        }
        List<String> names = new ArrayList<>();
        for (String c : reg.pkCols) {
            names.add(quoteLiteral(c));
        }
        // each match is one part up to an unescaped chr(31) or the end; the
        // first n matches are the n parts (a trailing empty match is not used)
        return "(SELECT jsonb_object_agg(k.col, regexp_replace(m.part[1], '\\\\(.)', '\\1', 'g'))"
                + " FROM unnest(ARRAY[" + String.join(", ", names) + "]::text[]) WITH ORDINALITY AS k(col, n)"
                + " JOIN regexp_matches(d.pk, '((?:[^\\\\\\x1f]|\\\\.)*)(?:\\x1f|$)', 'g') WITH ORDINALITY AS m(part, n)"
                + " USING (n))";
    }

    /** The lake at S below T, in the heap's column order and types, its fields matched by id (LakeColumns). */
    private Dataset<Row> coldBranch(Connection conn, StructType heapSchema) throws SQLException {
        if (pin.snapshotId == null) {
            // nothing has reached the lake yet: only the delta is cold
            return spark.createDataFrame(new ArrayList<Row>(), heapSchema);
        }
        DataFrameReader reader = spark.read().option("snapshot-id", String.valueOf(pin.snapshotId));
        Dataset<Row> lake;
        if (options.lakeTable() != null) {
            // through the catalog that resolves the identifier; the read option still pins S
            lake = reader.table(options.lakeTable());
        } else {
            String location = lakeLocation(pin.metadataLocation);
            LakeSession.requireIcebergCatalog(spark, location);
            lake = reader.format("iceberg").load(location);
        }
        LakeColumns columns = LakeColumns.resolve(spark, options, conn, reg, lake, pin.snapshotId, heapSchema);
        Column tierKey = col(LakeColumns.quoteName(columns.tierKeyField(reg)));
        DataType keyType = lake.select(tierKey).schema().fields()[0].dataType();
        lake = columns.scan(lake, heapSchema).filter(tierKey.lt(tierKeyLiteral(keyType, pin.cutline)));
        return columns.project(lake, heapSchema);
    }

    /** The table location: the parent of the metadata directory of the metadata file. */
    static String lakeLocation(String metadataLocation) {
        if (metadataLocation == null) {
            throw new IllegalStateException("the cut-line has a lake snapshot but no metadata_location in lake_props");
        }
        int file = metadataLocation.lastIndexOf('/');
        int dir = file > 0 ? metadataLocation.lastIndexOf('/', file - 1) : -1;
        if (dir <= 0) {
            throw new IllegalStateException("metadata_location \"" + metadataLocation
                    + "\" is not <table location>/metadata/<file>: pass lakeTable(...) to name the lake table");
        }
        return metadataLocation.substring(0, dir);
    }

    /** T as a Spark literal of the lake column's type, so Iceberg can prune with it. */
    static Column tierKeyLiteral(DataType type, long canonical) {
        if (type.equals(DataTypes.TimestampType)) {
            return lit(Instant.ofEpochSecond(Math.floorDiv(canonical, 1_000_000L),
                    Math.floorMod(canonical, 1_000_000L) * 1000L));
        }
        if (type.equals(DataTypes.TimestampNTZType)) {
            return lit(LocalDateTime.ofEpochSecond(Math.floorDiv(canonical, 1_000_000L),
                    (int) (Math.floorMod(canonical, 1_000_000L) * 1000L), ZoneOffset.UTC));
        }
        if (type.equals(DataTypes.DateType)) {
            return lit(LocalDate.ofEpochDay(canonical));
        }
        if (type.equals(DataTypes.IntegerType) && canonical == (int) canonical) {
            return lit((int) canonical);
        }
        return lit(canonical);
    }

    static String quoteIdent(String name) {
        return "\"" + name.replace("\"", "\"\"") + "\"";
    }

    static String quoteLiteral(String text) {
        return "'" + text.replace("'", "''") + "'";
    }
}
