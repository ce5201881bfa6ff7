/*
 * MirroredTest: a mirrored table (docs/mirrored.md) has no cut-line, so
 * TierDBSpark.read serves its heap, which holds every row, and write and
 * delete are plain heap changes, whatever the tier key; the daemon's pump
 * then carries them into the lake, which Spark's Iceberg runtime reads as
 * the heap holds it.  With hybrid(true) the read takes the rows below the
 * capture's split from the mirror and the rest from the heap, or the heap
 * alone when the mirror does not catch up within mirrorWait.
 */
package io.tierdb.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

class MirroredTest {
    private final TestEnv env = TestEnv.get();

    private Dataset<Row> rows(TestEnv.Db db, String sql) {
        return env.spark.read().jdbc(db.jdbcUrl, "(" + sql + ") AS q", new Properties());
    }

    /** 500 rows an hour apart, registered mirrored and copied into the lake. */
    private static void mirroredTable(TestEnv.Db db, String name) {
        db.exec("CREATE TABLE " + name + " (id bigint PRIMARY KEY, ts timestamptz NOT NULL, note text,"
                + " amount numeric(10,2)); INSERT INTO " + name + " SELECT g, timestamptz '2024-01-01 00:00+00'"
                + " + g * interval '1 hour', 'n' || g, g / 4.0 FROM generate_series(1, 500) g");
        db.register("public." + name, "id", "ts", "--mode", "mirrored");
        db.runOnce("0"); // the initial copy
    }

    @Test
    void readsServeTheHeapAndWritesChangeItThenTheMirrorFollows() {
        TestEnv.Db db = env.newDatabase();
        mirroredTable(db, "mt");
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

    @Test
    void hybridReadsSplitBetweenTheMirrorAndTheHeap() throws Exception {
        TestEnv.Db db = env.newDatabase();
        mirroredTable(db, "hy");
        db.exec("UPDATE hy SET note = 'changed' WHERE id % 7 = 0; DELETE FROM hy WHERE id % 11 = 0");
        SeamOptions hybrid = db.options("hy").hybrid(true).hybridLag(24 * 3600).mirrorWait(Duration.ofSeconds(60))
                .build();

        // the capture waits for the mirror to pass the WAL position of its start: daemon cycles until it is done
        AtomicBoolean captured = new AtomicBoolean();
        CompletableFuture<Void> pump = CompletableFuture.runAsync(() -> {
            while (!captured.get()) {
                db.runOnce("0");
            }
        });
        try (SeamRead read = TierDBSpark.read(env.spark, hybrid)) {
            captured.set(true);
            pump.get();
            assertTrue(read.cutline().isPresent(), "the read split at the capture's point");
            // the newest day (500 hours after the first row) stays on the heap side
            String split = db.value("SELECT tierdb.canonical_tier_key(max(ts) - interval '1 day') FROM hy");
            assertEquals(Long.parseLong(split), read.cutline().getAsLong());
            Compare.assertMatchesTransparentRead(db, "hy", read.dataframe());
        }

        // changes the mirror has not caught up with, and no pump: the read takes the heap alone
        db.exec("UPDATE hy SET note = 'late' WHERE id % 5 = 0");
        SeamOptions impatient = db.options("hy").hybrid(true).mirrorWait(Duration.ofMillis(300)).build();
        try (SeamRead read = TierDBSpark.read(env.spark, impatient)) {
            assertFalse(read.cutline().isPresent(), "a late mirror: the heap alone");
            Compare.assertMatchesTransparentRead(db, "hy", read.dataframe());
        }
    }

    @Test
    void aHeapWindowReadsTwoTierAndWritesBelowTheCutLineGoToTheDelta() {
        TestEnv.Db db = env.newDatabase();
        db.exec("CREATE TABLE hw (id bigint, ts timestamptz NOT NULL, note text, amount numeric(10,2),"
                + " PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts);"
                + " DO $$ BEGIN FOR d IN 0..9 LOOP EXECUTE format('CREATE TABLE %I PARTITION OF hw FOR VALUES"
                + " FROM (%L) TO (%L)', 'hw_' || d, timestamptz '2024-01-01 00:00+00' + d * interval '1 day',"
                + " timestamptz '2024-01-01 00:00+00' + (d + 1) * interval '1 day'); END LOOP; END $$;"
                + " INSERT INTO hw SELECT g, timestamptz '2024-01-01 00:00+00' + g * interval '20 minutes', 'n' || g,"
                + " g / 4.0 FROM generate_series(0, 719) g");
        db.register("public.hw", "id", "ts", "--mode", "mirrored", "--heap-retention", "3d");
        db.runOnce("0"); // the copy, then the days behind the window leave the heap
        String t = db.value("SELECT tier_key_hi FROM tierdb.cutline");
        assertTrue(Long.parseLong(t) > 1_704_067_200_000_000L, "T rose above the first day");

        // hybrid(true) is ignored: a heap window reads two-tier at the stored cut-line
        SeamOptions options = db.options("hw").hybrid(true).build();
        try (SeamRead read = TierDBSpark.read(env.spark, options)) {
            assertEquals(Long.parseLong(t), read.cutline().getAsLong());
            Compare.assertMatchesTransparentRead(db, "hw", read.dataframe());
        }
        // rows below T go to the delta, the others to the heap; the reads see both
        TierDBSpark.write(rows(db, "SELECT g + 5000 AS id, timestamptz '2024-01-02 00:00+00' + g * interval '1 minute'"
                + " AS ts, 'spark ' || g AS note, g::numeric(10,2) AS amount FROM generate_series(1, 20) g"
                + " UNION ALL SELECT 6000, timestamptz '2024-01-10 12:00+00', 'hot', 1"), options);
        assertEquals("20", db.value("SELECT count(*) FROM tierdb.delta"));
        try (SeamRead read = TierDBSpark.read(env.spark, options)) {
            Compare.assertMatchesTransparentRead(db, "hw", read.dataframe());
        }
        db.runOnce("0"); // the fold
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"));
        try (SeamRead read = TierDBSpark.read(env.spark, options)) {
            Compare.assertMatchesTransparentRead(db, "hw", read.dataframe());
        }
    }
}
