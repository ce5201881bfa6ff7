/*
 * PgDriver: finds the PostgreSQL JDBC driver (pgjdbc) the way Spark jobs
 * supply it.  With spark-submit --jars or --packages, pgjdbc is loaded by
 * Spark's added-jars class loader, and java.sql.DriverManager ignores drivers
 * of class loaders its caller cannot see: looking a driver up by URL then
 * fails with "No suitable driver".  So every Spark JDBC read names the driver
 * class (Spark then loads and registers it itself), and the library's own
 * connections load the class through the thread's context class loader and
 * connect through that driver directly, never through DriverManager.
 */
package io.tierdb.spark;

import java.sql.Connection;
import java.sql.Driver;
import java.sql.SQLException;
import java.util.Properties;

final class PgDriver {
    static final String CLASS_NAME = "org.postgresql.Driver";
    /** The Maven coordinates the library is built and tested against. */
    static final String ARTIFACT = "org.postgresql:postgresql:42.7.4";

    private PgDriver() {
    }

    /**
     * The driver, loaded by the thread's context class loader (where Spark
     * puts --jars and --packages) or else by the library's own.
     */
    static Driver load() {
        return load(Thread.currentThread().getContextClassLoader(), PgDriver.class.getClassLoader());
    }

    /** The driver from the first of the loaders (nulls skipped) that has it. */
    static Driver load(ClassLoader... loaders) {
        ClassNotFoundException missing = null;
        for (ClassLoader loader : loaders) {
            if (loader == null) {
                continue;
            }
            try {
                Class<?> cls = Class.forName(CLASS_NAME, true, loader);
                return (Driver) cls.getDeclaredConstructor().newInstance();
            } catch (ClassNotFoundException e) {
                missing = e;
            } catch (ReflectiveOperationException | ClassCastException e) {
                throw new IllegalStateException("tierdb-spark could not start the PostgreSQL JDBC driver "
                        + CLASS_NAME + ": " + e, e);
            }
        }
        throw new IllegalStateException("tierdb-spark needs the PostgreSQL JDBC driver (class " + CLASS_NAME
                + ", Maven artifact " + ARTIFACT + ") and it is not on the classpath: add it to the job, e.g. "
                + "spark-submit --packages " + ARTIFACT + " (or --jars postgresql-42.7.4.jar)", missing);
    }

    /** A connection through the driver itself; see the file comment for why not DriverManager. */
    static Connection connect(String url, Properties properties) throws SQLException {
        Connection conn = load().connect(url, properties);
        if (conn == null) {
            // Driver.connect answers null for a URL it does not handle
            throw new SQLException(CLASS_NAME + " does not accept the URL " + url
                    + " (expected jdbc:postgresql://host:port/database)", "08001");
        }
        return conn;
    }

    /** properties with the driver named, as every Spark JDBC read of the library passes them. */
    static Properties forSparkRead(Properties properties) {
        properties.setProperty("driver", CLASS_NAME);
        return properties;
    }
}
