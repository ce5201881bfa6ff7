/*
 * DirectWriteTest: TierDBSpark.write and delete of a direct table whose
 * merge key holds the tier key write the cold rows as lake files from the
 * executors and commit them as one snapshot from the driver (DirectWrite):
 * the result equals the same changes made to an untiered copy, read by
 * Postgres (whose cold scan reads the files Iceberg's Java writers made)
 * and by the seam read; a failure before or after the lake commit leaves
 * the table as it was, and the next write rolls the failed commit back;
 * rows Postgres would refuse are refused before anything is written; a
 * table with something only Postgres can check takes the routed path.
 */
package io.tierdb.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

class DirectWriteTest {
    private final TestEnv env = TestEnv.get();

    /** ev_tz with its merge key (id, ts) a real primary key, so the tier key is part of it. */
    static final Tables.Fixture KEYED = new Tables.Fixture("ev_tz", "ts", "id,ts",
            "jsonb_build_object('id', s.id, 'ts', s.ts)", "2d", Tables.TIMESTAMPTZ.ddl + "\nALTER TABLE ev_tz ADD PRIMARY KEY (id, ts);");

    private static final String COLUMNS = "id, ts, note, amount, reading, ok, uid, blob, day, seen";

    private Dataset<Row> rows(TestEnv.Db db, String sql) {
        return env.spark.read().jdbc(db.jdbcUrl, "(" + sql + ") AS q", new Properties());
    }

    private TestEnv.Db directTable() throws IOException {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, KEYED, "--mode", "direct");
        openLake(db);
        return db;
    }

    /** The daemon runs as another OS user; the driver and executors write the lake as this one. */
    private static void openLake(TestEnv.Db db) throws IOException {
        try (Stream<Path> paths = Files.walk(db.lake)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                p.toFile().setWritable(true, false);
            }
        }
    }

    private static String cutline(TestEnv.Db db) {
        return db.value("SELECT tierdb.tier_key_literal(tier_key_hi, 'timestamptz') FROM tierdb.cutline");
    }

    /** Rows that differ between the table, as Postgres' transparent reads serve it, and its untiered copy. */
    private static String differences(TestEnv.Db db) {
        return db.transparentValue("SELECT count(*) FROM ((TABLE ev_tz EXCEPT ALL TABLE ev_tz_src)"
                + " UNION ALL (TABLE ev_tz_src EXCEPT ALL TABLE ev_tz)) d");
    }

    /** `tierdb verify` of the table: heap, lake and catalog agree. */
    private static void assertVerifies(TestEnv.Db db) {
        TestEnv.ProcessResult r = db.tierdb(java.util.Map.of(), "verify", "--table", "public.ev_tz");
        assertEquals(0, r.exitCode, "tierdb verify: " + r.stdout + r.stderr);
    }

    private static void assertSeamMatchesPostgres(TestEnv.Db db) {
        try (SeamRead read = TierDBSpark.read(db.env.spark, db.options("ev_tz").build())) {
            Compare.assertMatchesTransparentRead(db, "ev_tz", read.dataframe());
        }
    }

    /** The data and delete files of the lake directory. */
    private static List<Path> lakeFiles(TestEnv.Db db) throws IOException {
        try (Stream<Path> paths = Files.walk(db.lake)) {
            return paths.filter(p -> p.toString().endsWith(".parquet")).sorted().collect(Collectors.toList());
        }
    }

    /**
     * The files of operation opId written by Spark's executors: Iceberg's
     * OutputFileFactory puts the op id after the task's numbers, where the
     * server's own commits start the name with it.
     */
    private static long executorFiles(TestEnv.Db db, String opId) throws IOException {
        return lakeFiles(db).stream().map(p -> p.getFileName().toString())
                .filter(n -> n.contains(opId) && !n.startsWith(opId)).count();
    }

    /** A batch of corrections to cold rows, new cold rows and new hot rows; the same changes made to ev_tz_src. */
    private Dataset<Row> batch(TestEnv.Db db) {
        String t = cutline(db);
        String sql = "SELECT " + COLUMNS.replace("note", "'corrected ' || id AS note") + " FROM ev_tz_src"
                + " WHERE id % 7 = 0 AND ts < " + t
                + " UNION ALL SELECT id + 100000, ts, 'new ' || id, amount, reading, ok, uid, blob, day, seen"
                + " FROM ev_tz_src WHERE id % 11 = 0";
        db.exec("CREATE TABLE expected_batch AS " + sql);
        return rows(db, "TABLE expected_batch");
    }

    private static void applyToCopy(TestEnv.Db db) {
        db.exec("DELETE FROM ev_tz_src s USING expected_batch b WHERE s.id = b.id AND s.ts = b.ts;"
                + " INSERT INTO ev_tz_src SELECT * FROM expected_batch");
    }

    @Test
    void coldRowsAreWrittenByExecutorsAndCommittedAsOneSnapshot() throws IOException {
        TestEnv.Db db = directTable();
        String s = db.value("SELECT lake_snapshot_id FROM tierdb.cutline");
        Dataset<Row> batch = batch(db).repartition(3);
        long cold = Long.parseLong(db.value("SELECT count(*) FROM expected_batch WHERE ts < " + cutline(db)));
        assertTrue(cold > 0 && cold < batch.count());

        TierDBSpark.write(batch, db.options("ev_tz").build());
        applyToCopy(db);

        List<List<String>> op = db.query("SELECT op_id, details ->> 'rows', (details ->> 'base_snapshot_id'),"
                + " lake_snapshot_id FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'");
        assertEquals(1, op.size(), "one journaled lake commit");
        assertEquals(String.valueOf(cold), op.get(0).get(1));
        assertEquals(s, op.get(0).get(2));
        assertEquals(op.get(0).get(3), db.value("SELECT lake_snapshot_id FROM tierdb.cutline"), "S published");
            String opId = op.get(0).get(0);
        assertTrue(executorFiles(db, opId) >= 2, "data and delete files written by the executors");
        // written with the lake table's own properties: its codec (zstd), not Iceberg's default
        for (Path file : lakeFiles(db)) {
            if (file.getFileName().toString().contains(opId)) {
                org.apache.parquet.hadoop.metadata.ParquetMetadata footer = org.apache.parquet.hadoop.ParquetFileReader
                        .readFooter(new org.apache.hadoop.conf.Configuration(), new org.apache.hadoop.fs.Path(file.toString()));
                assertEquals("ZSTD", footer.getBlocks().get(0).getColumns().get(0).getCodec().name(), file.toString());
            }
        }
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"));
        assertEquals("0", differences(db));
        assertSeamMatchesPostgres(db);

        // the daemon tiers on over the files Java wrote, and reads stay exact
        db.runOnce("1d");
        assertEquals("0", differences(db));
        assertSeamMatchesPostgres(db);
        assertVerifies(db);
    }

    @Test
    void deletesCommitEqualityDeletesForColdKeys() throws IOException {
        TestEnv.Db db = directTable();
        Dataset<Row> keys = rows(db, "SELECT id, ts FROM ev_tz_src WHERE id % 13 = 0");
        long hot = Long.parseLong(db.value("SELECT count(*) FROM ev_tz WHERE id % 13 = 0"));
        assertTrue(hot > 0 && keys.count() > hot);

        TierDBSpark.delete(keys, db.options("ev_tz").build());
        db.exec("DELETE FROM ev_tz_src WHERE id % 13 = 0");

        assertEquals("1", db.value("SELECT count(*) FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'"));
        assertEquals("0", differences(db));
        assertSeamMatchesPostgres(db);
    }

    @Test
    void aFailureBeforeTheLakeCommitLeavesNoFileAndChangesNothing() throws IOException {
        TestEnv.Db db = directTable();
        List<Path> before = lakeFiles(db);
        Dataset<Row> batch = batch(db);
        System.setProperty(DirectWrite.TEST_FAULT, "direct-before-lake-commit");
        try {
            assertThrows(IllegalStateException.class, () -> TierDBSpark.write(batch, db.options("ev_tz").build()));
        } finally {
            System.clearProperty(DirectWrite.TEST_FAULT);
        }
        assertEquals(before, lakeFiles(db), "the written files were deleted");
        assertEquals("0", differences(db), "hot rows rolled back with the transaction");
        assertVerifies(db);
    }

    @Test
    void aFailureAfterTheLakeCommitIsRolledBackByTheNextWrite() throws IOException {
        TestEnv.Db db = directTable();
        String s = db.value("SELECT lake_snapshot_id FROM tierdb.cutline");
        Dataset<Row> batch = batch(db);
        System.setProperty(DirectWrite.TEST_FAULT, "direct-after-lake-commit");
        try {
            assertThrows(IllegalStateException.class, () -> TierDBSpark.write(batch, db.options("ev_tz").build()));
        } finally {
            System.clearProperty(DirectWrite.TEST_FAULT);
        }
        // the lake holds a snapshot nothing published: readers at S do not see it
        assertEquals(s, db.value("SELECT lake_snapshot_id FROM tierdb.cutline"));
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'"));
        assertEquals("0", differences(db));
        assertSeamMatchesPostgres(db);

        // the retry rolls the lake back to S first, then commits once
        TierDBSpark.write(batch, db.options("ev_tz").build());
        applyToCopy(db);
        assertEquals("1", db.value("SELECT count(*) FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'"));
        assertNotEquals(s, db.value("SELECT lake_snapshot_id FROM tierdb.cutline"));
        assertEquals("0", differences(db));
        assertSeamMatchesPostgres(db);
        assertVerifies(db);
    }

    @Test
    void rowsPostgresWouldRefuseAreRefusedBeforeAnythingIsWritten() throws IOException {
        TestEnv.Db db = directTable();
        db.exec("ALTER TABLE ev_tz ADD COLUMN tag text NOT NULL DEFAULT 't';"
                + " ALTER TABLE ev_tz_src ADD COLUMN tag text NOT NULL DEFAULT 't'");
        db.runOnce("2d");  // carries the new column into the lake's schema
        openLake(db);
        String s = db.value("SELECT lake_snapshot_id FROM tierdb.cutline");
        List<Path> before = lakeFiles(db);
        String cold = " FROM ev_tz_src WHERE id % 7 = 0 AND ts < " + cutline(db);
        Dataset<Row> nulls = rows(db, "SELECT " + COLUMNS + ", CASE WHEN id % 2 = 0 THEN NULL ELSE 'x' END AS tag" + cold);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TierDBSpark.write(nulls, db.options("ev_tz").build()));
        assertTrue(e.getMessage().contains("null value in column \"tag\""), e.getMessage());

        Dataset<Row> badUuid = rows(db, "SELECT " + COLUMNS.replace("uid", "'not-a-uuid' AS uid") + ", 'x' AS tag" + cold);
        e = assertThrows(IllegalArgumentException.class, () -> TierDBSpark.write(badUuid, db.options("ev_tz").build()));
        assertTrue(e.getMessage().contains("\"uid\" is not a uuid"), e.getMessage());

        assertEquals(s, db.value("SELECT lake_snapshot_id FROM tierdb.cutline"));
        assertEquals(before, lakeFiles(db));
        assertEquals("0", differences(db));
    }

    @Test
    void aTableWithACheckConstraintIsWrittenThroughPostgres() throws IOException {
        TestEnv.Db db = directTable();
        db.exec("ALTER TABLE ev_tz ADD CONSTRAINT positive CHECK (amount > -100000)");
        assertEquals("it has the CHECK constraint positive",
                db.value("SELECT tierdb.direct_files_refusal('ev_tz')"));
        Dataset<Row> batch = batch(db);

        TierDBSpark.write(batch, db.options("ev_tz").build());
        applyToCopy(db);

        // committed by the server from the transaction's delta rows, not by the driver
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"));
        String opId = db.value("SELECT op_id FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'");
        assertEquals(0, executorFiles(db, opId));
        assertEquals("0", differences(db));

        // and Postgres checks the constraint
        Dataset<Row> violating = rows(db, "SELECT " + COLUMNS.replace("amount", "-200000.00::numeric(12,2) AS amount")
                + " FROM ev_tz_src WHERE id = 7");
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> TierDBSpark.write(violating, db.options("ev_tz").build()));
        assertTrue(String.valueOf(e.getMessage()).contains("positive"), e.getMessage());
    }
}
