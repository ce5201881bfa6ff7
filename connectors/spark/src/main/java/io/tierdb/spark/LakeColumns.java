/*
 * LakeColumns: the columns of the cold branch after ALTER TABLE, read as
 * every reader of a registered table reads them (SPEC §6,
 * docs/schema-changes.md; the contract is extension/sql/0.1/61-columns.sql,
 * and the extension's lake_scan.c follows it too).  The lake's fields are
 * matched to the heap's columns by Iceberg field id, never by name:
 *
 *  - the field of column n: the one tierdb.columns names n, else the field
 *    of the lake's current schema called n whose id tierdb.columns does not
 *    list (a renamed or dropped column's old field); then that id in the
 *    schema of the pinned snapshot S, where it has the name the Spark scan
 *    of S knows it by, or is absent (the column has no field at S);
 *  - a column with no field reads its tierdb.column_defaults value, else
 *    NULL; a column with a field and a default reads the default in the
 *    rows of data files whose data sequence number is at most the default's
 *    lake_sequence_number (all rows while that is NULL), the field in the
 *    others: the rows written before the field existed (Iceberg's
 *    initial-default, which a format v2 table cannot hold);
 *  - a field narrower than its column (int, float, decimal(p,s)) is cast
 *    to the heap's type.
 *
 * Defaults are typed by Postgres and read through Spark's JDBC source, so a
 * default has exactly the value the heap's rows of it read.  Which file a
 * row came from is Iceberg's _file metadata column, joined (broadcast) with
 * the data sequence numbers of S's data files; the join is made only when a
 * column needs it, and the plain read stays a plain scan.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.broadcast;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.from_utc_timestamp;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.raise_error;
import static org.apache.spark.sql.functions.to_utc_timestamp;
import static org.apache.spark.sql.functions.when;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TimeZone;

import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SnapshotUtil;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.collection.JavaConverters;

final class LakeColumns {
    /** SQLSTATE of "permission denied". */
    private static final String INSUFFICIENT_PRIVILEGE = "42501";
    /** Iceberg's metadata column holding the data file of each row. */
    private static final String FILE_COLUMN = "_file";
    private static final String FILES_PATH = "__tierdb_file";
    private static final String FILES_SEQUENCE = "__tierdb_data_sequence_number";

    /** A column added with a default (tierdb.column_defaults). */
    static final class Default {
        /** The value as a Spark literal, typed as the heap's column. */
        final Column value;
        /** Rows of data files numbered at most this read the default; null: every row does. */
        final Long lakeSequenceNumber;

        Default(Column value, Long lakeSequenceNumber) {
            this.value = value;
            this.lakeSequenceNumber = lakeSequenceNumber;
        }
    }

    private final SparkSession spark;
    private final Table table;
    private final long snapshotId;
    /** Heap column name -> the name of its field in S's schema; absent: no field at S. */
    private final Map<String, String> fieldNames;
    private final Map<String, Default> defaults;
    /** Path -> data sequence number of S's data files, planned once when a column needs it. */
    private Map<String, Long> fileSequences;

    private LakeColumns(SparkSession spark, Table table, long snapshotId, Map<String, String> fieldNames,
                        Map<String, Default> defaults) {
        this.spark = spark;
        this.table = table;
        this.snapshotId = snapshotId;
        this.fieldNames = fieldNames;
        this.defaults = defaults;
    }

    /**
     * The mapping of the heap's columns onto `lake`, the Spark scan of the
     * lake at snapshot S, from the catalog as `conn` sees it.
     */
    static LakeColumns resolve(SparkSession spark, SeamOptions options, Connection conn, Registration reg,
                               Dataset<Row> lake, long snapshotId, StructType heapSchema) throws SQLException {
        Table table = icebergTable(lake);
        List<String> names = List.of(heapSchema.fieldNames());
        try {
            Map<String, String> fields = fieldNamesAt(table.schema(), SnapshotUtil.schemaFor(table, snapshotId),
                    listedFields(conn, reg), names);
            Map<String, Default> defaults = columnDefaults(spark, options, conn, reg, heapSchema);
            return new LakeColumns(spark, table, snapshotId, fields, defaults);
        } catch (SQLException e) {
            if (!INSUFFICIENT_PRIVILEGE.equals(e.getSQLState())) {
                throw e;
            }
            String role = conn.getMetaData().getUserName();
            throw new IllegalStateException(String.format("tierdb-spark cannot read the catalog tables that map the "
                    + "lake's fields of %s to its columns after ALTER TABLE (%s). Grant them to the role that reads: "
                    + "GRANT SELECT ON tierdb.columns, tierdb.column_defaults TO %s", reg.qualifiedName,
                    e.getMessage(), SeamPlan.quoteIdent(role)), e);
        }
    }

    /** The Iceberg table behind the Spark scan of the lake (the metadata that scan reads). */
    static Table icebergTable(Dataset<Row> lake) {
        for (LogicalPlan leaf : JavaConverters.seqAsJavaList(lake.queryExecution().analyzed().collectLeaves())) {
            if (leaf instanceof DataSourceV2Relation && ((DataSourceV2Relation) leaf).table() instanceof SparkTable) {
                return ((SparkTable) ((DataSourceV2Relation) leaf).table()).table();
            }
        }
        throw new IllegalStateException("tierdb-spark: the lake read is not a scan of an Iceberg table: "
                + lake.queryExecution().analyzed().treeString());
    }

    /**
     * Heap column -> the name of its lake field in `atSnapshot` (the rule in
     * the file comment); `listed` is tierdb.columns: field id -> the column
     * it is now, null for a dropped column's field.
     */
    static Map<String, String> fieldNamesAt(Schema current, Schema atSnapshot, Map<Integer, String> listed,
                                            List<String> columns) {
        Map<String, Integer> byName = new HashMap<>();
        for (Types.NestedField f : current.columns()) {
            if (!listed.containsKey(f.fieldId())) {
                byName.put(f.name(), f.fieldId());
            }
        }
        for (Map.Entry<Integer, String> e : listed.entrySet()) {
            if (e.getValue() != null) {
                byName.put(e.getValue(), e.getKey());
            }
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (String column : columns) {
            Integer id = byName.get(column);
            Types.NestedField field = id == null ? null : atSnapshot.findField(id);
            // only top-level fields are columns: a nested id is never a column's
            if (field != null && atSnapshot.columns().contains(field)) {
                out.put(column, field.name());
            }
        }
        return out;
    }

    /** tierdb.columns of the table: field id -> the column it is now (null: dropped). */
    static Map<Integer, String> listedFields(Connection conn, Registration reg) throws SQLException {
        Map<Integer, String> listed = new HashMap<>();
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT field_id, column_name FROM tierdb.columns WHERE table_id = ?")) {
            ps.setLong(1, reg.tableId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    listed.put(rs.getInt(1), rs.getString(2));
                }
            }
        }
        return listed;
    }

    /**
     * tierdb.column_defaults of the table's heap columns, each value cast
     * to its column's type by Postgres and read through Spark's JDBC
     * source, as the hot branch reads the column.
     */
    private static Map<String, Default> columnDefaults(SparkSession spark, SeamOptions options, Connection conn,
                                                       Registration reg, StructType heapSchema) throws SQLException {
        List<String> names = new ArrayList<>();
        List<String> casts = new ArrayList<>();
        List<Long> sequences = new ArrayList<>();
        String sql = "SELECT d.column_name, d.default_value, format_type(a.atttypid, a.atttypmod),"
                + " d.lake_sequence_number FROM tierdb.column_defaults d"
                + " JOIN pg_attribute a ON a.attrelid = d.table_id::oid AND a.attname = d.column_name"
                + " AND a.attnum > 0 AND NOT a.attisdropped WHERE d.table_id = ? ORDER BY a.attnum";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, reg.tableId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    names.add(rs.getString(1));
                    casts.add(String.format("CAST(%s AS %s) AS %s", SeamPlan.quoteLiteral(rs.getString(2)),
                            rs.getString(3), SeamPlan.quoteIdent(rs.getString(1))));
                    long n = rs.getLong(4);
                    sequences.add(rs.wasNull() ? null : n);
                }
            }
        }
        Map<String, Default> out = new HashMap<>();
        if (names.isEmpty()) {
            return out;
        }
        Properties p = SeamPlan.sparkReadProperties(options);
        Dataset<Row> typed = spark.read().jdbc(options.jdbcUrl(),
                "(SELECT " + String.join(", ", casts) + ") AS tierdb_column_defaults", p);
        Row row = typed.first();
        for (int i = 0; i < names.size(); i++) {
            StructField f = typed.schema().fields()[i];
            Column value = new Column(Literal.create(row.get(i), f.dataType()));
            DataType heapType = heapSchema.apply(names.get(i)).dataType();
            out.put(names.get(i), new Default(f.dataType().equals(heapType) ? value : value.cast(heapType),
                    sequences.get(i)));
        }
        return out;
    }

    /** The name the tier-key column has in the scan of S. */
    String tierKeyField(Registration reg) {
        String name = fieldNames.get(reg.tierKeyCol);
        if (name == null) {
            throw new IllegalStateException("the lake of " + reg.qualifiedName + " has no field for its tier key "
                    + reg.tierKeyCol + " at snapshot " + snapshotId);
        }
        return name;
    }

    /**
     * The scan of S as the cold branch starts from it: with Iceberg's _file
     * column too when some column's value depends on the row's data file.
     */
    Dataset<Row> scan(Dataset<Row> lake, StructType heapSchema) {
        return byFile(heapSchema) ? lake.select(col("*"), col(FILE_COLUMN)) : lake;
    }

    /** `lake` (scan's result, filtered) as the heap's columns, in the heap's order and types. */
    Dataset<Row> project(Dataset<Row> lake, StructType heapSchema) {
        Dataset<Row> rows = byFile(heapSchema) ? withFileSequence(lake) : lake;
        List<Column> projected = new ArrayList<>();
        for (StructField f : heapSchema.fields()) {
            projected.add(column(rows, f).as(f.name()));
        }
        return rows.select(projected.toArray(new Column[0]));
    }

    /** One heap column over the lake's rows (the rules of the file comment). */
    private Column column(Dataset<Row> rows, StructField heapField) {
        String field = fieldNames.get(heapField.name());
        Default d = defaults.get(heapField.name());
        if (field == null) {
            return d != null ? d.value : lit(null).cast(heapField.dataType());
        }
        Column value = asHeapType(rows.col(quoteName(field)), rows.schema().apply(field).dataType(),
                heapField.dataType());
        switch (d == null ? FileRule.FIELD : fileRule(d)) {
            case FIELD:
                return value;
            case DEFAULT:
                return d.value;
            default:
                Column seq = col(FILES_SEQUENCE);
                Column old = when(seq.isNull(), raise_error(lit("tierdb-spark: a row of the lake at snapshot "
                        + snapshotId + " comes from a data file the snapshot does not list")))
                        .otherwise(seq.leq(d.lakeSequenceNumber));
                return when(old, d.value).otherwise(value);
        }
    }

    /** Which rows of a column with a field and a default read the default. */
    private enum FileRule { FIELD, DEFAULT, BY_FILE }

    private FileRule fileRule(Default d) {
        if (d.lakeSequenceNumber == null) {
            return FileRule.DEFAULT;  // the daemon has not recorded adding the field: no file holds it yet
        }
        long threshold = d.lakeSequenceNumber;
        boolean anyOld = fileSequences().values().stream().anyMatch(n -> n <= threshold);
        boolean anyNew = fileSequences().values().stream().anyMatch(n -> n > threshold);
        return !anyNew ? FileRule.DEFAULT : anyOld ? FileRule.BY_FILE : FileRule.FIELD;
    }

    /** Whether some column's value depends on the data file of the row. */
    private boolean byFile(StructType heapSchema) {
        for (StructField f : heapSchema.fields()) {
            Default d = defaults.get(f.name());
            if (d != null && fieldNames.containsKey(f.name()) && fileRule(d) == FileRule.BY_FILE) {
                return true;
            }
        }
        return false;
    }

    /** The data files of S and their data sequence numbers, planned once. */
    private Map<String, Long> fileSequences() {
        if (fileSequences == null) {
            Map<String, Long> files = new HashMap<>();
            try (CloseableIterable<FileScanTask> tasks = table.newScan().useSnapshot(snapshotId).planFiles()) {
                for (FileScanTask task : tasks) {
                    Long n = task.file().dataSequenceNumber();
                    if (n == null) {
                        throw new IllegalStateException("tierdb-spark: the lake at snapshot " + snapshotId
                                + " gives no data sequence number for " + task.file().location());
                    }
                    files.put(task.file().location(), n);
                }
            } catch (IOException e) {
                throw new UncheckedIOException("tierdb-spark could not list the data files of the lake at snapshot "
                        + snapshotId + ": " + e.getMessage(), e);
            }
            fileSequences = files;
        }
        return fileSequences;
    }

    /**
     * The lake's rows with the data sequence number of each row's file: a
     * left join, so that a row of a file S does not list fails the read
     * (column) rather than vanish.
     */
    private Dataset<Row> withFileSequence(Dataset<Row> lake) {
        List<Row> rows = new ArrayList<>();
        fileSequences().forEach((path, n) -> rows.add(RowFactory.create(path, n)));
        StructType schema = new StructType()
                .add(FILES_PATH, DataTypes.StringType, false)
                .add(FILES_SEQUENCE, DataTypes.LongType, false);
        Dataset<Row> files = spark.createDataFrame(rows, schema);
        return lake.join(broadcast(files), lake.col(FILE_COLUMN).equalTo(files.col(FILES_PATH)), "left_outer");
    }

    /**
     * A lake column as the heap's type.  Iceberg's timestamp (without zone)
     * reads as Spark's TIMESTAMP_NTZ, the heap's through JDBC as TIMESTAMP
     * taken in the JVM's zone; a narrower field (int, float, decimal(p,s))
     * and everything else is a plain cast.
     */
    private Column asHeapType(Column c, DataType lakeType, DataType heapType) {
        if (lakeType.equals(heapType)) {
            return c;
        }
        if (lakeType.equals(DataTypes.TimestampNTZType) && heapType.equals(DataTypes.TimestampType)) {
            String jvmZone = TimeZone.getDefault().getID();
            String sessionZone = spark.conf().get("spark.sql.session.timeZone");
            Column inSession = c.cast(heapType);
            if (jvmZone.equals(sessionZone)) {
                return inSession;
            }
            return from_utc_timestamp(to_utc_timestamp(inSession, jvmZone), sessionZone);
        }
        return c.cast(heapType);
    }

    /** A column name as Dataset.col takes it literally (dots and backticks included). */
    static String quoteName(String name) {
        return "`" + name.replace("`", "``") + "`";
    }
}
