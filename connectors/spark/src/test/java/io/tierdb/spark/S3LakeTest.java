/*
 * S3LakeTest: tierdb-spark on a lake in S3 (issue 17 §2).  The daemon tiers
 * and folds into an s3:// warehouse on S3Proxy (TestEnv starts it and gives
 * the Postgres server and the daemon its TIERDB_S3_* variables); the seam
 * read loads the lake through Hadoop's S3A, configured on the session the
 * way docs/s3.md tells users (TestEnv.s3aSettings), and equals the
 * extension's transparent read, which reads the same objects in the
 * backend: after tiering, with routed corrections in the delta, after a
 * TierDBSpark.write of cold and hot rows and a TierDBSpark.delete, and after
 * the fold that puts those into the lake as equality deletes and new rows.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Properties;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

class S3LakeTest {
    private final TestEnv env = TestEnv.get();

    private Dataset<Row> rows(TestEnv.Db db, String sql) {
        return env.spark.read().jdbc(db.jdbcUrl, "(" + sql + ") AS q", new Properties());
    }

    private void assertSeamMatchesPostgres(TestEnv.Db db, String table, String what) {
        try (SeamRead read = TierDBSpark.read(env.spark, db.options(table).numPartitions(3).build())) {
            Compare.assertSameRows(Compare.transparentRead(db, table), read.dataframe(), table + ": " + what);
        }
    }

    /** The lake's current metadata object, which must be in the test's S3 warehouse. */
    private static String metadataLocation(TestEnv.Db db) {
        String location = db.value("SELECT lake_props ->> 'metadata_location' FROM tierdb.cutline");
        assertTrue(location.startsWith(db.warehouse + "/"), "the lake is not under " + db.warehouse + ": " + location);
        return location;
    }

    /** content values (0 data, 1 position deletes, 2 equality deletes) of the lake's current files. */
    private List<Row> fileContents(TestEnv.Db db) {
        String table = SeamPlan.lakeLocation(metadataLocation(db));
        return env.spark.read().format("iceberg").load(table + "#files")
                .groupBy("content").count().orderBy("content").collectAsList();
    }

    @Test
    void seamReadAndRoutedWritesOnAnS3Lake() {
        Tables.Fixture f = Tables.TIMESTAMPTZ;
        TestEnv.Db db = env.newS3Database();
        assertTrue(db.warehouse.startsWith("s3://"), db.warehouse);
        Tables.createTiered(db, f);
        metadataLocation(db);
        assertTrue(Long.parseLong(db.value("SELECT count(*) FROM ev_tz_src")) > Long.parseLong(
                db.value("SELECT count(*) FROM ev_tz")), "rows left the heap for the lake");
        assertSeamMatchesPostgres(db, f.name, "after tiering");

        // corrections through the extension's routed functions
        Tables.correct(db, f);
        assertTrue(Long.parseLong(db.value("SELECT count(*) FROM tierdb.delta")) >= 8, "corrections in the delta");
        assertSeamMatchesPostgres(db, f.name, "with corrections in the delta");

        // a routed write and delete through tierdb-spark: cold rows to the delta, hot rows to the heap
        String tLiteral = db.value("SELECT tierdb.tier_key_literal(tier_key_hi, 'timestamptz') FROM tierdb.cutline");
        Dataset<Row> batch = rows(db, "SELECT id + 500000 AS id, ts, 'written ' || id AS note, amount, reading, ok,"
                + " uid, blob, day, seen FROM ev_tz_src WHERE id % 50 = 0"
                + " UNION ALL SELECT id, ts, 'rewritten' AS note, amount, reading, ok, uid, blob, day, seen"
                + " FROM ev_tz_src WHERE id % 97 = 0 AND ts < " + tLiteral);
        long written = batch.count();
        TierDBSpark.write(batch, db.options(f.name).build());
        Dataset<Row> gone = rows(db, "SELECT id, ts FROM ev_tz_src WHERE id % 89 = 0 AND id % 97 <> 0");
        assertTrue(gone.count() > 0, "keys to delete");
        TierDBSpark.delete(gone, db.options(f.name).build());
        assertSeamMatchesPostgres(db, f.name, "after a routed write and delete");
        try (SeamRead read = TierDBSpark.read(env.spark, db.options(f.name).build())) {
            Dataset<Row> df = read.dataframe();
            // (Tables.correct's new cold pk is 1000000 + id)
            assertEquals(written, df.filter(col("id").between(500000, 999999).or(col("note").equalTo(lit("rewritten"))))
                    .count(),
                    "the written rows, through the seam read");
            assertEquals(0, df.filter(col("id").mod(89).equalTo(0).and(col("id").mod(97).notEqual(0))
                    .and(col("id").lt(500000))).count(), "the deleted keys");
        }

        // the fold writes the delta into the S3 lake: equality deletes and new data files
        String before = db.value("SELECT lake_snapshot_id FROM tierdb.cutline");
        db.runOnce(f.lag);
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"));
        assertTrue(!before.equals(db.value("SELECT lake_snapshot_id FROM tierdb.cutline")), "the fold committed");
        List<Row> contents = fileContents(db);
        assertTrue(contents.stream().anyMatch(r -> r.getInt(0) == 2), "equality deletes in the lake: " + contents);
        assertSeamMatchesPostgres(db, f.name, "after the fold");
    }

    /**
     * A direct table on S3: the executors write the cold rows' files through
     * S3A and the driver commits them (DirectWrite); Postgres reads them in the
     * backend, and a direct commit of the server's own then builds on that
     * commit.
     */
    @Test
    void directWritesOnAnS3Lake() {
        Tables.Fixture f = DirectWriteTest.KEYED;
        TestEnv.Db db = env.newS3Database();
        Tables.createTiered(db, f, "--mode", "direct");
        String tLiteral = db.value("SELECT tierdb.tier_key_literal(tier_key_hi, 'timestamptz') FROM tierdb.cutline");
        Dataset<Row> batch = rows(db, "SELECT id, ts, 'direct ' || id AS note, amount, reading, ok, uid, blob, day, seen"
                + " FROM ev_tz_src WHERE id % 7 = 0 AND ts < " + tLiteral
                + " UNION ALL SELECT id + 100000, ts, 'new', amount, reading, ok, uid, blob, day, seen"
                + " FROM ev_tz_src WHERE id % 11 = 0");
        TierDBSpark.write(batch, db.options(f.name).build());
        assertEquals("1", db.value("SELECT count(*) FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'"));
        metadataLocation(db);
        assertEquals(String.valueOf(batch.filter(col("note").startsWith("direct ")).count()),
                db.transparentValue("SELECT count(*) FROM ev_tz WHERE note LIKE 'direct %'"));
        assertSeamMatchesPostgres(db, f.name, "after a direct write from Spark");

        // the server's own direct commit on top of the one Java made
        db.exec("SET tierdb.transparent_reads = on; UPDATE ev_tz SET note = 'from postgres' WHERE id % 14 = 0 AND ts < "
                + tLiteral);
        assertEquals("2", db.value("SELECT count(*) FROM tierdb.op_log WHERE details ->> 'kind' = 'direct'"));
        assertSeamMatchesPostgres(db, f.name, "after the server's direct commit");
    }
}
