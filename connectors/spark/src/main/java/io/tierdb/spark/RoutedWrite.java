/*
 * RoutedWrite: TierDBSpark.write and TierDBSpark.delete.  A batch is
 * checked completely before anything is written (columns and types against
 * the table, duplicate keys, rows below the retention line R), then applied
 * in ONE Postgres transaction from the driver that holds the table's
 * cut-line row FOR SHARE, so T cannot advance underneath (as the
 * extension's routing functions do):
 *
 *   write   rows at or above T are INSERTed into the heap; rows below T go
 *           through the extension's tierdb_upsert, which writes the op = 0
 *           delta row (payload, canonical pk, version from
 *           tierdb.delta_version, old_tier_key) exactly as every other
 *           routed write does;
 *   delete  hot keys DELETE from the heap; cold keys go through
 *           tierdb_delete, which writes the op = 1 tombstone.
 *
 * The rows travel to Postgres from the driver (the path is sized for
 * stragglers, not volume) as JSON row images in a temporary table, and
 * Postgres types them with jsonb_populate_record.  Any error rolls back
 * everything.
 *
 * A direct table's write goes through DirectWrite instead when it can
 * (executors write the cold rows as lake files; this class still appends
 * the hot rows); otherwise its delta rows are committed to the lake by the
 * server when the transaction commits.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.col;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

final class RoutedWrite {
    /** Rows per statement when loading the batch into Postgres. */
    private static final int CHUNK_ROWS = 5000;
    private static final String BATCH = "tierdb_spark_batch";

    private enum Kind {
        WRITE("write to"), DELETE("delete from");

        final String verb;

        Kind(String verb) {
            this.verb = verb;
        }
    }

    private final SeamOptions options;
    private final Kind kind;
    /** The table's writable columns and their types (format_type), in order. */
    private Map<String, String> pgTypes;

    private RoutedWrite(SeamOptions options, Kind kind) {
        this.options = options;
        this.kind = kind;
    }

    static void write(Dataset<Row> batch, SeamOptions options) {
        new RoutedWrite(options, Kind.WRITE).run(batch);
    }

    static void delete(Dataset<Row> keys, SeamOptions options) {
        new RoutedWrite(options, Kind.DELETE).run(keys);
    }

    private void run(Dataset<Row> batch) {
        try (Connection conn = Catalog.connect(options)) {
            try {
                apply(conn, batch);
                conn.commit();
            } catch (SQLException | RuntimeException e) {
                conn.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw Catalog.explain(e, options);
        }
    }

    private void apply(Connection conn, Dataset<Row> batch) throws SQLException {
        Registration reg = Catalog.registration(conn, options, false);
        reg.requireServed(kind.verb);
        pgTypes = columnTypes(conn, reg);
        checkColumns(batch, reg, pgTypes);
        checkUniqueKeys(batch, reg);
        if ("direct".equals(reg.mode)) {
            DirectWrite direct = DirectWrite.plan(conn, options, reg, batch, pgTypes, kind == Kind.DELETE);
            if (direct != null) {
                direct.apply(conn, batch, this);
                return;
            }
        }
        routeRows(conn, batch.collectAsList(), batch.schema());
    }

    /** Writes (or deletes) checked rows where their tier keys say they live, in conn's transaction. */
    void routeRows(Connection conn, List<Row> rows, StructType schema) throws SQLException {
        if (rows.isEmpty()) {
            return;
        }
        Set<String> zoneless = pgTypes.entrySet().stream()
                .filter(e -> e.getValue().startsWith("timestamp without time zone"))
                .map(Map.Entry::getKey).collect(Collectors.toSet());

        // from here on the cut-line is held: T and R are the ones we commit under
        Registration reg = Catalog.registration(conn, options, true);
        load(conn, reg, rows, schema, zoneless);
        checkRetention(conn, reg);
        if (kind == Kind.WRITE) {
            insertHot(conn, reg, pgTypes);
            routeCold(conn, "tierdb_upsert(?::oid::regclass, b.img)", reg);
        } else {
            deleteHot(conn, reg);
            routeCold(conn, String.format("tierdb_delete(?::oid::regclass, %s, r.%s)", keyObject(reg),
                    SeamPlan.quoteIdent(reg.tierKeyCol)), reg);
        }
    }

    /** name -> format_type of the table's columns that can be written (not generated), in order. */
    private static Map<String, String> columnTypes(Connection conn, Registration reg) throws SQLException {
        Map<String, String> types = new LinkedHashMap<>();
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT name, type FROM tierdb.table_columns(?::oid::regclass) WHERE NOT generated")) {
            ps.setLong(1, reg.tableId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    types.put(rs.getString(1), rs.getString(2));
                }
            }
        }
        return types;
    }

    /**
     * The batch's columns against the table: no unknown column, every key
     * column present (a delete carries exactly the keys), and each type one
     * Spark would store into the column's type (ANSI store assignment).
     */
    private void checkColumns(Dataset<Row> batch, Registration reg, Map<String, String> pgTypes) {
        StructType heap = batch.sparkSession().read()
                .jdbc(options.jdbcUrl(), reg.qualifiedName, SeamPlan.sparkReadProperties(options)).schema();
        List<String> unknown = new ArrayList<>();
        List<String> incompatible = new ArrayList<>();
        Set<String> allowed = kind == Kind.DELETE ? new HashSet<>(reg.keyColumns()) : pgTypes.keySet();
        for (StructField f : batch.schema().fields()) {
            if (!allowed.contains(f.name())) {
                unknown.add(f.name());
                continue;
            }
            DataType target = heap.apply(f.name()).dataType();
            if (!Cast.canANSIStoreAssign(f.dataType(), target)) {
                incompatible.add(String.format("%s is %s in the batch but %s (%s) in the table", f.name(),
                        f.dataType().simpleString(), pgTypes.get(f.name()), target.simpleString()));
            }
        }
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException(String.format(
                    "the batch does not match table %s: %s %s%s. %s", reg.qualifiedName,
                    unknown.size() == 1 ? "it has no column" : "it has no columns", String.join(", ", unknown),
                    kind == Kind.DELETE ? " among its primary-key and tier-key columns" : "",
                    kind == Kind.DELETE ? "A delete's dataset carries exactly the columns " + reg.keyColumns() + "."
                            : "Select only the table's columns: " + pgTypes.keySet() + "."));
        }
        List<String> names = List.of(batch.schema().fieldNames());
        List<String> missing = reg.keyColumns().stream().filter(c -> !names.contains(c)).collect(Collectors.toList());
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException(String.format(
                    "the batch for table %s lacks the key %s %s: every row needs its primary key %s and its tier key "
                            + "%s, which say which row it is and where it lives",
                    reg.qualifiedName, missing.size() == 1 ? "column" : "columns", String.join(", ", missing),
                    reg.pkCols, reg.tierKeyCol));
        }
        if (!incompatible.isEmpty()) {
            throw new IllegalArgumentException(String.format(
                    "the batch's column types do not match table %s: %s. Cast those columns to the table's types.",
                    reg.qualifiedName, String.join("; ", incompatible)));
        }
    }

    /** Two rows with one primary key would make the result depend on their order: refused. */
    private static void checkUniqueKeys(Dataset<Row> batch, Registration reg) {
        Column[] pk = reg.pkCols.stream().map(c -> col(c)).toArray(Column[]::new);
        List<Row> dup = batch.groupBy(pk).count().filter(col("count").gt(1)).limit(1).collectAsList();
        if (!dup.isEmpty()) {
            Row r = dup.get(0);
            List<String> parts = new ArrayList<>();
            for (int i = 0; i < reg.pkCols.size(); i++) {
                parts.add(reg.pkCols.get(i) + " = " + r.get(i));
            }
            throw new IllegalArgumentException(String.format(
                    "the batch for table %s repeats a primary key: %s occurs %d times. Nothing was written; "
                            + "keep one row per key (e.g. dropDuplicates(%s) after choosing the one to keep).",
                    reg.qualifiedName, String.join(", ", parts), r.getLong(reg.pkCols.size()), reg.pkCols));
        }
    }

    /** The batch into a temporary table (ord, img, tk), tk the canonical tier key computed by Postgres. */
    private static void load(Connection conn, Registration reg, List<Row> rows, StructType schema, Set<String> zoneless)
            throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute("CREATE TEMPORARY TABLE " + BATCH + " (ord bigint, img jsonb, tk bigint) ON COMMIT DROP");
        }
        String sql = String.format("INSERT INTO %s SELECT ? + a.n, a.e, tierdb.canonical_tier_key("
                + "(jsonb_populate_record(NULL::%s, a.e)).%s) FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY"
                + " AS a(e, n)", BATCH, reg.qualifiedName, SeamPlan.quoteIdent(reg.tierKeyCol));
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int from = 0; from < rows.size(); from += CHUNK_ROWS) {
                StringBuilder json = new StringBuilder().append('[');
                int to = Math.min(rows.size(), from + CHUNK_ROWS);
                for (int i = from; i < to; i++) {
                    if (i > from) {
                        json.append(',');
                    }
                    json.append(RowJson.image(rows.get(i), schema, zoneless));
                }
                ps.setLong(1, from);
                ps.setString(2, json.append(']').toString());
                ps.executeUpdate();
            }
        }
    }

    /** Rows below R were expired from the lake on purpose: nothing could ever fold them back. */
    private void checkRetention(Connection conn, Registration reg) throws SQLException {
        if (reg.retentionLine == null) {
            return;
        }
        String sql = String.format("SELECT tk, count(*) OVER () FROM %s WHERE tk < ? ORDER BY tk LIMIT 1", BATCH);
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, reg.retentionLine);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    throw new IllegalArgumentException(String.format(
                            "%d %s of the batch for table %s %s below the retention line %s (the lowest tier key is "
                                    + "%s): the lake expired rows below it on purpose, so nothing was written. "
                                    + "Only rows at or above the retention line can be written or deleted.",
                            rs.getLong(2), rs.getLong(2) == 1 ? "row" : "rows", reg.qualifiedName,
                            rs.getLong(2) == 1 ? "lies" : "lie", Catalog.tierKeyText(conn, reg, reg.retentionLine),
                            Catalog.tierKeyText(conn, reg, rs.getLong(1))));
                }
            }
        }
    }

    /** SQL: whether batch row b routes to the heap (tierdb.routes_hot's rule). */
    private static String hot(Registration reg) {
        if (reg.keepHeap || reg.cutline == null) {
            return "TRUE";
        }
        return "b.tk >= " + reg.cutline;
    }

    private static void insertHot(Connection conn, Registration reg, Map<String, String> pgTypes)
            throws SQLException {
        String cols = pgTypes.keySet().stream().map(SeamPlan::quoteIdent).collect(Collectors.joining(", "));
        String values = pgTypes.keySet().stream().map(c -> "r." + SeamPlan.quoteIdent(c))
                .collect(Collectors.joining(", "));
        execute(conn, String.format("INSERT INTO %s (%s) SELECT %s FROM %s b, jsonb_populate_record(NULL::%s, b.img) r"
                + " WHERE %s ORDER BY b.ord", reg.qualifiedName, cols, values, BATCH, reg.qualifiedName, hot(reg)));
    }

    private static void deleteHot(Connection conn, Registration reg) throws SQLException {
        String match = reg.pkCols.stream().map(c -> "t." + SeamPlan.quoteIdent(c) + " = k." + SeamPlan.quoteIdent(c))
                .collect(Collectors.joining(" AND "));
        execute(conn, String.format("DELETE FROM %s t USING (SELECT r.* FROM %s b, jsonb_populate_record(NULL::%s, b.img) r"
                + " WHERE %s) k WHERE %s", reg.qualifiedName, BATCH, reg.qualifiedName, hot(reg), match));
    }

    /** Runs the extension's routed function `call` for each cold row, in batch order. */
    private static void routeCold(Connection conn, String call, Registration reg) throws SQLException {
        String sql = String.format("SELECT count(%s) FROM (SELECT * FROM %s b WHERE NOT (%s) ORDER BY b.ord) b,"
                + " jsonb_populate_record(NULL::%s, b.img) r", call, BATCH, hot(reg), reg.qualifiedName);
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, reg.tableId);
            ps.executeQuery().close();
        }
    }

    /** SQL: the pk columns of row r as a JSON object, the key tierdb_delete takes. */
    private static String keyObject(Registration reg) {
        return "jsonb_build_object(" + reg.pkCols.stream()
                .map(c -> SeamPlan.quoteLiteral(c) + ", r." + SeamPlan.quoteIdent(c))
                .collect(Collectors.joining(", ")) + ")";
    }

    private static void execute(Connection conn, String sql) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute(sql);
        }
    }
}
