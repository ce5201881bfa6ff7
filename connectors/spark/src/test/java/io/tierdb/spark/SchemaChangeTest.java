/*
 * SchemaChangeTest: a seam read after ALTER TABLE of the registered table
 * (SPEC §6, docs/schema-changes.md) has exactly the rows of an untiered
 * copy that went through the same statements, and of the extension's
 * transparent read, before the daemon made the lake follow, after it did,
 * and after more rows were tiered with the new columns: the lake's fields
 * are matched by field id (LakeColumns), never by name.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.col;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Properties;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

class SchemaChangeTest {
    private static final int ROWS = 2000;
    private static final String EARLY = "5d";
    private static final String LATER = "2d";

    private final TestEnv env = TestEnv.get();

    /**
     * sc, registered with ten daily partitions, half of them in the lake, and
     * its untiered copy sc_src; a correction of a cold row in the delta.
     */
    private TestEnv.Db tiered() {
        TestEnv.Db db = env.newDatabase();
        db.exec("CREATE TABLE sc (id bigint NOT NULL, ts timestamptz NOT NULL, note text, tag varchar(8), v int,"
                + " ratio real, amount numeric(10,2)) PARTITION BY RANGE (ts);\n"
                + "DO $$ BEGIN FOR d IN 0..9 LOOP"
                + " EXECUTE format('CREATE TABLE %I PARTITION OF sc FOR VALUES FROM (%L) TO (%L)',"
                + " 'sc_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'),"
                + " (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz); END LOOP; END $$;\n"
                + "INSERT INTO sc SELECT g, timestamptz '2024-01-01 00:00:00+00' + (g - 1) * interval '432 seconds',"
                + " CASE WHEN g % 11 = 0 THEN NULL ELSE 'n' || g END,"
                + " CASE WHEN g % 7 = 0 THEN NULL ELSE 't' || g % 100 END,"
                + " CASE WHEN g % 13 = 0 THEN NULL ELSE (g * 7919) % 200000 - 100000 END,"
                + " CASE g % 17 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN '-Infinity' ELSE (g - 1000) / 7.0 END,"
                + " CASE WHEN g % 19 = 0 THEN NULL ELSE ((g * 104729) % 2000000 - 1000000) / 100.0 END"
                + " FROM generate_series(1, " + ROWS + ") g;\n"
                + "CREATE TABLE sc_src AS SELECT * FROM sc;");
        db.register("public.sc", "id", "ts");
        db.runOnce(EARLY);
        correctColdRows(db, "id % 97 = 3", "note = 'corrected ' || id");
        return db;
    }

    /** The same statement on sc and on its copy: each %1$s is the table. */
    private static void both(TestEnv.Db db, String sql) {
        db.exec(sql.replace("%1$s", "sc"));
        db.exec(sql.replace("%1$s", "sc_src"));
    }

    /** Changes cold rows of the copy and writes them to sc as routed corrections. */
    private static void correctColdRows(TestEnv.Db db, String where, String set) {
        String cold = "ts < (SELECT min(ts) FROM sc)";
        db.exec("UPDATE sc_src SET " + set + " WHERE " + cold + " AND " + where);
        db.exec("SELECT tierdb_upsert('sc', to_jsonb(s)) FROM sc_src s WHERE " + cold + " AND " + where);
    }

    /** New rows in the heap's partitions (days 7 to 9), each column set by `values` over g. */
    private static void insertHot(TestEnv.Db db, String columns, String values) {
        both(db, "INSERT INTO %1$s (id, ts, " + columns + ") SELECT 100000 + g,"
                + " timestamptz '2024-01-07 00:00:00+00' + g * interval '1 hour 7 seconds', " + values
                + " FROM generate_series(1, 70) g");
    }

    private Dataset<Row> untiered(TestEnv.Db db) {
        return env.spark.read().jdbc(db.jdbcUrl, "sc_src", new Properties());
    }

    /** The seam read equals the untiered copy and the transparent read. */
    private void assertExact(TestEnv.Db db, String what) {
        try (SeamRead read = TierDBSpark.read(env.spark, db.options("sc").numPartitions(2).build())) {
            Dataset<Row> df = read.dataframe();
            Compare.assertSameRows(untiered(db), df, what + ", against the untiered copy");
            Compare.assertSameRows(Compare.transparentRead(db, "sc"), df, what + ", against the transparent read");
        }
    }

    /** The field names of the lake's current schema, as other engines see them. */
    private List<String> lakeFields(TestEnv.Db db) {
        try (SeamRead read = TierDBSpark.read(env.spark, db.options("sc").build())) {
            String location = SeamPlan.lakeLocation(read.metadataLocation());
            return List.of(env.spark.read().format("iceberg").load(location).schema().fieldNames());
        }
    }

    private static long coldRows(TestEnv.Db db) {
        return Long.parseLong(db.value("SELECT count(*) FROM sc_src WHERE ts < (SELECT min(ts) FROM sc)"));
    }

    /**
     * RENAME COLUMN of non-key columns, two of them swapped (a match by name
     * would read one's values as the other's), before and after the daemon
     * renames the lake's fields, and after rows are tiered under the new names.
     */
    @Test
    void renamedColumnsReadTheirFieldsById() {
        TestEnv.Db db = tiered();
        both(db, "ALTER TABLE %1$s RENAME COLUMN note TO remark");
        both(db, "ALTER TABLE %1$s RENAME COLUMN tag TO x; ALTER TABLE %1$s RENAME COLUMN v TO tag_len;"
                + " ALTER TABLE %1$s RENAME COLUMN x TO v");
        assertTrue(lakeFields(db).containsAll(List.of("note", "tag", "v")), "the daemon has not followed yet");
        assertExact(db, "renamed, lake not followed");

        db.runOnce(EARLY);
        assertEquals(List.of("id", "ts", "remark", "v", "tag_len", "ratio", "amount"), lakeFields(db));
        assertExact(db, "renamed, lake followed");

        long before = coldRows(db);
        db.runOnce(LATER);
        assertTrue(coldRows(db) > before, "more rows tiered");
        correctColdRows(db, "id % 89 = 5", "remark = 'late ' || id, v = 'w' || id % 10");
        assertExact(db, "renamed, more rows tiered");
    }

    /**
     * ADD COLUMN with defaults: the lake's rows read them before the daemon
     * adds the fields (the lake lacks them), after it does (the old files
     * lack them), and once files with the fields are tiered the old files
     * still read the defaults while the new ones read their own values,
     * explicit NULLs included.
     */
    @Test
    void addedColumnsWithDefaultsReadThemInTheOlderFiles() {
        TestEnv.Db db = tiered();
        both(db, "ALTER TABLE %1$s ADD COLUMN x int DEFAULT 42,"
                + " ADD COLUMN w numeric(8,3) NOT NULL DEFAULT -1.5,"
                + " ADD COLUMN z timestamptz DEFAULT '2020-02-02 02:02:02.123456+00',"
                // a default the lake's initial-default cannot hold: only the catalog has it
                + " ADD COLUMN q double precision DEFAULT 'NaN'");
        assertEquals(List.of("id", "ts", "note", "tag", "v", "ratio", "amount"), lakeFields(db));
        assertExact(db, "added, lake not followed");

        db.runOnce(EARLY);
        assertTrue(lakeFields(db).containsAll(List.of("x", "w", "z", "q")), "the daemon added the fields");
        assertExact(db, "added, lake followed");

        insertHot(db, "note, x, w, z, q", "'new ' || g, CASE WHEN g % 3 = 0 THEN NULL ELSE g END, g / 8.0,"
                + " CASE WHEN g % 4 = 0 THEN NULL ELSE timestamptz '2021-01-01 00:00:00+00' + g * interval '1 day' END,"
                + " CASE WHEN g % 5 = 0 THEN NULL ELSE g / 3.0 END");
        insertHot(db, "note", "'defaulted ' || g");  // the added columns take their defaults in the heap
        correctColdRows(db, "id % 83 = 1", "x = NULL, w = 7.25");
        long before = coldRows(db);
        db.runOnce(LATER);
        assertTrue(coldRows(db) > before, "more rows tiered");
        try (SeamRead read = TierDBSpark.read(env.spark, db.options("sc").build())) {
            Dataset<Row> q = read.dataframe().filter(col("id").gt(100000)).select("id", "x");
            String plan = q.queryExecution().executedPlan().toString();
            assertTrue(plan.contains("BroadcastHashJoin") && plan.contains("_file"), plan);
            String lake = plan.lines().filter(l -> l.contains("BatchScan")).findFirst().orElseThrow();
            assertTrue(lake.contains("id > 100000") && lake.contains("ts < "), lake);
        }
        assertExact(db, "added, files with and without the fields");
        // the lake now has rows of both kinds: older ones reading the defaults, newer ones with NULLs
        String cold = "FROM sc_src WHERE ts < (SELECT min(ts) FROM sc)";
        assertTrue(Long.parseLong(db.value("SELECT count(*) " + cold + " AND id > 100000 AND x IS NULL")) > 0);
        assertTrue(Long.parseLong(db.value("SELECT count(*) " + cold + " AND id < 100000 AND x = 42")) > 0);
    }

    /**
     * DROP COLUMN, then ADD COLUMN of the same name: the new column never
     * reads the dropped one's values, before or after the daemon follows.
     */
    @Test
    void aColumnAddedAgainAfterADropDoesNotReadTheOldField() {
        TestEnv.Db db = tiered();
        both(db, "ALTER TABLE %1$s DROP COLUMN note");
        assertExact(db, "dropped, lake not followed");
        both(db, "ALTER TABLE %1$s ADD COLUMN note text");
        both(db, "ALTER TABLE %1$s DROP COLUMN tag");
        both(db, "ALTER TABLE %1$s ADD COLUMN tag int DEFAULT 7");
        assertExact(db, "dropped and added again, lake not followed");

        db.runOnce(EARLY);
        assertExact(db, "dropped and added again, lake followed");

        insertHot(db, "note, tag", "'again ' || g, CASE WHEN g % 2 = 0 THEN NULL ELSE g END");
        db.runOnce(LATER);
        assertExact(db, "dropped and added again, more rows tiered");
    }

    /**
     * Type widening: int to bigint, real to double precision, numeric and
     * varchar wider, one widened column renamed too (its narrower field is
     * found by id, then widened).
     */
    @Test
    void widenedColumnsReadTheNarrowerFields() {
        TestEnv.Db db = tiered();
        both(db, "ALTER TABLE %1$s ALTER COLUMN v TYPE bigint, ALTER COLUMN ratio TYPE double precision,"
                + " ALTER COLUMN amount TYPE numeric(14,2), ALTER COLUMN tag TYPE text");
        both(db, "ALTER TABLE %1$s RENAME COLUMN ratio TO precise");
        assertExact(db, "widened, lake not followed");

        db.runOnce(EARLY);
        assertExact(db, "widened, lake followed");

        insertHot(db, "v, precise, amount, tag", "5000000000 + g, 1e300 / g, 123456789012.25 - g, repeat('long', g % 5)");
        correctColdRows(db, "id % 79 = 2", "v = -9000000000, precise = 1e-300, amount = 999999999999.99");
        db.runOnce(LATER);
        assertExact(db, "widened, more rows tiered");
    }
}
