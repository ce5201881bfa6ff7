/*
 * ErrorMessagesTest: each problem the library refuses is named in its
 * error: an unknown table, an unregistered one, a
 * Spark session without an Iceberg catalog (and lakeTable as the way around
 * a path), a reading role without SELECT on the catalog tables that map
 * the lake's fields to the columns, and batches whose columns do not match
 * the table.  Refused
 * writes leave the table as it was and refused reads leave no pin.
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
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ErrorMessagesTest {
    private final TestEnv env = TestEnv.get();
    private TestEnv.Db db;

    @BeforeAll
    void tieredTable() {
        db = env.newDatabase();
        Tables.createTiered(db, Tables.TIMESTAMPTZ);
    }

    private static String message(Class<? extends Throwable> type, Executable call) {
        return assertThrows(type, call).getMessage();
    }

    private static void assertContains(String message, String... parts) {
        for (String part : parts) {
            assertTrue(message.contains(part), "expected \"" + part + "\" in: " + message);
        }
    }

    private Dataset<Row> rows(String sql) {
        return env.spark.read().jdbc(db.jdbcUrl, "(" + sql + ") AS q", new Properties());
    }

    private void assertNoPins() {
        assertEquals("0", db.value("SELECT count(*) FROM tierdb.read_pins"));
    }

    @Test
    void unknownTable() {
        SeamOptions o = db.options("public.no_such_table").build();
        assertContains(message(IllegalArgumentException.class, () -> TierDBSpark.read(env.spark, o)),
                "table \"public.no_such_table\" does not exist");
        assertContains(message(IllegalArgumentException.class,
                () -> TierDBSpark.write(rows("SELECT 1 AS id"), o)), "does not exist");
    }

    @Test
    void unregisteredTable() {
        db.exec("CREATE TABLE IF NOT EXISTS plain (id bigint, ts timestamptz)");
        SeamOptions o = db.options("plain").build();
        assertContains(message(IllegalArgumentException.class, () -> TierDBSpark.read(env.spark, o)),
                "table public.plain is not registered with TierDB",
                "tierdb register --table public.plain --pk <column>[,<column>] --tier-key <column>");
        assertContains(message(IllegalArgumentException.class,
                () -> TierDBSpark.delete(rows("SELECT 1::bigint AS id"), o)), "is not registered with TierDB");
        assertNoPins();
    }

    @Test
    void hybridIsIgnoredOnTieredTables() {
        // the seed: tiered tables always read two-tier at the stored cut-line
        SeamOptions hybrid = db.options("ev_tz").hybrid(true).hybridLag(3600).build();
        try (SeamRead plain = TierDBSpark.read(env.spark, db.options("ev_tz").build());
             SeamRead read = TierDBSpark.read(env.spark, hybrid)) {
            assertEquals(plain.cutline(), read.cutline());
            assertEquals(plain.dataframe().count(), read.dataframe().count());
        }
        assertNoPins();
    }

    @Test
    void aSessionWithoutAnIcebergCatalog() {
        SparkSession bare = env.spark.newSession();
        assertTrue(bare.conf().getOption("spark.sql.catalog.default_iceberg").isEmpty());
        assertContains(message(IllegalStateException.class, () -> TierDBSpark.read(bare, db.options("ev_tz").build())),
                "the Spark session has no Iceberg catalog",
                ".config(\"spark.sql.catalog.default_iceberg\", \"org.apache.iceberg.spark.SparkCatalog\")",
                "lakeTable");
        assertNoPins();  // the pin of a read that could not be built is released
    }

    @Test
    void lakeTableLoadsTheLakeThroughACatalog() {
        // a Hadoop catalog whose warehouse is the lake: the table is <catalog>.public.ev_tz
        String catalog = "lake_" + db.name;
        SparkSession session = env.spark.newSession();
        session.conf().set("spark.sql.catalog." + catalog, "org.apache.iceberg.spark.SparkCatalog");
        session.conf().set("spark.sql.catalog." + catalog + ".type", "hadoop");
        session.conf().set("spark.sql.catalog." + catalog + ".warehouse", db.lake.toString());
        try (SeamRead read = TierDBSpark.read(session, db.options("ev_tz").lakeTable(catalog + ".public.ev_tz").build())) {
            Compare.assertMatchesTransparentRead(db, "ev_tz", read.dataframe());
        }
    }

    @Test
    void batchesThatDoNotMatchTheTable() {
        SeamOptions o = db.options("ev_tz").build();
        List<List<String>> before = db.query("SELECT count(*), (SELECT count(*) FROM tierdb.delta) FROM ev_tz");
        Dataset<Row> good = rows("SELECT id + 700000 AS id, ts, note FROM ev_tz_src WHERE id % 500 = 0");

        assertContains(message(IllegalArgumentException.class,
                () -> TierDBSpark.write(good.withColumn("colour", lit("red")), o)),
                "the batch does not match table public.ev_tz: it has no column colour");
        assertContains(message(IllegalArgumentException.class, () -> TierDBSpark.write(good.drop("ts"), o)),
                "the batch for table public.ev_tz lacks the key column ts");
        assertContains(message(IllegalArgumentException.class,
                () -> TierDBSpark.write(good.withColumn("id", col("id").cast("string")), o)),
                "id is string in the batch but bigint (bigint) in the table");
        assertContains(message(IllegalArgumentException.class, () -> TierDBSpark.delete(good, o)),
                "it has no column note among its primary-key and tier-key columns");
        assertContains(message(IllegalArgumentException.class, () -> TierDBSpark.delete(good.select("id"), o)),
                "lacks the key column ts");
        assertEquals(before, db.query("SELECT count(*), (SELECT count(*) FROM tierdb.delta) FROM ev_tz"));
    }

    @Test
    void aReaderWithoutTheColumnCatalogsIsToldWhatToGrant() {
        String role = "reader_" + db.name;
        db.exec("CREATE ROLE " + role + " LOGIN; GRANT SELECT ON ev_tz, tierdb.delta TO " + role);
        SeamOptions o = SeamOptions.builder().jdbcUrl(db.jdbcUrl.replace("user=postgres", "user=" + role))
                .table("ev_tz").build();
        assertContains(message(IllegalStateException.class, () -> TierDBSpark.read(env.spark, o)),
                "cannot read the catalog tables that map the lake's fields of public.ev_tz to its columns",
                "permission denied", "GRANT SELECT ON tierdb.columns, tierdb.column_defaults TO \"" + role + "\"");
        assertNoPins();
        db.exec("GRANT SELECT ON tierdb.columns, tierdb.column_defaults TO " + role);
        try (SeamRead read = TierDBSpark.read(env.spark, o)) {
            Compare.assertMatchesTransparentRead(db, "ev_tz", read.dataframe());
        }
        assertNoPins();
    }

    @Test
    void optionsAreChecked() {
        assertContains(message(IllegalArgumentException.class,
                () -> SeamOptions.builder().jdbcUrl("postgres://x/y").table("t").build()), "jdbc:postgresql://");
        assertContains(message(IllegalArgumentException.class,
                () -> SeamOptions.builder().jdbcUrl(db.jdbcUrl).build()), "needs table(");
        assertContains(message(IllegalArgumentException.class,
                () -> db.options("ev_tz").pinTtl(java.time.Duration.ZERO).build()), "pinTtl must be a positive");
        SeamOptions o = db.options("ev_tz").password("secret").numPartitions(4).build();
        assertTrue(!o.toString().contains("secret"));
        assertEquals(SeamOptions.DEFAULT_PIN_TTL, o.pinTtl());
        assertEquals(SeamOptions.DEFAULT_MIRROR_WAIT, o.mirrorWait());
    }
}
