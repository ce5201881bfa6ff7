/*
 * MirroredTest: a mirrored table (docs/mirrored.md) has no cut-line, so
 * TierDBSpark.read serves its heap, which holds every row, and write and
 * delete are plain heap changes, whatever the tier key; the daemon's pump
 * then carries them into the lake, which Spark's Iceberg runtime reads as
 * the heap holds it.
 */
package io.tierdb.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Properties;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

class MirroredTest {
    private final TestEnv env = TestEnv.get();

    private Dataset<Row> rows(TestEnv.Db db, String sql) {
        return env.spark.read().jdbc(db.jdbcUrl, "(" + sql + ") AS q", new Properties());
    }

    @Test
    void readsServeTheHeapAndWritesChangeItThenTheMirrorFollows() {
        TestEnv.Db db = env.newDatabase();
        db.exec("CREATE TABLE mt (id bigint PRIMARY KEY, ts timestamptz NOT NULL, note text, amount numeric(10,2));"
                + " INSERT INTO mt SELECT g, timestamptz '2024-01-01 00:00+00' + g * interval '1 hour', 'n' || g,"
                + " g / 4.0 FROM generate_series(1, 500) g");
        db.register("public.mt", "id", "ts", "--mode", "mirrored");
        db.runOnce("0"); // the initial copy
        SeamOptions options = db.options("mt").build();
        try (SeamRead read = TierDBSpark.read(env.spark, options)) {
            assertFalse(read.cutline().isPresent(), "a mirrored table has no cut-line");
            Compare.assertMatchesTransparentRead(db, "mt", read.dataframe());
        }

        // old and new tier keys alike go to the heap
        TierDBSpark.write(rows(db, "SELECT g + 1000 AS id, timestamptz '2020-01-01 00:00+00' + g * interval '9 days'"
                + " AS ts, 'spark ' || g AS note, g::numeric(10,2) AS amount FROM generate_series(1, 50) g"), options);
        TierDBSpark.delete(rows(db, "SELECT id, ts FROM mt WHERE id % 10 = 0"), options);
        assertEquals("495", db.value("SELECT count(*) FROM mt")); // 500 + 50 - 55
        assertEquals("45", db.value("SELECT count(*) FROM mt WHERE note LIKE 'spark %'"));
        try (SeamRead read = TierDBSpark.read(env.spark, options)) {
            Compare.assertMatchesTransparentRead(db, "mt", read.dataframe());
        }

        // the pump carries the changes into the lake
        db.runOnce("0");
        String location = db.value("SELECT lake_table_ref FROM tierdb.tables");
        String snapshot = db.value("SELECT lake_snapshot_id FROM tierdb.cutline");
        Dataset<Row> lake = env.spark.read().format("iceberg").option("snapshot-id", snapshot).load(location);
        Compare.assertSameRows(Compare.transparentRead(db, "mt"), lake.select("id", "ts", "note", "amount"),
                "the mirror at S");
    }
}
