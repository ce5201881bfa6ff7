/*
 * DirectWrite: TierDBSpark.write and delete of a direct table as the seed's
 * "Direct" rows describe them: the executors write the lake files of the
 * batch's rows below the cut-line in parallel (LakeFiles), and the driver
 * commits them to the lake as one snapshot, inside one Postgres
 * transaction that holds the table's lake lock (docs/direct.md, "From
 * Spark"):
 *
 *   1. tierdb.direct_lake_begin takes the lock, held until the transaction
 *      ends, so no other commit (a backend's direct commit, the daemon's
 *      tiering) lands meanwhile and T, S and R stay put; it also rolls back
 *      a snapshot a failed writer left past S;
 *   2. the cold rows are checked as Postgres would check them (NOT NULL,
 *      varchar lengths, text without NUL, uuid syntax, R), all before
 *      anything is written; the hot rows are written to the heap through
 *      the routed path (RoutedWrite), in this transaction;
 *   3. the executors write the files; the driver commits one Iceberg row
 *      delta stamped with an op id (tierdb.op-id);
 *   4. tierdb.direct_lake_publish checks that snapshot and journals and
 *      publishes it (op_log, S), in this transaction, which then commits.
 *
 * If anything fails before step 3's commit, the files are deleted and
 * nothing was written; if the driver dies between steps 3 and 4's commit,
 * the lake holds a snapshot that no journal knows, which every reader at S
 * ignores and the next writer of the table rolls back.
 *
 * Only rows Postgres would store unchanged can bypass it: the table must
 * have nothing but column types and NOT NULL to judge a row (no trigger,
 * CHECK, foreign key, generated column or row-level security: the
 * extension's tierdb.direct_files_refusal), its merge key must hold the
 * tier key, its lake fields must match its columns, and every batch column
 * must convert to its column's type without loss.  Any other write of a
 * direct table takes the routed path, which Postgres checks and the
 * server commits to the lake when the transaction commits; the log says
 * why.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.coalesce;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.concat_ws;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.first;
import static org.apache.spark.sql.functions.instr;
import static org.apache.spark.sql.functions.length;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.lower;
import static org.apache.spark.sql.functions.regexp_replace;
import static org.apache.spark.sql.functions.rtrim;
import static org.apache.spark.sql.functions.substring;
import static org.apache.spark.sql.functions.when;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TimeZone;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SerializableTable;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.spark.SparkSchemaUtil;
import org.apache.iceberg.types.Types;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

final class DirectWrite {
    private static final Logger LOG = LoggerFactory.getLogger(DirectWrite.class);

    /**
     * For tests of the crash windows: a system property naming the point at
     * which the driver fails, "direct-before-lake-commit" (files written) or
     * "direct-after-lake-commit" (lake committed, nothing published).
     */
    static final String TEST_FAULT = "tierdb.spark.testFault";

    private static final Pattern NUMERIC = Pattern.compile("numeric\\((\\d+),(\\d+)\\)");
    private static final Pattern VARCHAR = Pattern.compile("character varying\\((\\d+)\\)");
    /** Postgres' uuid input: 32 hex digits, a hyphen allowed after any group of four, optionally in braces. */
    private static final String UUID_INPUT = "^(\\{[0-9a-f]{4}(-?[0-9a-f]{4}){7}\\}|[0-9a-f]{4}(-?[0-9a-f]{4}){7})$";

    private final SparkSession spark;
    private final SeamOptions options;
    private final Registration reg;
    private final Map<String, String> pgTypes;
    private final boolean deletes;
    private final Table table;
    /** Heap column -> its field in the lake's current schema. */
    private final Map<String, Types.NestedField> fields;

    private DirectWrite(SparkSession spark, SeamOptions options, Registration reg, Map<String, String> pgTypes,
                        boolean deletes, Table table, Map<String, Types.NestedField> fields) {
        this.spark = spark;
        this.options = options;
        this.reg = reg;
        this.pgTypes = pgTypes;
        this.deletes = deletes;
        this.table = table;
        this.fields = fields;
    }

    /**
     * The direct write of `batch`, or null when its rows must go through
     * Postgres (the reason is logged).  `pgTypes` are the table's writable
     * columns and their types (format_type).
     */
    static DirectWrite plan(Connection conn, SeamOptions options, Registration reg, Dataset<Row> batch,
                            Map<String, String> pgTypes, boolean deletes) throws SQLException {
        String refusal = tableRefusal(conn, reg);
        Table table = null;
        Map<String, Types.NestedField> fields = null;
        if (refusal == null) {
            refusal = batchRefusal(batch, pgTypes);
        }
        if (refusal == null) {
            table = loadLake(batch.sparkSession(), options, conn, reg);
            fields = new HashMap<>();
            refusal = lakeRefusal(conn, reg, table, pgTypes, fields);
        }
        if (refusal != null) {
            LOG.info("tierdb-spark writes the rows of direct table {} through Postgres, not as lake files: {}",
                    reg.qualifiedName, refusal);
            return null;
        }
        return new DirectWrite(batch.sparkSession(), options, reg, pgTypes, deletes, table, fields);
    }

    private static String tableRefusal(Connection conn, Registration reg) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT tierdb.direct_files_refusal(?::oid::regclass)")) {
            ps.setLong(1, reg.tableId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /** A batch column that Postgres would convert to its column's type with a rule of its own. */
    private static String batchRefusal(Dataset<Row> batch, Map<String, String> pgTypes) {
        for (StructField f : batch.schema().fields()) {
            String pg = pgTypes.get(f.name());
            if (!lossless(f.dataType(), pg)) {
                return String.format("its column %s is %s in the batch, which only Postgres converts to %s exactly",
                        f.name(), f.dataType().simpleString(), pg);
            }
        }
        return null;
    }

    /** Whether every value of Spark type `from` is stored unchanged by a column of type `pg`. */
    static boolean lossless(DataType from, String pg) {
        Matcher numeric = NUMERIC.matcher(pg);
        if (numeric.matches()) {
            int integerDigits = Integer.parseInt(numeric.group(1)) - Integer.parseInt(numeric.group(2));
            if (from instanceof DecimalType) {
                DecimalType d = (DecimalType) from;
                return d.scale() <= Integer.parseInt(numeric.group(2)) && d.precision() - d.scale() <= integerDigits;
            }
            return integerDigits >= integralDigits(from);
        }
        if (pg.equals("text") || pg.startsWith("character varying") || pg.equals("uuid")) {
            return from.equals(DataTypes.StringType);
        }
        if (pg.equals("timestamp without time zone")) {
            // a zoned value becomes a wall clock in the session's zone, as the routed path's in the JVM's
            return from.equals(DataTypes.TimestampNTZType) || from.equals(DataTypes.TimestampType)
                    && SparkSession.active().conf().get("spark.sql.session.timeZone")
                            .equals(TimeZone.getDefault().getID());
        }
        switch (pg) {
            case "bigint":
                return integralDigits(from) <= 19;
            case "integer":
                return integralDigits(from) <= 10 && !from.equals(DataTypes.LongType);
            case "smallint":
                return from.equals(DataTypes.ShortType) || from.equals(DataTypes.ByteType);
            case "real":
                return from.equals(DataTypes.FloatType);
            case "double precision":
                return from.equals(DataTypes.DoubleType) || from.equals(DataTypes.FloatType);
            case "boolean":
                return from.equals(DataTypes.BooleanType);
            case "date":
                return from.equals(DataTypes.DateType);
            case "timestamp with time zone":
                return from.equals(DataTypes.TimestampType);
            case "bytea":
                return from.equals(DataTypes.BinaryType);
            default:
                return false;
        }
    }

    /** The decimal digits an integral Spark type needs; MAX_VALUE for any other type. */
    private static int integralDigits(DataType t) {
        if (t.equals(DataTypes.ByteType)) {
            return 3;
        } else if (t.equals(DataTypes.ShortType)) {
            return 5;
        } else if (t.equals(DataTypes.IntegerType)) {
            return 10;
        } else if (t.equals(DataTypes.LongType)) {
            return 19;
        }
        return Integer.MAX_VALUE;
    }

    /** The Spark type Iceberg reads the lake field of a column of type `pg` as (cli/pgmap.c's mapping). */
    private static DataType lakeType(String pg) {
        Matcher numeric = NUMERIC.matcher(pg);
        if (numeric.matches()) {
            return DataTypes.createDecimalType(Integer.parseInt(numeric.group(1)), Integer.parseInt(numeric.group(2)));
        }
        if (pg.equals("text") || pg.startsWith("character varying") || pg.equals("uuid")) {
            return DataTypes.StringType;
        }
        switch (pg) {
            case "bigint":
                return DataTypes.LongType;
            case "integer":
            case "smallint":
                return DataTypes.IntegerType;
            case "real":
                return DataTypes.FloatType;
            case "double precision":
                return DataTypes.DoubleType;
            case "boolean":
                return DataTypes.BooleanType;
            case "date":
                return DataTypes.DateType;
            case "timestamp with time zone":
                return DataTypes.TimestampType;
            case "timestamp without time zone":
                return DataTypes.TimestampNTZType;
            case "bytea":
                return DataTypes.BinaryType;
            default:
                throw new IllegalArgumentException("no lake type for " + pg);
        }
    }

    /** The Iceberg table of the lake, loaded as the seam read loads it (by path, or through lakeTable). */
    private static Table loadLake(SparkSession spark, SeamOptions options, Connection conn, Registration reg)
            throws SQLException {
        if (options.lakeTable() != null) {
            return LakeColumns.icebergTable(spark.read().table(options.lakeTable()));
        }
        String location;
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT lake_table_ref FROM tierdb.tables WHERE table_id = ?")) {
            ps.setLong(1, reg.tableId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                location = rs.getString(1);
            }
        }
        LakeSession.requireIcebergCatalog(spark, location);
        return LakeColumns.icebergTable(spark.read().format("iceberg").load(location));
    }

    /**
     * Whether the lake's current schema holds a field of each column's type
     * (the daemon may not have carried an ALTER TABLE into it yet) and its
     * spec partitions by the merge key; fills `fields`.
     */
    private static String lakeRefusal(Connection conn, Registration reg, Table table, Map<String, String> pgTypes,
                                      Map<String, Types.NestedField> fields) throws SQLException {
        Schema schema = table.schema();
        Map<String, String> names = LakeColumns.fieldNamesAt(schema, schema, LakeColumns.listedFields(conn, reg),
                new ArrayList<>(pgTypes.keySet()));
        for (Map.Entry<String, String> c : pgTypes.entrySet()) {
            Types.NestedField f = names.containsKey(c.getKey()) ? schema.findField(names.get(c.getKey())) : null;
            if (f == null || !SparkSchemaUtil.convert(f.type()).equals(lakeType(c.getValue()))) {
                return String.format("the lake's schema has no field of type %s for column %s yet (the daemon "
                        + "carries ALTER TABLE into it at its next step)", c.getValue(), c.getKey());
            }
            fields.put(c.getKey(), f);
        }
        Set<Integer> mapped = fields.values().stream().map(Types.NestedField::fieldId).collect(Collectors.toSet());
        for (Types.NestedField f : schema.columns()) {
            if (f.isRequired() && !mapped.contains(f.fieldId())) {
                return String.format("the lake's field %s is required but no column fills it", f.name());
            }
        }
        Set<Integer> keys = reg.pkCols.stream().map(c -> fields.get(c).fieldId()).collect(Collectors.toSet());
        for (PartitionField p : table.spec().fields()) {
            if (!keys.contains(p.sourceId())) {
                return String.format("the lake is partitioned by %s, not by the merge key", p.name());
            }
        }
        return null;
    }

    /** Runs steps 1-4 of the file comment in `conn`'s transaction, which the caller commits. */
    void apply(Connection conn, Dataset<Row> batch, RoutedWrite hotPath) throws SQLException {
        Lake lake = begin(conn);
        Column tierKey = col(reg.tierKeyCol).cast(lakeType(pgTypes.get(reg.tierKeyCol)));
        Column cold = lake.cutline == null ? lit(false)
                : tierKey.lt(SeamPlan.tierKeyLiteral(lakeType(pgTypes.get(reg.tierKeyCol)), lake.cutline));
        Dataset<Row> coldRows = batch.filter(cold);
        check(conn, coldRows, tierKey, lake);
        hotPath.routeRows(conn, batch.filter(coldNot(cold)).collectAsList(), batch.schema());
        List<LakeFiles.Written> written = writeFiles(coldRows, lake);
        boolean committed = false;
        try {
            fault("direct-before-lake-commit");
            long rows = written.stream().mapToLong(w -> w.rows).sum();
            if (rows > 0) {
                long snapshot = commit(written, lake);
                committed = true;
                fault("direct-after-lake-commit");
                publish(conn, lake, snapshot, rows);
            }
        } finally {
            if (!committed) {
                deleteFiles(written);
            }
        }
    }

    private static Column coldNot(Column cold) {
        return coalesce(cold, lit(false)).equalTo(lit(false));
    }

    /** What direct_lake_begin returned. */
    private static final class Lake {
        Long snapshot;
        Long cutline;
        Long retentionLine;
        final String opId = UUID.randomUUID().toString();
    }

    private String[] privileges() {
        return deletes ? new String[] {"SELECT", "DELETE"} : new String[] {"SELECT", "INSERT", "UPDATE"};
    }

    private Lake begin(Connection conn) throws SQLException {
        Lake lake = new Lake();
        try (PreparedStatement ps = conn.prepareStatement("SELECT (j ->> 'S')::bigint, (j ->> 'T')::bigint,"
                + " (j ->> 'R')::bigint FROM tierdb.direct_lake_begin(?::oid::regclass, ?) j")) {
            ps.setLong(1, reg.tableId);
            ps.setArray(2, conn.createArrayOf("text", privileges()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                lake.snapshot = nullableLong(rs, 1);
                lake.cutline = nullableLong(rs, 2);
                lake.retentionLine = nullableLong(rs, 3);
            }
        }
        table.refresh();
        Snapshot current = table.currentSnapshot();
        Long id = current == null ? null : current.snapshotId();
        if (!java.util.Objects.equals(id, lake.snapshot)) {
            throw new IllegalStateException(String.format("the lake of direct table %s is at snapshot %s, not at its "
                    + "published snapshot %s, after the lake lock was taken: run tierdb verify --table %s",
                    reg.qualifiedName, id, lake.snapshot, reg.qualifiedName));
        }
        return lake;
    }

    private static Long nullableLong(ResultSet rs, int column) throws SQLException {
        long v = rs.getLong(column);
        return rs.wasNull() ? null : v;
    }

    /** One rule a cold row must pass: the rows breaking it, and the error that names it. */
    private static final class Rule {
        final Column broken;
        final String error;

        Rule(Column broken, String error) {
            this.broken = broken;
            this.error = error;
        }
    }

    /**
     * The checks Postgres would make of the cold rows (and the retention
     * line), in one Spark job, before anything is written.
     */
    private void check(Connection conn, Dataset<Row> coldRows, Column tierKey, Lake lake) throws SQLException {
        List<Rule> rules = new ArrayList<>();
        Set<String> present = Set.of(coldRows.schema().fieldNames());
        if (lake.retentionLine != null) {
            rules.add(new Rule(tierKey.lt(SeamPlan.tierKeyLiteral(lakeType(pgTypes.get(reg.tierKeyCol)),
                    lake.retentionLine)), String.format("below the retention line %s, where the lake expired rows "
                    + "on purpose; only rows at or above it can be written or deleted",
                    Catalog.tierKeyText(conn, reg, lake.retentionLine))));
        }
        if (!deletes) {
            for (String c : notNullColumns(conn)) {
                rules.add(new Rule(present.contains(c) ? col(c).isNull() : lit(true), String.format(
                        "null value in column \"%s\" violates its not-null constraint", c)));
            }
            for (Map.Entry<String, String> c : pgTypes.entrySet()) {
                if (!present.contains(c.getKey())) {
                    continue;
                }
                Column v = col(c.getKey());
                String pg = c.getValue();
                Matcher varchar = VARCHAR.matcher(pg);
                if (varchar.matches()) {
                    int n = Integer.parseInt(varchar.group(1));
                    // Postgres drops spaces past the limit, and refuses anything else there
                    rules.add(new Rule(length(v).gt(n).and(rtrim(substring(v, n + 1, Integer.MAX_VALUE)).notEqual("")),
                            String.format("value too long for column \"%s\" of type %s", c.getKey(), pg)));
                }
                if (pg.equals("text") || varchar.matches() || pg.equals("character varying")) {
                    rules.add(new Rule(instr(v, "\u0000").gt(0), String.format(
                            "a NUL character in column \"%s\", which Postgres text cannot hold", c.getKey())));
                }
                if (pg.equals("uuid")) {
                    rules.add(new Rule(lower(v).rlike(UUID_INPUT).equalTo(false), String.format(
                            "column \"%s\" is not a uuid Postgres accepts", c.getKey())));
                }
            }
        }
        if (rules.isEmpty()) {
            return;
        }
        Column keyText = concat_ws(", ", reg.pkCols.stream()
                .map(c -> concat_ws(" = ", lit(c), col(c).cast(DataTypes.StringType))).toArray(Column[]::new));
        List<Column> aggregates = new ArrayList<>();
        for (Rule r : rules) {
            aggregates.add(count(when(r.broken, lit(1))));
            aggregates.add(first(when(r.broken, keyText), true));
        }
        Row result = coldRows.agg(aggregates.get(0), aggregates.subList(1, aggregates.size()).toArray(new Column[0]))
                .first();
        for (int i = 0; i < rules.size(); i++) {
            long broken = result.getLong(2 * i);
            if (broken > 0) {
                throw new IllegalArgumentException(String.format("%d %s of the batch for table %s: %s (the first: "
                        + "%s). Nothing was written.", broken, broken == 1 ? "row" : "rows", reg.qualifiedName,
                        rules.get(i).error, result.getString(2 * i + 1)));
            }
        }
    }

    private List<String> notNullColumns(Connection conn) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid = ?::oid"
                + " AND attnum > 0 AND NOT attisdropped AND attnotnull AND attgenerated = '' ORDER BY attnum")) {
            ps.setLong(1, reg.tableId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    /** The cold rows in the lake's shape (see LakeFiles): every field of its schema, in order, of its Spark type. */
    private Dataset<Row> lakeRows(Dataset<Row> coldRows) {
        Set<String> present = Set.of(coldRows.schema().fieldNames());
        Map<Integer, String> columnOf = new LinkedHashMap<>();
        fields.forEach((column, f) -> columnOf.put(f.fieldId(), column));
        List<Column> out = new ArrayList<>();
        for (Types.NestedField f : table.schema().columns()) {
            DataType type = SparkSchemaUtil.convert(f.type());
            String column = columnOf.get(f.fieldId());
            Column v = column != null && present.contains(column) ? col(column) : lit(null);
            if (column != null && present.contains(column)) {
                Matcher varchar = VARCHAR.matcher(pgTypes.get(column));
                if (varchar.matches()) {
                    v = substring(v, 1, Integer.parseInt(varchar.group(1)));  // only spaces go (check)
                } else if (pgTypes.get(column).equals("uuid")) {
                    // Postgres' canonical form: lower case, hyphenated 8-4-4-4-12
                    v = regexp_replace(regexp_replace(lower(v), "[{}-]", ""),
                            "^(.{8})(.{4})(.{4})(.{4})(.{12})$", "$1-$2-$3-$4-$5");
                }
            }
            out.add(v.cast(type).as(f.name()));
        }
        return coldRows.select(out.toArray(new Column[0]));
    }

    /** Step 3's files, written by the executors. */
    private List<LakeFiles.Written> writeFiles(Dataset<Row> coldRows, Lake lake) {
        List<Integer> keyIds = reg.pkCols.stream().map(c -> fields.get(c).fieldId()).collect(Collectors.toList());
        JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
        org.apache.spark.broadcast.Broadcast<Table> shared = context.broadcast(SerializableTable.copyOf(table));
        try {
            return lakeRows(coldRows).javaRDD().mapPartitions(new LakeFiles(shared, keyIds, lake.opId, deletes))
                    .collect().stream().map(LakeFiles.Written::of).collect(Collectors.toList());
        } finally {
            shared.destroy();
        }
    }

    private long commit(List<LakeFiles.Written> written, Lake lake) {
        RowDelta delta = table.newRowDelta();
        for (LakeFiles.Written w : written) {
            w.data.forEach(delta::addRows);
            w.deletes.forEach(delta::addDeletes);
        }
        delta.set("tierdb.op-id", lake.opId);
        delta.commit();
        dropHintChecksum();
        Snapshot committed = table.currentSnapshot();
        if (!lake.opId.equals(committed.summary().get("tierdb.op-id"))) {
            throw new IllegalStateException(String.format("the lake of %s moved during the commit of operation %s: "
                    + "its current snapshot %d is not that commit", reg.qualifiedName, lake.opId,
                    committed.snapshotId()));
        }
        return committed.snapshotId();
    }

    /**
     * Hadoop's local file system writes a checksum file beside each file,
     * and the lake's other writers (the daemon, the server) replace the
     * version hint without one: left stale, it would fail every Hadoop
     * reader of the hint (they fall back to listing, noisily).
     */
    private void dropHintChecksum() {
        String location = table.location();
        if (location.startsWith("/") || location.startsWith("file:")) {
            try {
                table.io().deleteFile(location + "/metadata/.version-hint.text.crc");
            } catch (RuntimeException e) {
                LOG.warn("tierdb-spark could not delete the version hint's checksum in {}: {}", location,
                        e.getMessage());
            }
        }
    }

    private void publish(Connection conn, Lake lake, long snapshot, long rows) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT tierdb.direct_lake_publish(?::oid::regclass, ?, ?::uuid, ?, ?, ?)")) {
            ps.setLong(1, reg.tableId);
            ps.setArray(2, conn.createArrayOf("text", privileges()));
            ps.setString(3, lake.opId);
            if (lake.snapshot == null) {
                ps.setNull(4, java.sql.Types.BIGINT);
            } else {
                ps.setLong(4, lake.snapshot);
            }
            ps.setLong(5, snapshot);
            ps.setLong(6, rows);
            ps.executeQuery().close();
        }
    }

    private void deleteFiles(List<LakeFiles.Written> written) {
        for (LakeFiles.Written w : written) {
            List<String> paths = new ArrayList<>();
            w.data.forEach(f -> paths.add(f.path().toString()));
            w.deletes.forEach(f -> paths.add(f.path().toString()));
            for (String path : paths) {
                try {
                    table.io().deleteFile(path);
                } catch (RuntimeException e) {
                    LOG.warn("tierdb-spark could not delete {}, written for a direct write that did not commit: {}",
                            path, e.getMessage());
                }
            }
        }
    }

    private static void fault(String point) {
        if (point.equals(System.getProperty(TEST_FAULT))) {
            throw new IllegalStateException("tierdb-spark test fault at " + point);
        }
    }
}
