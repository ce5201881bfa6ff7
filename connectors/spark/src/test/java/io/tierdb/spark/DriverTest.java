/*
 * DriverTest: pgjdbc supplied to a Spark job with --jars or --packages is
 * invisible to java.sql.DriverManager (it lives in Spark's added-jars class
 * loader), so anything that asks DriverManager for a driver by URL gets "No
 * suitable driver".  Here the same situation is made by deregistering
 * pgjdbc's driver from DriverManager while its class stays loadable: the
 * library's own connections and a whole seam read and routed write still
 * work, because the library loads the driver class itself and every Spark
 * JDBC read names org.postgresql.Driver.  Without pgjdbc the error names the
 * artifact to add.
 */
package io.tierdb.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.function.Predicate;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

class DriverTest {
    private final TestEnv env = TestEnv.get();

    /**
     * Runs body with the drivers that `hide` picks deregistered from
     * DriverManager, then restores its list in the old order, followed by
     * what body registered (Spark's wrapper of a driver it was told to use):
     * DriverManager hands out the first driver that accepts a URL, and the
     * other tests' own Spark reads, which name no driver, need pgjdbc's
     * driver first, not Spark's wrapper.
     */
    private static void withoutDrivers(Predicate<Driver> hide, Runnable body) throws SQLException {
        List<Driver> before = Collections.list(DriverManager.getDrivers());
        List<Driver> hidden = new ArrayList<>();
        for (Driver d : before) {
            if (hide.test(d)) {
                DriverManager.deregisterDriver(d);
                hidden.add(d);
            }
        }
        assertTrue(!hidden.isEmpty(), "pgjdbc's driver was not registered with DriverManager");
        try {
            body.run();
        } finally {
            List<Driver> added = Collections.list(DriverManager.getDrivers());
            added.removeAll(before);
            for (Driver d : Collections.list(DriverManager.getDrivers())) {
                DriverManager.deregisterDriver(d);
            }
            for (Driver d : before) {
                DriverManager.registerDriver(d);
            }
            for (Driver d : added) {
                DriverManager.registerDriver(d);
            }
        }
    }

    private static boolean isPgjdbc(Driver d) {
        return d.getClass().getName().equals(PgDriver.CLASS_NAME);
    }

    @Test
    void sparkReadsNameTheDriver() {
        SeamOptions o = SeamOptions.builder().jdbcUrl("jdbc:postgresql://localhost/x").table("t").user("u").build();
        Properties p = SeamPlan.sparkReadProperties(o);
        assertEquals(PgDriver.CLASS_NAME, p.getProperty("driver"));
        assertEquals("u", p.getProperty("user"));
        assertEquals(SeamPlan.SESSION_SETUP, p.getProperty("sessionInitStatement"));
    }

    /** With no JDBC driver of any kind in DriverManager (Spark's wrappers too), the library still connects. */
    @Test
    void ownConnectionsDoNotNeedDriverManager() throws SQLException {
        TestEnv.Db db = env.newDatabase();
        SeamOptions o = db.options("public.t").build();
        withoutDrivers(d -> true, () -> {
            assertThrows(SQLException.class, () -> DriverManager.getConnection(db.jdbcUrl));
            try (Connection conn = Catalog.connect(o)) {
                assertTrue(conn.isValid(5));
            } catch (SQLException e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    void readAndWriteWorkWhileDriverManagerDoesNotKnowPgjdbc() throws SQLException {
        TestEnv.Db db = env.newDatabase();
        Tables.createTiered(db, Tables.TIMESTAMPTZ);
        Properties named = PgDriver.forSparkRead(new Properties());
        Dataset<Row> source = env.spark.read().jdbc(db.jdbcUrl, "(SELECT id + 700000 AS id, ts, 'driver test' AS note,"
                + " amount, reading, ok, uid, blob, day, seen FROM ev_tz_src WHERE id % 101 = 0) AS q", named);
        Dataset<Row> batch = env.spark.createDataFrame(source.collectAsList(), source.schema());
        long expected = Long.parseLong(db.transparentValue("SELECT count(*) FROM ev_tz")) + batch.count();

        withoutDrivers(DriverTest::isPgjdbc, () -> {
            TierDBSpark.write(batch, db.options("public.ev_tz").build());
            try (SeamRead read = TierDBSpark.read(env.spark, db.options("public.ev_tz").build())) {
                assertEquals(expected, read.dataframe().count());
            }
        });
        assertEquals(String.valueOf(batch.count()),
                db.transparentValue("SELECT count(*) FROM ev_tz WHERE note = 'driver test'"));
        // the batch reached both tiers: cold rows went through the routed functions into the delta
        assertTrue(Long.parseLong(db.value("SELECT count(*) FROM tierdb.delta")) > 0, "no cold row in the batch");
    }

    @Test
    void aMissingDriverNamesTheArtifact() {
        ClassLoader withoutPgjdbc = new URLClassLoader(new URL[0], null);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> PgDriver.load(withoutPgjdbc));
        String message = e.getMessage();
        for (String part : List.of("org.postgresql.Driver", "org.postgresql:postgresql", "--packages", "--jars")) {
            assertTrue(message.contains(part), "expected \"" + part + "\" in: " + message);
        }
        // the library's own loader has it (the test classpath), so the fallback finds it
        assertEquals(PgDriver.CLASS_NAME, PgDriver.load(withoutPgjdbc, DriverTest.class.getClassLoader())
                .getClass().getName());
    }
}
