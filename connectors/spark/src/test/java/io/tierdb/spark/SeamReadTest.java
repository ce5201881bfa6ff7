/*
 * SeamReadTest: TierDBSpark.read over tables tiered by the real daemon with
 * routed corrections in the delta equals the extension's transparent read,
 * for every tier-key family; the pin is a committed read_pins row with
 * expires_at = now() + pinTtl, removed by close; filters and column pruning
 * reach both the JDBC and the Iceberg scans; a tiering advance and a fold
 * attempt while the read is open leave its pinned view intact, and the fold
 * proceeds once it is closed.
 */
package io.tierdb.spark;

import static org.apache.spark.sql.functions.col;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SeamReadTest {
    private final TestEnv env = TestEnv.get();

    @ParameterizedTest(name = "tier key {0}")
    @ValueSource(strings = {"bigint", "timestamptz", "timestamp", "date"})
    void readEqualsTheTransparentRead(String family) {
        Tables.Fixture f = Tables.ALL.get(family);
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, f);
        Tables.correct(db, f);
        String cut = db.value("SELECT tier_key_hi FROM tierdb.cutline");
        String snapshot = db.value("SELECT lake_snapshot_id FROM tierdb.cutline");
        assertTrue(Long.parseLong(db.value("SELECT count(*) FROM tierdb.delta")) >= 8, "corrections in the delta");

        try (SeamRead read = TierDBSpark.read(env.spark, db.options(f.name).numPartitions(3).build())) {
            assertEquals(Long.parseLong(cut), read.cutline().getAsLong());
            assertEquals(Long.parseLong(snapshot), read.snapshotId().getAsLong());
            Dataset<Row> df = read.dataframe();
            Compare.assertMatchesTransparentRead(db, f.name, df);

            // a filter across the seam and a projection give the transparent read's answer
            Dataset<Row> ref = Compare.transparentRead(db, f.name);
            Compare.assertSameRows(ref.filter(col("id").mod(3).equalTo(1)).select("id", f.tierKey, "note"),
                    df.filter(col("id").mod(3).equalTo(1)).select("id", f.tierKey, "note"), f.name + " filtered");
        }
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.read_pins"));
    }

    /**
     * Spark's JDBC source takes a Postgres timestamp (without zone) in the
     * JVM's zone; the lake's value, Spark's TIMESTAMP_NTZ, must land on the
     * same instant when the session's zone is another one.
     */
    @Test
    void zonelessTimestampsMatchInAnotherSessionZone() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.TIMESTAMP);
        Tables.correct(db, Tables.TIMESTAMP);
        SparkSession elsewhere = env.spark.newSession();
        elsewhere.conf().set("spark.sql.session.timeZone", "America/St_Johns");
        elsewhere.conf().set("spark.sql.catalog.default_iceberg", "org.apache.iceberg.spark.SparkCatalog");
        elsewhere.conf().set("spark.sql.catalog.default_iceberg.type", "hadoop");
        elsewhere.conf().set("spark.sql.catalog.default_iceberg.warehouse", env.root.resolve("warehouse").toString());
        assertNotEquals(java.util.TimeZone.getDefault().getID(), "America/St_Johns");
        try (SeamRead read = TierDBSpark.read(elsewhere, db.options("ev_ts").build())) {
            Properties p = new Properties();
            p.setProperty("sessionInitStatement", "SET tierdb.transparent_reads = on");
            Compare.assertSameRows(elsewhere.read().jdbc(db.jdbcUrl, "ev_ts", p), read.dataframe(), "ev_ts elsewhere");
        }
    }

    @Test
    void splitPointsAndLakeLocation() {
        assertEquals(List.of(25L, 50L, 75L), SeamPlan.splitPoints(0, 99, 4));
        assertEquals(List.of(1L), SeamPlan.splitPoints(0, 1, 4));  // never an empty or repeated slice
        assertEquals(List.of(0L), SeamPlan.splitPoints(Long.MIN_VALUE, Long.MAX_VALUE, 2));
        assertEquals("/lake/public/ev", SeamPlan.lakeLocation("/lake/public/ev/metadata/v3.metadata.json"));
        assertEquals("s3://b/w/public/ev", SeamPlan.lakeLocation("s3://b/w/public/ev/metadata/v1.metadata.json"));
    }

    @Test
    void filtersAndPruningReachBothBranches() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.TIMESTAMPTZ);
        try (SeamRead read = TierDBSpark.read(env.spark, db.options("public.ev_tz").build())) {
            Dataset<Row> q = read.dataframe().filter(col("id").equalTo(42)).select("id", "note");
            String plan = q.queryExecution().executedPlan().toString();
            // the JDBC scans (heap and delta) get the filter and only the columns needed
            assertTrue(plan.contains("PushedFilters: [*IsNotNull(id), *EqualTo(id,42)]"), plan);
            assertTrue(plan.contains("ReadSchema: struct<id:bigint,note:string>"), plan);
            // the Iceberg scan gets the filter together with the pinned T, and reads only the columns
            // the query and the T filter need
            String lake = plan.lines().filter(l -> l.contains("BatchScan")).findFirst().orElseThrow();
            assertTrue(lake.contains("id = 42") && lake.contains("ts < "), lake);
            assertTrue(lake.matches(".*\\[id#\\d+L, ts#\\d+, note#\\d+\\].*"), lake);
            assertEquals(List.of(42L), q.select("id").as(org.apache.spark.sql.Encoders.LONG()).collectAsList());
        }
    }

    @Test
    void pinIsCommittedWithItsTtlAndReleasedByClose() {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.DATE);
        SeamRead read = TierDBSpark.read(env.spark, db.options("ev_d").pinTtl(Duration.ofMinutes(7)).build());
        List<List<String>> pins = db.query("SELECT pin_id, pinned_tier_key_hi, pinned_lake_snapshot_id,"
                + " extract(epoch FROM expires_at - started_at) FROM tierdb.read_pins");
        assertEquals(1, pins.size());
        assertEquals(String.valueOf(read.pinId()), pins.get(0).get(0));
        assertEquals(db.value("SELECT tier_key_hi FROM tierdb.cutline"), pins.get(0).get(1));
        assertEquals(db.value("SELECT lake_snapshot_id FROM tierdb.cutline"), pins.get(0).get(2));
        assertEquals(420.0, Double.parseDouble(pins.get(0).get(3)), 0.0);
        assertEquals(db.value("SELECT floor(extract(epoch FROM expires_at))::bigint FROM tierdb.read_pins"),
                String.valueOf(read.expiresAt().getEpochSecond()), "expires_at as the read reports it");
        read.close();
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.read_pins"));
        read.close();  // idempotent
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.read_pins"));
    }

    @Test
    void advanceAndFoldWhileOpenKeepThePinnedView() {
        Tables.Fixture f = Tables.TIMESTAMPTZ;
        TestEnv.Db db = env.newDatabase();
        db.exec(f.ddl);
        db.exec("CREATE TABLE ev_tz_src AS SELECT * FROM ev_tz");
        db.register("public.ev_tz", f.pk, f.tierKey);
        db.runOnce("5d");
        long t1 = Long.parseLong(db.value("SELECT tier_key_hi FROM tierdb.cutline"));
        long s1 = Long.parseLong(db.value("SELECT lake_snapshot_id FROM tierdb.cutline"));

        SeamRead read = TierDBSpark.read(env.spark, db.options("public.ev_tz").build());
        try {
            Compare.assertMatchesTransparentRead(db, "ev_tz", read.dataframe());

            // tiering advances T and S; the pinned heap partitions stay
            String log = db.runOnce("2d");
            long t2 = Long.parseLong(db.value("SELECT tier_key_hi FROM tierdb.cutline"));
            assertTrue(t2 > t1, "T advanced: " + log);
            assertTrue(log.contains("read pin"), log);
            assertEquals(t1, read.cutline().getAsLong());
            assertEquals(s1, read.snapshotId().getAsLong());
            Compare.assertMatchesTransparentRead(db, "ev_tz", read.dataframe());

            // a correction below the pinned T: the fold waits for the pin; the open read's
            // cold tier (lake at S and delta) is as it was when it opened, a new read sees it
            db.exec("SELECT tierdb_upsert('ev_tz', to_jsonb(s) || '{\"note\": \"while pinned\"}') FROM ev_tz_src s"
                    + " WHERE s.id IN (10, 11)");
            long s2 = Long.parseLong(db.value("SELECT lake_snapshot_id FROM tierdb.cutline"));
            db.runOnce("2d");
            assertEquals("2", db.value("SELECT count(*) FROM tierdb.delta"), "the fold waited for the pin");
            assertEquals(String.valueOf(s2), db.value("SELECT lake_snapshot_id FROM tierdb.cutline"));
            assertEquals(0, read.dataframe().filter(col("note").equalTo("while pinned")).count());
            try (SeamRead second = TierDBSpark.read(env.spark, db.options("public.ev_tz").build())) {
                Compare.assertMatchesTransparentRead(db, "ev_tz", second.dataframe());
                assertEquals(2, second.dataframe().filter(col("note").equalTo("while pinned")).count());
            }
        } finally {
            read.close();
        }
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.read_pins"));

        db.runOnce("2d");
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.delta"), "the fold ran once the pin was gone");
        try (SeamRead after = TierDBSpark.read(env.spark, db.options("public.ev_tz").build())) {
            assertNotEquals(s1, after.snapshotId().getAsLong());
            Compare.assertMatchesTransparentRead(db, "ev_tz", after.dataframe());
            assertEquals(2, after.dataframe().filter(col("note").equalTo("while pinned")).count());
        }
    }
}
