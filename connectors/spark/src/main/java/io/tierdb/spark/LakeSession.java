/*
 * LakeSession: checks that the Spark session can load the lake by path.
 * Iceberg's Spark runtime resolves a path through its catalog
 * default_iceberg, which it makes a Hive catalog when the session does not
 * configure one; without Hive on the class path that fails deep inside
 * Spark, so the seam read and the direct write say up front which settings
 * to add.
 */
package io.tierdb.spark;

import java.util.Map;

import org.apache.spark.sql.SparkSession;

import scala.collection.JavaConverters;

final class LakeSession {
    private static final String CATALOG_PREFIX = "spark.sql.catalog.";
    /** The catalog Iceberg's Spark source loads path identifiers through. */
    private static final String PATH_CATALOG = "default_iceberg";

    private LakeSession() {
    }

    static void requireIcebergCatalog(SparkSession spark, String location) {
        Map<String, String> conf = JavaConverters.mapAsJavaMap(spark.conf().getAll());
        // a path is loaded through the catalog default_iceberg, which Iceberg makes a Hive catalog when unset
        if (isIcebergCatalog(conf.get(CATALOG_PREFIX + PATH_CATALOG)) || hiveAvailable()) {
            return;
        }
        throw new IllegalStateException(String.format(
                "the Spark session has no Iceberg catalog named %s, through which the Iceberg runtime loads the lake "
                        + "table at %s by path (without it, it tries a Hive catalog, and Hive is not on the class "
                        + "path). Add it to the session, e.g.%n"
                        + "  .config(\"spark.sql.catalog.default_iceberg\", \"org.apache.iceberg.spark.SparkCatalog\")%n"
                        + "  .config(\"spark.sql.catalog.default_iceberg.type\", \"hadoop\")%n"
                        + "  .config(\"spark.sql.catalog.default_iceberg.warehouse\", \"<the lake's warehouse>\")%n"
                        + "or name the lake table through a configured catalog with SeamOptions.lakeTable(...).",
                PATH_CATALOG, location));
    }

    private static boolean hiveAvailable() {
        try {
            Class.forName("org.apache.hadoop.hive.conf.HiveConf", false, LakeSession.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    private static boolean isIcebergCatalog(String className) {
        return className != null && "org.apache.iceberg.spark.SparkCatalog".equals(className)
                || "org.apache.iceberg.spark.SparkSessionCatalog".equals(className);
    }
}
