/*
 * RoutedWriteTest: TierDBSpark.write and TierDBSpark.delete route rows by
 * the cut-line: hot rows into the heap, cold rows through the extension's
 * routed functions into the delta (op = 0 upserts, op = 1 tombstones), in
 * one transaction; the result is visible to the seam read and to Postgres'
 * transparent read at once and survives the daemon's fold.  Batches with a
 * row below the retention line or a repeated primary key write nothing.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Properties;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

class RoutedWriteTest {
    private final TestEnv env = TestEnv.get();

    /** Rows of a query on the test database, with the JDBC types Spark gives the table's columns. */
    private Dataset<Row> rows(TestEnv.Db db, String sql) {
        return env.spark.read().jdbc(db.jdbcUrl, "(" + sql + ") AS q", new Properties());
    }

    private static void assertSeamMatchesPostgres(TestEnv.Db db, String table) {
        try (SeamRead read = TierDBSpark.read(db.env.spark, db.options(table).build())) {
            Compare.assertMatchesTransparentRead(db, table, read.dataframe());
        }
    }

    /** heap and delta of the table as they are: counts and a checksum of their text. */
    private static List<List<String>> state(TestEnv.Db db, String table) {
        return db.query("SELECT (SELECT count(*) || ':' || coalesce(sum(hashtext(t::text)), 0) FROM " + table + " t),"
                + " (SELECT count(*) || ':' || coalesce(sum(hashtext(d::text)), 0) FROM tierdb.delta d)");
    }

    @Test
    void writeRoutesHotRowsToTheHeapAndColdRowsToTheDelta() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.TIMESTAMPTZ);
        String cut = "(SELECT tierdb.tier_key_literal(tier_key_hi, 'timestamptz') FROM tierdb.cutline)";
        String tLiteral = db.value(cut);
        // new pks on every day, and new values for existing cold pks
        Dataset<Row> batch = rows(db, "SELECT id + 500000 AS id, ts, 'written ' || id AS note, amount, reading, ok,"
                + " uid, blob, day, seen FROM ev_tz_src WHERE id % 50 = 0"
                + " UNION ALL SELECT id, ts, 'rewritten' AS note, amount, reading, ok, uid, blob, day, seen"
                + " FROM ev_tz_src WHERE id % 97 = 0 AND ts < " + tLiteral);
        long hot = Long.parseLong(db.value("SELECT count(*) FROM ev_tz_src WHERE id % 50 = 0 AND ts >= " + tLiteral));
        long coldNew = Long.parseLong(db.value("SELECT count(*) FROM ev_tz_src WHERE id % 50 = 0 AND ts < " + tLiteral));
        long coldUpdated = Long.parseLong(db.value("SELECT count(*) FROM ev_tz_src WHERE id % 97 = 0 AND ts < " + tLiteral));
        assertTrue(hot > 0 && coldNew > 0 && coldUpdated > 0);

        TierDBSpark.write(batch, db.options("public.ev_tz").build());

        assertEquals(String.valueOf(hot), db.value("SELECT count(*) FROM ev_tz WHERE id >= 500000"), "heap rows");
        assertEquals(List.of(List.of("0", String.valueOf(coldNew + coldUpdated))),
                db.query("SELECT op, count(*) FROM tierdb.delta GROUP BY op"), "op = 0 delta rows");
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta d JOIN ev_tz_src s ON d.pk = s.id::text"
                + " WHERE d.payload ->> 'note' <> 'rewritten'"));
        assertEquals(String.valueOf(hot + coldNew), db.transparentValue("SELECT count(*) FROM ev_tz WHERE id >= 500000"));
        assertEquals(String.valueOf(coldUpdated),
                db.transparentValue("SELECT count(*) FROM ev_tz WHERE note = 'rewritten'"));
        assertSeamMatchesPostgres(db, "ev_tz");
        // the written values read back exactly: compare the seam read with the source rows
        try (SeamRead read = TierDBSpark.read(env.spark, db.options("ev_tz").build())) {
            Compare.assertSameRows(batch.drop("note"),
                    read.dataframe().filter(col("id").geq(500000).or(col("note").equalTo("rewritten"))).drop("note"),
                    "written rows");
        }

        // the fold moves the delta into the lake; nothing changes for readers
        db.runOnce("2d");
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"));
        assertSeamMatchesPostgres(db, "ev_tz");
        assertEquals(String.valueOf(hot + coldNew), db.transparentValue("SELECT count(*) FROM ev_tz WHERE id >= 500000"));
    }

    @Test
    void deleteRoutesHotKeysToTheHeapAndColdKeysToTombstones() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.COMPOSITE);
        // every 40th row; the composite keys include tags with '\' and chr(31)
        Dataset<Row> keys = rows(db, "SELECT id, tag, k FROM mk_src WHERE id % 40 = 0");
        long hot = Long.parseLong(db.value("SELECT count(*) FROM mk WHERE id % 40 = 0"));
        long all = keys.count();
        assertTrue(hot > 0 && all > hot);

        TierDBSpark.delete(keys, db.options("mk").build());

        assertEquals("0", db.value("SELECT count(*) FROM mk WHERE id % 40 = 0"), "hot keys left the heap");
        assertEquals(List.of(List.of("1", String.valueOf(all - hot))),
                db.query("SELECT op, count(*) FROM tierdb.delta GROUP BY op"), "op = 1 tombstones");
        assertEquals("0", db.transparentValue("SELECT count(*) FROM mk WHERE id % 40 = 0"));
        assertSeamMatchesPostgres(db, "mk");
        try (SeamRead read = TierDBSpark.read(env.spark, db.options("mk").build())) {
            assertEquals(Tables.ROWS - all, read.dataframe().count());
        }

        db.runOnce("120");
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"));
        assertSeamMatchesPostgres(db, "mk");
        assertEquals("0", db.transparentValue("SELECT count(*) FROM mk WHERE id % 40 = 0"));
    }

    @Test
    void rowsBelowTheRetentionLineWriteNothing() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.DATE);
        db.exec("UPDATE tierdb.cutline SET retention_line = 2");  // 1970-01-03: rows below it were expired
        db.exec("INSERT INTO ev_d_src (id, d, note) VALUES (900001, '1970-01-02', 'expired')");
        Dataset<Row> batch = rows(db, "SELECT * FROM ev_d_src WHERE id % 100 = 0 OR id = 900001");
        List<List<String>> before = state(db, "ev_d");

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TierDBSpark.write(batch, db.options("ev_d").build()));
        assertTrue(e.getMessage().contains("1 row of the batch for table public.ev_d lies below the retention line"
                + " 1970-01-03 (the lowest tier key is 1970-01-02)"), e.getMessage());
        assertEquals(before, state(db, "ev_d"));

        e = assertThrows(IllegalArgumentException.class,
                () -> TierDBSpark.delete(batch.select("id", "d"), db.options("ev_d").build()));
        assertTrue(e.getMessage().contains("below the retention line 1970-01-03"), e.getMessage());
        assertEquals(before, state(db, "ev_d"));
    }

    @Test
    void duplicateKeysWriteNothing() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.COMPOSITE);
        Dataset<Row> some = rows(db, "SELECT * FROM mk_src WHERE id % 100 = 0");
        Dataset<Row> batch = some.union(some.filter(col("id").equalTo(300)).withColumn("note", lit("again")));
        List<List<String>> before = state(db, "mk");

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TierDBSpark.write(batch, db.options("mk").build()));
        assertTrue(e.getMessage().contains("repeats a primary key: id = 300, tag = a\\b\u001fc300 occurs 2 times"),
                e.getMessage());
        assertEquals(before, state(db, "mk"));

        e = assertThrows(IllegalArgumentException.class,
                () -> TierDBSpark.delete(batch.select("id", "tag", "k"), db.options("mk").build()));
        assertTrue(e.getMessage().contains("repeats a primary key: id = 300"), e.getMessage());
        assertEquals(before, state(db, "mk"));
    }

    /**
     * A --keep-heap table (docs/keep-heap.md): the seam read splits at T like
     * a tiered table's while the heap keeps every row; TierDBSpark.write puts
     * every row into the heap, and the kept partitions' trigger mirrors the
     * cold ones into the delta, which the fold takes into the lake.
     */
    @Test
    void keepHeapTablesReadSplitAndWriteTheHeap() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.TIMESTAMPTZ, "--keep-heap");
        assertEquals(db.value("SELECT count(*) FROM ev_tz_src"),
                db.value("SET tierdb.transparent_reads = off; SELECT count(*) FROM ev_tz"), "the heap keeps every row");
        assertSeamMatchesPostgres(db, "ev_tz");
        String tLiteral = db.value("SELECT tierdb.tier_key_literal(tier_key_hi, 'timestamptz') FROM tierdb.cutline");
        Dataset<Row> batch = rows(db, "SELECT id, ts, 'kept ' || id AS note, amount, reading, ok, uid, blob, day, seen"
                + " FROM ev_tz_src WHERE id % 41 = 0");
        long cold = Long.parseLong(db.value("SELECT count(*) FROM ev_tz_src WHERE id % 41 = 0 AND ts < " + tLiteral));
        assertTrue(cold > 0);

        TierDBSpark.write(batch, db.options("ev_tz").build());

        assertEquals(String.valueOf(cold), db.value("SELECT count(*) FROM tierdb.delta WHERE op = 0"),
                "the cold rows written to the heap are mirrored into the delta");
        assertEquals(String.valueOf(batch.count()),
                db.value("SET tierdb.transparent_reads = off; SELECT count(*) FROM ev_tz WHERE note LIKE 'kept %'"));
        assertSeamMatchesPostgres(db, "ev_tz");
        db.runOnce("2d");
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"));
        assertSeamMatchesPostgres(db, "ev_tz");
        assertEquals(String.valueOf(batch.count()), db.transparentValue("SELECT count(*) FROM ev_tz WHERE note LIKE 'kept %'"));
    }

    /**
     * A direct table (--mode direct) tiers and reads as a tiered table does;
     * TierDBSpark.write routes its cold rows through the delta of the
     * write's transaction, which the server commits to the lake as one
     * snapshot when the transaction commits (docs/direct.md): afterwards
     * the delta is empty and the lake at S holds the rows.
     */
    @Test
    void directTablesReadSplitAndCommitColdWritesToTheLake() throws java.io.IOException {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.TIMESTAMPTZ, "--mode", "direct");
        assertEquals("direct", db.value("SELECT mode FROM tierdb.tables"));
        assertSeamMatchesPostgres(db, "ev_tz");
        // the server writes a direct table's lake: here the daemon ran as another OS user, so open it up
        try (java.util.stream.Stream<java.nio.file.Path> paths = java.nio.file.Files.walk(db.lake)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) paths::iterator) {
                p.toFile().setWritable(true, false);
            }
        }
        String s = db.value("SELECT lake_snapshot_id FROM tierdb.cutline");
        Dataset<Row> batch = rows(db, "SELECT id, ts, 'direct ' || id AS note, amount, reading, ok, uid, blob, day, seen"
                + " FROM ev_tz_src WHERE id % 37 = 0");

        TierDBSpark.write(batch, db.options("ev_tz").build());

        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"), "committed to the lake, not kept in the delta");
        assertTrue(!s.equals(db.value("SELECT lake_snapshot_id FROM tierdb.cutline")), "a new lake snapshot");
        assertEquals(String.valueOf(batch.count()), db.transparentValue("SELECT count(*) FROM ev_tz WHERE note LIKE 'direct %'"));
        assertSeamMatchesPostgres(db, "ev_tz");
    }
}
